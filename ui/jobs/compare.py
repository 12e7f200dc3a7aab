"""A query set compared on two sides as a job of the app's process (ui.jobs' queue), like a sweep
(ui.jobs.sweep): a click, a reload or a second tab never stops it, and every tab of the store sees it.

Most of its time is embedding the queries (cold, a few hundred questions on the local model take a minute), so
each side's embedder is wrapped in rag.embeddings.pace.Paced: it embeds in slices, which give the progress and
the time left, and Cancel stops it between two slices. The embedding cache answers the queries it already
holds; searching and scoring both sides comes after, in seconds.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import ClassVar

from rag.embeddings import Embedder, EmbeddingCache, Pace, Paced, time_left
from rag.evaluation import EvaluationComparison, Query, Side, compare_query_set
from rag.store import Store
from ui.jobs.base import QueuedJob
from ui.jobs.worker import JobQueue
from ui.render import counted

RESULTS_KEPT = 3  # finished comparisons per store that keep their result


@dataclass
class CompareJob(QueuedJob):
    sides: tuple[Side, Side]
    queries: list[Query]
    query_set: str  # its file name
    ks: list[int]
    embedders: list[Embedder | None]  # per side; None for keyword search, which embeds nothing
    store: Store
    location: str
    cache: EmbeddingCache
    result: EvaluationComparison | None = None
    seconds: float = 0.0
    embedded: int = 0  # query texts embedded so far (the cache's misses)
    pace: Pace | None = None
    _clock: float | None = field(default=None, repr=False)  # perf_counter when the work began: seconds

    kind: ClassVar[str] = "compare"
    doing: ClassVar[str] = "Comparing"

    @property
    def fraction(self) -> float:
        """Return the share of the queries' characters embedded so far (the searches after are quick)."""
        if self.pace is None or not self.pace_chars:
            return 0.0
        return 1.0 - self.pace.query_left / self.pace_chars

    @property
    def pace_chars(self) -> int:
        models = {e.model_id for e in self.embedders if e is not None}
        return len(models) * sum(len(t) for t in {q.text for q in self.queries})

    @property
    def text(self) -> str:
        """Return the line under the progress bar: what it does and the time left."""
        if self.status == "queued":
            return "Waiting for the jobs before it"
        if self.status != "running" or self.pace is None:
            return ""
        if not self.pace.query_left:
            return "Searching both sides…"
        seconds = self.pace.seconds_left()
        if seconds is None:
            return "Embedding the queries (those the cache lacks), then searching both sides…"
        return f"Embedding the queries: {self.embedded} embedded · {time_left(seconds)}"

    @property
    def what(self) -> str:
        return (f"{counted(len(self.queries), 'query', 'queries')} of {self.query_set} on "
                f"'{self.sides[0].collection}' and '{self.sides[1].collection}'")

    def done_words(self, what: str) -> str:
        return f"Done: {what} in {self.seconds:.1f} s"

    def work(self) -> None:
        """Embed the queries (in slices, cancellable: Cancelled) and evaluate both sides."""
        self.pace = Pace([], [], [], query_chars=self.pace_chars)
        self._clock = time.perf_counter()
        embedders = [Paced(e, self.pace, None, _Cancel(self), self._embedded) if e is not None else None
                     for e in self.embedders]
        self.result = compare_query_set(self.queries, self.sides, self.ks, store=self.store, embedders=embedders,
                                        cache=self.cache)

    def ended(self) -> None:
        if self._clock is not None:
            self.seconds = time.perf_counter() - self._clock

    def _embedded(self, done: int) -> None:  # Paced counts per side: the last side's count is the one shown
        self.embedded = done


class _Cancel(threading.Event):
    """The event Paced checks between slices: set once Cancel was pressed on the job."""

    def __init__(self, job: CompareJob):
        super().__init__()
        self.job = job

    def is_set(self) -> bool:
        return self.job.cancel_requested


def submit(queue: JobQueue, job: CompareJob) -> CompareJob:
    """Queue a comparison; the results of older ones of its store beyond RESULTS_KEPT are let go."""
    queue.add(job)
    for old in [j for j in comparisons(queue, job.location) if not j.active and j.result is not None][RESULTS_KEPT:]:
        old.result = None
    return job


def comparisons(queue: JobQueue, location: str) -> list[CompareJob]:
    """Return the query-set comparisons of one store, newest first."""
    return queue.jobs(location, CompareJob)
