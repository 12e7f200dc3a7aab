"""The HNSW index of an embedded collection: its state, and a build that never stops the app (rag.store.edge.index).

A Qdrant server indexes its collections itself (its optimizers, in the background); there index_state is None and
build_index says so. The embedded engine searches exactly until a collection reaches the size the settings give
(RAG_INDEX_MIN_POINTS, default rag.store.edge.index.MIN_POINTS); then `rag index`, `rag ingest` and the app's
job queue build the index. Its recall check searches with sentences of the collection embedded as queries by the
collection's embedder (check_sentences): stored chunks as queries overstate the recall real questions get.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable

import numpy as np

from rag.embeddings import Embedder
from rag.errors import StoreError, StoreUnavailableError
from rag.settings import load
from rag.store.contract import IndexReads
from rag.store.edge import EdgeClient
from rag.store.edge import index as edge_index
from rag.store.edge.index import IndexBuildError, IndexCancelled, IndexState

QUESTIONS = 200  # sentences the recall check embeds as questions
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


class IndexCancelledError(IndexCancelled, StoreError):
    """An index build was cancelled; the collection is as it was."""


class IndexMixin:
    """Store methods for the embedded engine's HNSW index."""

    def index_state(self, collection: str) -> IndexState | None:
        """Return a collection's index state; None on a server (which indexes by itself) or the old local engine."""
        if not isinstance(self.client, IndexReads):  # Qdrant Edge's index, here or read through its holder
            return None
        self._layout(collection)  # CollectionNotFoundError
        with self._guard(f"reading the index of '{collection}'"):
            state = edge_index.state(self.client, collection, min_points())
        return dataclasses.replace(state, children=self.children(collection))

    def index_due(self, collection: str) -> bool:
        """Return whether collection is large enough and not (or no longer fully) indexed."""
        state = self.index_state(collection)
        return state is not None and state.due

    def build_index(self, collection: str, cancel: Callable[[], bool] | None = None,
                    embedder: Embedder | None = None, questions: np.ndarray | None = None) -> IndexState:
        """Build a collection's HNSW index in a child process, check its recall and put it in place (blocks for
        the build: minutes at 100,000 chunks; searches and other sessions go on meanwhile).

        The recall check searches with questions (query vectors), else with QUESTIONS sentences of the collection
        embedded as queries by embedder, else (neither given) with stored chunk vectors, which overstate it.
        """
        if not isinstance(self.client, EdgeClient):
            if refusal := getattr(self.client, "refusal", None):  # a folder another process holds
                raise StoreUnavailableError(refusal)
            raise StoreError(f"Qdrant at {self.location} builds its HNSW index itself; there is nothing to build here.")
        layout = self._layout(collection)
        if questions is None and embedder is not None:
            texts = self.check_sentences(collection)
            questions = np.asarray(embedder.embed_query(texts), dtype=np.float32) if texts else None
        asked = None if questions is None else (layout.vector or None, questions)
        try:
            with self._guard(f"indexing '{collection}'", hold=False):
                return edge_index.build_index(self.client, collection, cancel, min_points(), asked)
        except IndexCancelled as e:
            raise IndexCancelledError(str(e)) from e
        except IndexBuildError as e:
            raise StoreError(str(e)) from e


    def check_sentences(self, collection: str, count: int = QUESTIONS) -> list[str]:
        """Return up to count sentences of the collection's chunks, one from each of count chunks picked at random
        (seeded): what the recall check embeds as questions (a question is usually a sentence's paraphrase)."""
        ids = self.point_ids(collection)
        picked = random.Random(7).sample(ids, min(len(ids), count * 2))
        with self._guard(f"reading chunks of '{collection}'"):
            records = self.client.retrieve(collection, picked, with_payload=["content"], with_vectors=False)
        sentences = []
        for record in records:
            sentence = _sentence(str((record.payload or {}).get("content", "")))
            if sentence:
                sentences.append(sentence)
        return sentences[:count]


def _sentence(text: str) -> str | None:
    """Return the first sentence of text with 4 words or more, cut at 30 words; None when there is none."""
    for piece in _SENTENCE_END.split(text):
        words = piece.split()
        if len(words) >= 4:
            return " ".join(words[:30])
    return None


def min_points() -> int:
    """Return the size from which collections are indexed (RAG_INDEX_MIN_POINTS)."""
    return load().index_min_points or edge_index.MIN_POINTS
