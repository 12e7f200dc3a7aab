"""Jobs owned by the app's process, not by a browser tab: they run on after a reload, and every tab sees them.

One worker thread runs the jobs one after another, so two writers never meet in a store; other long work that
writes or reads a store for long (a sweep, ui.jobs.sweep; a query-set comparison, ui.jobs.compare) waits in
the same queue as a job that runs itself (add); so does the HNSW index build of a collection that an ingest made
large enough (IndexJob: the build itself runs in a child process). A job keeps its
files' bytes until it has run, its progress, and its results (what was stored, skipped or failed, and why).
Cancelling stops a job between files and embedding batches, never inside the store stage: every file is
stored whole or not at all.

base     QueuedJob: status, summary() and run() of every queued job; failure (what a failed job says)
worker   JobQueue, its worker thread and jobs_queue(); IngestJob (files into a collection, run by the queue)
index    IndexJob: a collection's HNSW index, built in a child process
sweep    SweepJob: a sweep of chunkings x modes (the Evaluate page)
compare  CompareJob: one query set on two sides (the Compare page)
apply    ApplyJob: "Use this configuration" (a sweep row re-chunked into a collection)
"""

from __future__ import annotations

from ui.jobs.base import STATUSES, QueuedJob, failure
from ui.jobs.index import INDEX_SECONDS_PER_POINT, IndexJob
from ui.jobs.worker import KEPT, IngestJob, JobQueue, jobs_queue

__all__ = ["INDEX_SECONDS_PER_POINT", "KEPT", "STATUSES", "IndexJob", "IngestJob", "JobQueue", "QueuedJob", "failure",
           "jobs_queue"]
