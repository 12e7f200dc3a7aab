"""The queue and its one worker thread: ingest jobs (IngestJob, run by the queue itself: files, progress, results)
and every other job (JobQueue.add: a QueuedJob that runs itself), one after another, so two writers never meet."""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TypeVar

from rag import pipeline
from rag.chunking import ChunkSettings
from rag.documents import SourceFile
from rag.embeddings import Embedder, time_left
from rag.errors import RagError
from rag.ingested import IngestOptions, Watch
from rag.store import DocumentArchive, Store
from rag.words import counted
from ui.jobs.base import failure
from ui.jobs.index import IndexJob

KEPT = 20  # finished jobs listed per process
T = TypeVar("T")


@dataclass
class IngestJob:
    id: int
    files: list[SourceFile]
    collection: str
    location: str  # the store's folder or URL: a page lists the jobs of its own store
    settings: ChunkSettings
    embedder: Embedder
    store: Store
    archive: DocumentArchive | None = None
    keep_versions: bool = False
    language: str | None = None
    chunk_headers: bool | None = None  # a new collection's (rag.chunking.headers); None: the default
    child_size: int | None = None  # a new collection's (rag.chunking.children); None: the default
    status: str = "queued"
    progress: dict[int, pipeline.Progress] = field(default_factory=dict)  # file index -> its last progress
    results: list[pipeline.IngestResult] = field(default_factory=list)
    error: str | None = None  # why the whole job failed (the embedder could not start, ...)
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    cancel_requested: bool = False
    document_ids: list[str] = field(default_factory=list)  # a re-ingest of stored documents (files is empty)
    titles: list[str] = field(default_factory=list)  # ... their titles
    source: str | None = None  # ... the collection they are read from (default: collection)

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.files] or self.titles

    def summary(self, later: Collection[str] = ()) -> str:
        """Return the job in one line: what it did to which collection, or what it is doing; later: the names of
        files a newer job stored into the same collection (they count as stored, said as such)."""
        count = len(self.names)
        if self.status == "queued":
            return f"Waiting: {counted(count, 'file')} for '{self.collection}'"
        if self.status == "running" and self.cancel_requested:
            return f"Cancelling … (after the batch under way; what is stored in '{self.collection}' stays)"
        if self.status == "running":
            done = sum(p.stage in ("done", "error", "cancelled") for p in self.progress.values())
            latest = max(self.progress.values(), key=lambda p: p.file_index, default=None)
            left = time_left(latest.seconds_left) if latest else ""
            return (f"Ingesting into '{self.collection}': {done} of {counted(count, 'file')} done"
                    + (f", {left}" if left else ""))
        again = self.stored_later(later)
        stored = sum(r.ok for r in self.results) + len(again)
        took = f" in {self.finished - self.started:.0f} s" if self.finished and self.started else ""
        if self.status == "failed":
            return f"Failed: {self.error}"
        if self.status == "done" and self.results and not stored:
            return f"None of {counted(count, 'file')} stored in '{self.collection}'{took}: {self._why_not()}"
        word = "Cancelled" if self.status == "cancelled" else "Done"
        how = ("with its password" if len(again) == 1 else "with their passwords") if all(
            r.needs_password for r in again) else "by a newer ingest"
        after = f" ({len(again)} of them later, {how})" if again else ""
        return f"{word}: {stored} of {counted(count, 'file')} stored in '{self.collection}'{took}{after}"

    def stored_later(self, later: Collection[str] = ()) -> list[pipeline.IngestResult]:
        """Return the results of the files this job did not store that a newer job stored into its collection
        (later: the names of those, e.g. an encrypted PDF opened with its password)."""
        return [r for r in self.results if not r.ok and r.filename in later]

    def _why_not(self) -> str:
        """Return why files were not stored, counted by reason, e.g. "2 failed (see below)"."""
        reasons = {"failed": "failed", "needs password": "need a password",
                   "skipped": "skipped (the same content is already stored under another name)",
                   "cancelled": "cancelled"}
        counts: dict[str, int] = {}
        for result in self.results:
            if not result.ok:
                counts[result.status] = counts.get(result.status, 0) + 1
        said = {status: "needs a password" if status == "needs password" and n == 1 else reasons.get(status, status)
                for status, n in counts.items()}
        return ", ".join(f"{n} {said[status]}" for status, n in counts.items()) + " (see below)"

    @property
    def mark(self) -> str:
        """Return how the job ended for its mark: "done" (every file stored or unchanged), "warning" (some were not),
        "error" (none was; or the job failed), "cancelled"; or its status while it waits or runs."""
        return self.mark_after(())

    def mark_after(self, later: Collection[str]) -> str:
        """Return the mark with the files a newer job stored into the collection (later: their names) as stored."""
        if self.status != "done":
            return "error" if self.status == "failed" else self.status
        stored = sum(r.ok for r in self.results) + len(self.stored_later(later))
        if stored == len(self.results):
            return "done"
        return "warning" if stored or all(r.skipped for r in self.results) else "error"


