"""Every queued job (index build, sweep, comparison, "Use this configuration") gets its status, summary() and run()
from one base, ui.jobs.base.QueuedJob: a job says only what it is and does."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rag.errors import Cancelled, RagError
from ui.jobs import IndexJob, QueuedJob
from ui.jobs.apply import ApplyJob
from ui.jobs.compare import CompareJob
from ui.jobs.sweep import SweepCancelled, SweepJob


@dataclass
class Job(QueuedJob):
    outcome: Exception | None = None
    ran: bool = False

    @property
    def what(self) -> str:
        return "the test"

    def work(self) -> None:
        self.ran = True
        if self.outcome is not None:
            raise self.outcome


@pytest.mark.parametrize("kind", [IndexJob, SweepJob, CompareJob, ApplyJob])
def test_the_four_jobs_take_summary_and_run_from_the_base(kind):
    assert "run" not in vars(kind) and "summary" not in vars(kind) and issubclass(kind, QueuedJob)


@pytest.mark.parametrize(("outcome", "status", "line"), [
    (None, "done", "Done: the test"),
    (SweepCancelled(), "cancelled", "Cancelled: the test"),
    (Cancelled("stopped"), "cancelled", "Cancelled: the test"),
    (RagError("Qdrant at x is down."), "failed", "Failed: Qdrant at x is down."),
    (KeyError("bug"), "failed", "Failed: unexpected error (KeyError: 'bug'); this is a bug"),
])
def test_run_ends_every_way_with_its_status_and_line(outcome, status, line):
    job = Job(outcome=outcome)
    assert job.summary() == "Waiting: the test"
    job.run()
    assert job.ran and job.status == status and job.summary() == line
    assert job.started is not None and job.finished is not None and not job.active


def test_a_running_job_says_what_it_does():
    job = Job(status="running")
    assert job.summary() == "Running the test"
