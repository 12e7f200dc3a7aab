"""The HNSW index build of a collection as a job of the app's process (rag.store.indexing; the build itself runs in
a child process): queued after an ingest that made the collection large enough, or from the Library."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from rag.embeddings import Embedder
from rag.store import IndexState, Store
from rag.words import counted
from ui.jobs.base import QueuedJob

# an HNSW build on 2 cores (docs/benchmarks.md, "built in 64.4 s" at 100,000 points): the estimate
INDEX_SECONDS_PER_POINT = 0.001


@dataclass
class IndexJob(QueuedJob):
    """The HNSW index of a collection of the embedded engine, built in a child process (rag.store.indexing): queued
    after an ingest that made the collection large enough, or from the Library; Cancel stops the child."""

    collection: str
    store: Store
    location: str
    points: int = 0  # chunks when queued: the time estimate
    embedder: Embedder | None = None  # embeds the recall check's questions (None: stored chunks as queries)
    result: IndexState | None = None

    kind: ClassVar[str] = "index"
    doing: ClassVar[str] = "Building"
    cancelled_note: ClassVar[str] = ". Searches stay as they were."

    @property
    def fraction(self) -> float:
        """Return the share of the estimated build time gone (the engine reports no progress), at most 0.95."""
        if self.started is None:
            return 0.0
        return min((time.time() - self.started) / max(INDEX_SECONDS_PER_POINT * self.points, 5.0), 0.95)

    @property
    def text(self) -> str:
        if self.status != "running" or self.started is None:
            return "Waiting for the jobs before it"
        return (f"{time.time() - self.started:.0f} s of about {INDEX_SECONDS_PER_POINT * self.points:.0f} s; searches "
                "go on meanwhile (exact until the index is in place)")

    @property
    def what(self) -> str:
        return f"the HNSW index of '{self.collection}' ({counted(self.points, 'chunk')})"

    def done_words(self, what: str) -> str:
        return f"Done: {self.result.summary()}" if self.result else f"Done: {what}"

    def work(self) -> None:  # a cancel ends the child and raises IndexCancelledError: a Cancelled
        self.result = self.store.build_index(self.collection, cancel=lambda: self.cancel_requested,
                                             embedder=self.embedder)