class JobQueue:
    def __init__(self, on_change: Callable[[], None] | None = None):
        self._jobs: list = []  # IngestJobs and the jobs of add()
        self._lock = threading.Lock()
        self._waiting: queue.Queue = queue.Queue()
        self._ids = itertools.count(1)
        self._idle = threading.Event()
        self._idle.set()
        self._stopping = False  # the process ends (stop): a job queued from now on is cancelled before it runs
        self.on_change = on_change
        threading.Thread(target=self._work, name="ingest-jobs", daemon=True).start()

    def submit(self, files: list[SourceFile], collection: str, settings: ChunkSettings, embedder: Embedder,
               store: Store, location: str, **options) -> IngestJob:
        job = IngestJob(next(self._ids), list(files), collection, location, settings, embedder, store, **options)
        return self._enqueue(job)

    def submit_reingest(self, document_ids: list[str], titles: list[str], collection: str, settings: ChunkSettings,
                        embedder: Embedder, store: Store, location: str, archive: DocumentArchive,
                        source: str | None = None) -> IngestJob:
        """Queue stored documents to be chunked again with settings and written to collection."""
        job = IngestJob(next(self._ids), [], collection, location, settings, embedder, store, archive=archive,
                        document_ids=list(document_ids), titles=list(titles), source=source)
        return self._enqueue(job)

    def add(self, job: T) -> T:
        """Queue another kind of job: a QueuedJob with a location and a run() that does the work and sets how it
        ended."""
        job.id = next(self._ids)
        return self._enqueue(job)

    def _enqueue(self, job: T) -> T:
        with self._lock:  # listed, not idle and waiting in one step: wait_idle never sees a job half-queued
            job.cancel_requested = job.cancel_requested or self._stopping
            self._jobs.append(job)
            self._idle.clear()
            self._waiting.put(job)
        return job

    def jobs(self, location: str | None = None, kind: type | None = IngestJob) -> list:
        """Return the jobs of one kind (None: every kind) and store location (None: every one), newest first."""
        with self._lock:
            return [j for j in reversed(self._jobs) if (location is None or j.location == location)
                    and (kind is None or isinstance(j, kind))]

    def cancel(self, job_id: int) -> None:
        for job in self.jobs(kind=None):
            if job.id == job_id and job.active:
                job.cancel_requested = True

    def stop(self, grace: float) -> list:
        """Cancel every job, queued, running or queued later (the process ends), and wait up to grace seconds for
        the worker to be idle (a running job stops as Cancel stops it, each file stored whole or not at all); return
        the jobs cancelled (their summary() says how each ended)."""
        with self._lock:
            self._stopping = True
            cancelled = [job for job in self._jobs if job.active]
            for job in cancelled:
                job.cancel_requested = True
        self.wait_idle(grace)
        return cancelled

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Return True once no job is queued or running (False when timeout passed first)."""
        return self._idle.wait(timeout)

    def _work(self) -> None:
        while True:
            job = self._waiting.get()
            if job.cancel_requested:
                job.status, job.finished = "cancelled", time.time()
            elif isinstance(job, IngestJob):
                self._run(job)
            else:
                self._run_other(job)
            with self._lock:
                finished = [j for j in self._jobs if not j.active]
                for old in finished[:-KEPT]:
                    self._jobs.remove(old)
                if not any(j.active for j in self._jobs):
                    self._idle.set()

    def _run(self, job: IngestJob) -> None:
        job.status, job.started = "running", time.time()

        def on_progress(progress: pipeline.Progress) -> None:
            job.progress[progress.file_index] = progress

        try:
            if job.document_ids:
                job.results = pipeline.reingest(job.document_ids, job.collection, job.settings, job.embedder,
                                                store=job.store, archive=job.archive, source=job.source,
                                                watch=Watch(progress=on_progress, cancel=lambda: job.cancel_requested))
            else:
                job.results = pipeline.ingest(job.files, job.collection, job.settings, job.embedder, store=job.store,
                                              archive=job.archive,
                                              options=IngestOptions(job.language, job.chunk_headers, job.child_size,
                                                                    job.keep_versions),
                                              watch=Watch(progress=on_progress, cancel=lambda: job.cancel_requested))
            job.status = "cancelled" if job.cancel_requested else "done"
        except Exception as error:
            job.status, job.error = "failed", failure(error, "ingest", job.id)
        finally:
            job.finished = time.time()
            for index, (file, result) in enumerate(zip(job.files, job.results, strict=False)):
                job.files[index] = _kept(file, result)
            if self.on_change is not None:
                self.on_change()
            if job.status != "failed" and any(r.ok for r in job.results):
                self.index_when_due(job.store, job.collection, job.location, job.embedder)

    def index_when_due(self, store: Store, collection: str, location: str, embedder: Embedder | None = None,
                       after_failure: bool = True) -> IndexJob | None:
        """Queue collection's index build when it is due (rag.store.edge.index) and none is queued or running; not
        when the last build of it failed unless after_failure (after a write, which may have changed why)."""
        with self._lock:
            builds = [j for j in self._jobs if isinstance(j, IndexJob) and j.collection == collection
                      and j.location == location]
        if any(j.active for j in builds) or (builds and builds[-1].status == "failed" and not after_failure):
            return None
        try:
            state = store.index_state(collection)
        except RagError:
            return None  # the collection went away, the store is closed: nothing to index
        if state is None or not state.due:
            return None
        return self.add(IndexJob(collection, store, location, state.points, embedder))

    def _run_other(self, job) -> None:
        try:
            job.run()
        except Exception as error:  # a bug in the job's own handling: the worker goes on
            job.status, job.error = "failed", failure(error, "a", job.id)
            job.finished = time.time()
        finally:
            if self.on_change is not None:
                self.on_change()
        if not isinstance(job, IndexJob) and isinstance(getattr(job, "collection", None), str):
            self.index_when_due(job.store, job.collection, job.location,  # e.g. "Use this configuration" wrote
                                getattr(job, "embedder", None))


def _kept(file: SourceFile, result: pipeline.IngestResult) -> SourceFile:
    """Return what a finished job keeps of a file: its bytes only when a password retry needs them."""
    if not result.needs_password:
        return SourceFile(file.name, size=file.size)
    try:
        return SourceFile(file.name, file.read())
    except RagError:  # a sample file that went away: nothing to retry with
        return SourceFile(file.name)


_QUEUE: JobQueue | None = None
_QUEUE_LOCK = threading.Lock()


def jobs_queue(on_change: Callable[[], None] | None = None) -> JobQueue:
    """Return the process's job queue (made on first use); on_change, when given, runs after every job from now on."""
    global _QUEUE
    with _QUEUE_LOCK:
        if _QUEUE is None:
            _QUEUE = JobQueue(on_change)
        elif on_change is not None:
            _QUEUE.on_change = on_change
        return _QUEUE


def stop_jobs(grace: float) -> list:
    """Stop the process's job queue if one was made (JobQueue.stop); return the jobs it cancelled."""
    with _QUEUE_LOCK:
        made = _QUEUE
    return [] if made is None else made.stop(grace)
