"""The Embedder protocol, the prompts a model wants for queries and documents, and the shared batching helper.

Retrieval models are trained asymmetrically: a query and a passage are embedded with different prompts
(e5: "query: " / "passage: "; mxbai-embed-large: "Represent this sentence for searching relevant
passages: " for queries only; nomic-embed-text: "search_query: " / "search_document: "). An embedder
applies its model's prompts in `embed_query` and `embed_documents`; a collection records them, so a
search always uses the prompts its documents were embedded with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

CUT_OFF, WINDOWED = "cut off", "windowed"  # what an embedder does with a text over its input limit


def overflow_flag(embedder: object) -> str:
    """Return what happens to a chunk over the embedder's input limit: "cut off", or "windowed" (e5: averaged)."""
    return WINDOWED if getattr(embedder, "windowed", False) else CUT_OFF


def reading(embedder: object, model_tokens: int) -> str:
    """Return how the embedder reads a text of model_tokens: "whole", or overflow_flag's word when over its limit."""
    limit = getattr(embedder, "max_input_tokens", None)
    return overflow_flag(embedder) if limit and model_tokens > limit else "whole"


@runtime_checkable
class Embedder(Protocol):
    """What every embedder offers; the providers also set `tokens_exact` and `token_note` (not required).

    On Python 3.11, isinstance(x, Embedder) reads every member with hasattr, which runs the properties:
    an HTTP embedder may probe its server for the dimension, a local one loads its model.
    """

    model_id: str  # stable id stored with a collection, e.g. "local:multilingual-e5-small", "ollama:bge-m3"
    query_prompt: str  # put before each query ("" for none)
    document_prompt: str  # put before each document chunk ("" for none)

    @property
    def dimension(self) -> int: ...

    @property
    def max_input_tokens(self) -> int: ...  # in the model's own tokenizer

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...  # float32, shape (len(texts), dimension)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray: ...  # float32, shape (len(texts), dimension)

    def count_tokens(self, text: str) -> int: ...  # a document chunk's length in the model's own tokenizer


@dataclass(frozen=True)
class Prompts:
    query: str = ""
    document: str = ""


E5 = Prompts("query: ", "passage: ")
MXBAI = Prompts("Represent this sentence for searching relevant passages: ", "")
NOMIC = Prompts("search_query: ", "search_document: ")
NONE = Prompts()
# a model's name (lower case) containing the key -> its prompts; the first key found wins
KNOWN_PROMPTS: tuple[tuple[str, Prompts], ...] = (
    ("mxbai-embed", MXBAI),
    ("snowflake-arctic-embed", MXBAI),
    ("nomic-embed", NOMIC),
    ("e5", E5),
)


def known_prompts(model: str) -> Prompts:
    """Return the prompts a model is known to want, by its name ("" for models that want none)."""
    name = model.lower()
    return next((prompts for key, prompts in KNOWN_PROMPTS if key in name), NONE)


class PromptedEmbedder:
    """Base of the providers that put prompts before the text themselves; subclasses give `_embed(texts)`."""

    query_prompt = ""
    document_prompt = ""

    def set_prompts(self, defaults: Prompts, query_prompt: str | None, document_prompt: str | None) -> None:
        """Use the given prompts, each defaulting to the model's own (None means: the default)."""
        self.query_prompt = defaults.query if query_prompt is None else query_prompt
        self.document_prompt = defaults.document if document_prompt is None else document_prompt

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return one float32 row per document text, each embedded after the document prompt."""
        return self._embed([self.document_prompt + t for t in texts] if self.document_prompt else list(texts))

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Return one float32 row per query, each embedded after the query prompt."""
        return self._embed([self.query_prompt + t for t in texts] if self.query_prompt else list(texts))


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
