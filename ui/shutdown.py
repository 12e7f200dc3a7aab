"""Stopping the app (Ctrl-C, SIGTERM) within about a second, every job left consistent.

Streamlit stops its server on the signal; then Python joins every thread that is not a daemon before it exits.
That join took 7-16 s: the file watcher (server.fileWatcherType "poll", .streamlit/config.toml) keeps one poll
per watched module queued in a thread pool, each poll a 0.2 s sleep, and Python's exit waits for the pool's
workers to run every queued poll (a few hundred modules, four workers). And the jobs' worker is a daemon thread:
a running ingest was frozen mid-batch while rag.store.open's atexit closed the store under it.

register() hooks the exit before those joins (threading's at-exit hooks, where concurrent.futures puts its own
join): every job is cancelled and the worker given up to GRACE seconds to stop (an ingest stops after the
embedding batch under way, about a second, as Cancel does: every file stored whole or not at all; an index build
stops and keeps the old index), the terminal told how each ended, then the watcher's queued polls are dropped.

In the app's own server (`streamlit run`, not a test's AppTest), the last step closes every store and ends the
process at once: Python's own finalization took 2-3 s more with the real model loaded (freeing the int8 session and
the engine's memory, garbage collection), work the system does instantly when the process ends.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading

from streamlit.watcher.polling_path_watcher import PollingPathWatcher

from rag.store import close_stores
from ui.jobs.worker import stop_jobs

GRACE = 10.0  # seconds a running job gets to stop at a batch boundary; an ingest needs about one
_REGISTERED: list[bool] = []


def register() -> None:
    """Have the process's exit cancel the jobs and drop the watcher's polls first (once per process)."""
    if not _REGISTERED:
        _REGISTERED.append(True)
        threading._register_atexit(_stop)  # noqa: SLF001 (run before the joins, as concurrent.futures' own hook)
        if "streamlit.web.bootstrap" in sys.modules:  # `streamlit run`'s server, never AppTest in a test process
            atexit.register(_exit_now)  # (it would end pytest with exit code 0); registered last, so run first


def _stop() -> None:
    for job in stop_jobs(GRACE):
        print(f"RAG Lab stops. {job.summary()}", file=sys.stderr, flush=True)
    PollingPathWatcher._executor.shutdown(wait=False, cancel_futures=True)  # noqa: SLF001 (its only handle)


def _exit_now() -> None:
    """Close the stores and end the process without Python's finalization (the jobs are stopped by now)."""
    close_stores()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
