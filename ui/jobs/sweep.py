"""Sweeps as jobs of the app's process (ui.jobs' queue), not of a browser tab's script run: a click, a reload or
a second tab never stops one, and every tab of the same store sees its progress and then its result.

A sweep writes one collection per configuration, so it waits in the queue of ingest jobs: one writer at a time.
It reads its documents when it starts (uploads are parsed there, not in the script run that queued it), keeps
its last progress event (with the time left, rag.embeddings.pace) and, when it ends, its SweepResult (kept as a
run, rag.runs: its id, or the warning why it was not kept) or the error in words. Cancel stops it at the next
progress event: between embedding slices, before indexing or searching a configuration; the collections it
finished stay, and the next run reuses them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from rag.documents import Document
from rag.embeddings import Embedder, EmbeddingCache
from rag.errors import Cancelled
from rag.evaluation import Query, SearchMode, Sweep, SweepConfig, SweepProgress, SweepResult, run_sweep, trace_sweep
from rag.rerank import DEFAULT_DEPTH, Reranker
from rag.runs import keep_sweep
from rag.store import Store
from ui.jobs.base import QueuedJob
from ui.jobs.worker import JobQueue
from ui.render import counted

CANCELLING = "Cancelling … (after the embedding slice under way, about a second)"
RESULTS_KEPT = 3  # finished sweeps per store that keep their SweepResult (each holds every query's hits)


class SweepCancelled(Cancelled):
    """Raised in the sweep's progress callback once Cancel was pressed: run_sweep stops and cleans up."""


@dataclass
class SweepJob(QueuedJob):
    documents: Callable[[], list[Document]] | None  # what reads the documents (dropped once the sweep ran)
    queries: list[Query]
    configs: list[SweepConfig]
    embedder: Embedder
    store: Store
    location: str  # the store's folder or URL: a page lists the sweeps of its own store
    cache: EmbeddingCache
    ks: list[int]
    modes: list[SearchMode]
    skipped: list[str] = field(default_factory=list)
    reranker: Reranker | None = None  # for the modes with rerank
    rerank_depth: int = DEFAULT_DEPTH
    query_set: str = ""  # the query set's file name, kept with the run
    collection: str | None = None  # the collection the documents are read from: searched as stored at its settings
    inputs: tuple = ()  # the page's (query set, documents) it ran on, and them in words (ui.parts.evaluate)
    params: dict = field(default_factory=dict)  # the page's inputs as URL parameters: kept with the run
    run_id: int | None = None  # the kept run (rag.runs) of the result
    run_warning: str | None = None  # why the result was not kept as a run
    step: str = "Waiting for the jobs before it"  # what it does now, when no progress event says it
    progress: SweepProgress | None = None  # the last event: stage, share done, time left
    result: SweepResult | None = None
    configs_done: int = 0

    kind: ClassVar[str] = "sweep"
    cancelled_note: ClassVar[str] = (". The collections of the configurations it finished stay; the next run "
                                     "reuses them.")

    @property
    def fraction(self) -> float:
        """Return the share of the sweep done, 0.0-1.0 (it only grows)."""
        return self.progress.fraction if self.progress else 0.0

    @property
    def text(self) -> str:
        """Return the line under the progress bar: the stage and the time left."""
        if self.status == "running" and self.cancel_requested:
            return CANCELLING
        if self.progress is not None and self.status == "running":
            return self.progress.status or self.step
        return self.step

    @property
    def what(self) -> str:
        return (f"sweep of {counted(len(self.configs), 'configuration')} × {counted(len(self.modes), 'mode')}, "
                f"{counted(len(self.queries), 'query', 'queries')}")

    def running_words(self, what: str) -> str:
        doing = "Cancelling" if self.cancel_requested else "Running"
        return f"{doing}: {what}, {self.configs_done} of {len(self.configs)} done"

    def done_words(self, what: str) -> str:
        took = f" in {self.finished - self.started:.0f} s" if self.finished and self.started else ""
        return f"Done: {what}{took}"

    def work(self) -> None:
        """Read the documents, run the sweep, trace its misses and keep it as a run (a Cancel raises Cancelled)."""
        self.step = "Reading the documents…"
        documents = self.documents() if self.documents else []
        self._check()
        self.step = "Embedding the queries (the first time, this loads the model)…"
        sweep = Sweep(documents, self.queries, self.configs, ks=self.ks, modes=self.modes,
                      rerank_depth=self.rerank_depth, collection=self.collection, skipped=self.skipped)
        self.result = run_sweep(sweep, self.embedder, store=self.store, cache=self.cache, progress=self._progress,
                                reranker=self.reranker, cancel=lambda: self.cancel_requested)
        self.step = "Tracing each miss through the stages…"
        trace_sweep(self.result, store=self.store, embedder=self.embedder, cache=self.cache,
                    reranker=self.reranker, rerank_depth=self.rerank_depth)
        kept = {"key": list(self.inputs[0]), "words": self.inputs[1], "params": self.params} if self.inputs else None
        self.run_id, self.run_warning = keep_sweep(self.store, self.result, self.queries, embedder=self.embedder,
                                                   query_set=self.query_set, inputs=kept)  # shown after a restart

    def ended(self) -> None:
        self.documents = None  # uploaded files' bytes are not kept

    def _progress(self, event: SweepProgress) -> None:
        self.progress = event
        self.configs_done += event.stage == "done"
        self._check()

    def _check(self) -> None:
        if self.cancel_requested:
            raise SweepCancelled()


def submit(queue: JobQueue, job: SweepJob) -> SweepJob:
    """Queue a sweep; the results of older sweeps of its store beyond RESULTS_KEPT are let go."""
    queue.add(job)
    finished = [j for j in sweeps(queue, job.location) if not j.active and j.result is not None]
    for old in finished[RESULTS_KEPT:]:
        old.result = None
    return job


def sweeps(queue: JobQueue, location: str) -> list[SweepJob]:
    """Return the sweeps of one store, newest first."""
    return queue.jobs(location, SweepJob)
