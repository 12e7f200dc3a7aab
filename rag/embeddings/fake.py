"""A small deterministic embedder for fast tests and demos without a model ("fake", "fake:<dim>").

Each lower-cased word (`\\w+`, so umlauts and ß stay letters) and each character trigram of a word (with
a space on both sides, so "vertrag" and "vertrags" share most of them) is hashed with BLAKE2b into one of
`dim` buckets with a sign; the sum is L2-normalised. Identical texts give identical vectors in every
process, texts sharing words score a higher cosine than unrelated ones. A text without any word gives a
fixed unit vector (the first axis), never a zero vector that a cosine cannot handle.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from rag.embeddings.base import NONE, PromptedEmbedder
from rag.errors import UnknownEmbedderError

DEFAULT_DIMENSION = 64
MAX_INPUT_TOKENS = 1_000_000
_WORD = re.compile(r"\w+")
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5


MAX_DIMENSION = 65536  # the largest vector Qdrant stores


@lru_cache(maxsize=1 << 16)
def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    """Return the bucket and sign (+1.0 or -1.0) of a feature: stable across processes, unlike hash()."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")
    return digest % dimension, 1.0 if (digest >> 63) & 1 else -1.0


def words(text: str) -> list[str]:
    """Return the lower-cased words of text (letters with umlauts, digits, underscore)."""
    return _WORD.findall(text.lower())


class FakeEmbedder(PromptedEmbedder):
    """Hashes words and trigrams into `dimension` signed buckets; model_id is "fake:<dimension>".

    Prompts (none by default) are put before the text like any model's, so tests can see them work.
    """

    tokens_exact = True
    max_input_tokens = MAX_INPUT_TOKENS
    token_note = "The fake embedder counts words; it has no input limit to speak of."

    def __init__(self, dimension: int = DEFAULT_DIMENSION, query_prompt: str | None = None,
                 document_prompt: str | None = None):
        if isinstance(dimension, bool) or not isinstance(dimension, int) or not 1 <= dimension <= MAX_DIMENSION:
            raise UnknownEmbedderError(
                f"the fake embedder's dimension must be a whole number from 1 to {MAX_DIMENSION} (Qdrant's limit), "
                f"not {dimension!r}; e.g. fake:384")
        self.dimension = dimension
        self.model_id = f"fake:{dimension}"
        self.set_prompts(NONE, query_prompt, document_prompt)

    def __repr__(self) -> str:
        return f"FakeEmbedder(dimension={self.dimension})"

    def count_tokens(self, text: str) -> int:
        """Return the number of words in text (after the document prompt)."""
        return len(words(self.document_prompt + text))

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text."""
        matrix = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            matrix[row] = self._vector(text)
        return matrix

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, dtype=np.float64)
        for word in words(text):
            index, sign = _bucket(f"w:{word}", self.dimension)
            vector[index] += sign * _WORD_WEIGHT
            padded = f" {word} "
            for start in range(len(padded) - 2):
                index, sign = _bucket(f"t:{padded[start : start + 3]}", self.dimension)
                vector[index] += sign * _TRIGRAM_WEIGHT
        norm = np.linalg.norm(vector)
        if norm == 0:
            vector[0], norm = 1.0, 1.0
        return (vector / norm).astype(np.float32)
