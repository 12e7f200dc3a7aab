"""What every queued job is (its id, status, times, Cancel) and does: summary() says it in one line and run() runs
it, catching a Cancel as "cancelled" and anything else as "failed" with failure()'s message; a job says only what
it does (what, work) and its own words where they differ (running_words, done_words, cancelled_note)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import ClassVar

from rag.errors import Cancelled, RagError
from rag.urls import redact_urls

log = logging.getLogger("ui.jobs")
STATUSES = ("queued", "running", "done", "failed", "cancelled")


@dataclass(kw_only=True)
class QueuedJob:
    """What every job of JobQueue.add has (its own fields come first, these are keyword-only): the id the queue
    gives it, how far it got (queued, running, done, failed, cancelled), why it failed, its times and Cancel."""

    kind: ClassVar[str] = "a"  # the word the log uses for a failed job of this kind ("sweep", "index")
    doing: ClassVar[str] = "Running"  # the verb of summary() while it runs
    cancelled_note: ClassVar[str] = ""  # what summary() adds after "Cancelled: <what>", e.g. what stays

    id: int = 0  # given by the queue
    status: str = "queued"
    error: str | None = None
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    cancel_requested: bool = False

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")

    @property
    def what(self) -> str:
        """Return what the job does, in words (the subject of every summary line)."""
        raise NotImplementedError

    def work(self) -> None:
        """Do the job and keep its result; set status only to end it otherwise than "done" (raise Cancelled to stop)."""
        raise NotImplementedError

    def running_words(self, what: str) -> str:
        """Return summary()'s line while the job runs."""
        return f"{self.doing} {what}"

    def done_words(self, what: str) -> str:
        """Return summary()'s line once the job is done."""
        return f"Done: {what}"

    def summary(self) -> str:
        """Return the job in one line: what it does, and how far it is or how it ended."""
        what = self.what
        if self.status == "queued":
            return f"Waiting: {what}"
        if self.status == "running":
            return self.running_words(what)
        if self.status == "failed":
            return f"Failed: {self.error}"
        if self.status == "cancelled":
            return f"Cancelled: {what}{self.cancelled_note}"
        return self.done_words(what)

    def run(self) -> None:
        """Run the job (the queue's worker calls this): status, error and times set however it ends."""
        self.status, self.started = "running", time.time()
        try:
            self.work()
            if self.status == "running":
                self.status = "done"
        except Cancelled:
            self.status = "cancelled"
        except Exception as error:
            self.status, self.error = "failed", failure(error, self.kind, self.id)
        finally:
            self.finished = time.time()
            self.ended()

    def ended(self) -> None:
        """Let go of what the job needs no more, however it ended (run's last step)."""


def failure(error: Exception, kind: str, job_id: int) -> str:
    """Return what a failed job says: a RagError's own message, or for anything else (a bug: logged in full, and
    the worker goes on) its type and text; user:password in URLs never shown. Call it inside the except block."""
    if isinstance(error, RagError):
        return redact_urls(str(error))
    log.exception("%s job %s failed", kind, job_id)
    return redact_urls(f"unexpected error ({type(error).__name__}: {error}); this is a bug")
