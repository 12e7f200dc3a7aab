"""The Embedder protocol and the one shared batching helper."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """What every embedder offers; the providers also set `tokens_exact` and `token_note` (not required).

    On Python 3.11, isinstance(x, Embedder) reads every member with hasattr, which runs the properties:
    an HTTP embedder may probe its server for the dimension, a local one loads its model.
    """

    model_id: str  # stable id stored with a collection, e.g. "local:all-MiniLM-L6-v2", "ollama:mxbai-embed-large"

    @property
    def dimension(self) -> int: ...

    @property
    def max_input_tokens(self) -> int: ...  # in the model's own tokenizer; longer input is truncated

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...  # float32, shape (len(texts), dimension)

    def count_tokens(self, text: str) -> int: ...  # in the model's own tokenizer


def embed_in_batches(
    texts: Sequence[str],
    embed_batch: Callable[[Sequence[str]], np.ndarray],
    batch_size: int,
    dimension: int | None = None,
) -> np.ndarray:
    """Return the float32 matrix of all texts, embedding at most batch_size texts per call."""
    rows = [embed_batch(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
    if not rows:
        return np.zeros((0, dimension or 0), dtype=np.float32)
    return np.asarray(np.vstack(rows), dtype=np.float32)
