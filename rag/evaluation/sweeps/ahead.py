"""Work of a sweep done one step ahead on a background thread, and progress events brought back to the caller.

Ahead runs job(0, cancel), job(1, cancel), ... in order, each exactly once; with ahead on, job(i + 1) starts on
one background thread as soon as the caller has job(i)'s result, so the caller's next step (indexing and searching
configuration i) overlaps it. The jobs never run two at a time, so a cache they share sees them in the same
order as without ahead. An exception of a job is raised on the caller's thread by result(), as it was; on
leaving the `with` block (normally, by an error, or by a cancel raised in a progress callback) the running
job is told to stop (`cancel`, checked between embedding slices) and awaited, so no thread outlives the sweep.

Relay hands progress events to the sweep's callback on the caller's thread only (a Streamlit page can draw
only there): events of the background job wait in a queue until the caller's next event, or until it waits
for the job. Each event gets the time left (Pace) and the share of the sweep reached so far, so a
progress bar never goes back when two configurations' events interleave.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Generic, TypeVar

from rag.embeddings import Pace, Stop
from rag.evaluation.sweeps.results import SweepProgress

T = TypeVar("T")
POLL_SECONDS = 0.2  # how often a caller waiting for the background job passes on its progress events


class Relay:
    """The sweep's progress callback, called only on the thread that made the Relay."""

    def __init__(self, report: Callable[[SweepProgress], None] | None, pace: Pace):
        self.report, self.pace = report or (lambda event: None), pace
        self.thread = threading.get_ident()
        self.waiting: queue.SimpleQueue[SweepProgress] = queue.SimpleQueue()
        self.floor = 0.0

    def __call__(self, event: SweepProgress) -> None:
        if threading.get_ident() != self.thread:
            self.waiting.put(event)
            return
        self.drain()
        self._deliver(event)

    def drain(self) -> None:
        """Pass on the events the background job sent since the last call, in their order."""
        while True:
            try:
                event = self.waiting.get_nowait()
            except queue.Empty:
                return
            self._deliver(event)

    def wait(self, future: Future[T]) -> T:
        """Return the future's result (raising its exception), passing on its progress events meanwhile."""
        while not wait([future], timeout=POLL_SECONDS).done:
            self.drain()
        self.drain()
        return future.result()

    def _deliver(self, event: SweepProgress) -> None:
        event = replace(event, seconds_left=self.pace.seconds_left(), floor=self.floor)
        self.floor = event.fraction
        self.report(event)


class Ahead(Generic[T]):
    """job(i, cancel) for i in 0 .. count - 1, in order; with ahead, the next one on a background thread. A job
    checks the event cancel now and then and stops (raising) once it is set."""

    def __init__(self, job: Callable[[int, Stop], T], count: int, relay: Relay, ahead: bool,
                 cancel: Stop | None = None):
        self.job, self.count, self.relay = job, count, relay
        self.cancel = cancel or Stop()  # set when the caller leaves (or asked by it): the job stops at its next check
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="sweep-ahead") if ahead else None
        self._next: tuple[int, Future[T]] | None = None

    def __enter__(self) -> Ahead[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel.set()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def result(self, index: int) -> T:
        """Return job(index), having started job(index + 1) in the background (with ahead)."""
        if self._pool is None:
            return self.job(index, self.cancel)
        if self._next is not None and self._next[0] == index:
            future = self._next[1]
        else:
            future = self._pool.submit(self.job, index, self.cancel)
        self._next = None
        value = self.relay.wait(future)
        if index + 1 < self.count:
            self._next = (index + 1, self._pool.submit(self.job, index + 1, self.cancel))
        return value
