"""Helpers for the page tests (AppTest): start the app on a page, find buttons, upload, search, read text."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag.embeddings.fake import FakeEmbedder
from ui import jobs

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PDF = "pdfs/hausarbeit-jura.pdf"
JOB_TIMEOUT = 300


_waiting = {"for_jobs": True}  # False in a test marked live_jobs


@pytest.fixture(autouse=True)
def jobs_end_before_the_page_is_read(request):
    """settled() waits for the jobs a script run queued; a test marked live_jobs sees them as they run (there,
    settled() only runs the page)."""
    _waiting["for_jobs"] = not request.node.get_closest_marker("live_jobs")
    yield
    _waiting["for_jobs"] = True


def newest_job() -> int:
    return max((job.id for job in jobs.jobs_queue().jobs(kind=None)), default=0)


def settled(page) -> AppTest:
    """Run page (an AppTest, or one of its widgets after a click or a new value) and return the AppTest; when that run
    queued a job (an ingest, a sweep, an index build) or one still runs, wait for the jobs to end (they run in
    ui.jobs' worker thread, as in the app) and run the page once more, the way its live progress redraws it."""
    before = newest_job()
    at = page.run()
    if not _waiting["for_jobs"]:
        return at
    queue = jobs.jobs_queue()
    while newest_job() != before or not queue.wait_idle(0):  # this run queued a job (it may have ended already)
        assert queue.wait_idle(JOB_TIMEOUT), "a job did not end"
        before = newest_job()
        at = at.run()  # fresh widget states: a clicked button is not clicked again
    return at


class Gate:
    """Where a held embedder waits: `waiting` is set once a call waits, `open` lets every call go on."""

    def __init__(self):
        self.open, self.waiting = threading.Event(), threading.Event()


@pytest.fixture
def hold(monkeypatch):
    """Return hold(method): each call of the fake embedder's method ("embed_documents", "embed_query") then waits
    at the Gate it returns until the test opens it (a model that takes its time). Every job ends before the
    next test."""
    gates = []

    def held(method: str) -> Gate:
        gate, original = Gate(), getattr(FakeEmbedder, method)

        def waiting(self, texts):
            gate.waiting.set()
            assert gate.open.wait(JOB_TIMEOUT), "the test never let the embedder go on"
            return original(self, texts)

        monkeypatch.setattr(FakeEmbedder, method, waiting)
        gates.append(gate)
        return gate

    yield held
    for gate in gates:
        gate.open.set()
    assert jobs.jobs_queue().wait_idle(JOB_TIMEOUT), "a job did not end"


@pytest.fixture
def held(hold) -> Gate:
    """Return the gate the fake embedder's embed_documents waits at (a sweep or ingest held mid-embedding)."""
    return hold("embed_documents")


@pytest.fixture
def sweep_env(tmp_path: Path, monkeypatch, shared_data) -> Path:
    """Give the Evaluate page its own Qdrant folder, the fake embedder, and XQuAD-de as its sample folder's
    query set; return the test's folder."""
    samples = tmp_path / "samples"
    samples.mkdir()
    (samples / "xquad.json").write_bytes((shared_data / "xquad-de/xquad.de.dev.json").read_bytes())
    for name, value in {"RAG_QDRANT_PATH": tmp_path / "qdrant", "RAG_EMBEDDER": "fake:32", "RAG_SAMPLE_DIR": samples,
                        "RAG_EMBEDDING_CACHE": tmp_path / "cache", "RAG_DATA_ROOT": tmp_path}.items():
        monkeypatch.setenv(name, str(value))
    for name in ("QDRANT_URL", "RAG_COLLECTION"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def until(condition, what: str) -> None:
    """Wait until condition() holds: a guard against a hang, not a timed assertion."""
    for _ in range(600):
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} never happened")


def start(page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def plain(text: object) -> str:
    """Return a value with the Markdown escapes (backslashes) the app adds to document text removed."""
    return re.sub(r"\\(.)", r"\1", str(text))


def texts(elements) -> str:
    return "\n".join(plain(e.value) for e in elements)


def table(at: AppTest, name: str):
    """Return the selectable table whose key starts with name (its key changes with its rows: ui.state.table_key)."""
    matches = [d for d in at.dataframe if d.key and (d.key == name or d.key.startswith(f"{name}-"))]
    assert matches, f"no table '{name}' among {[d.key for d in at.dataframe]}"
    return matches[0]


def select(at: AppTest, name: str, row: int) -> AppTest:
    """Select a row of a table, as a click on it would."""
    at.session_state[table(at, name).key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    return at.run()


def button(at: AppTest, label: str):
    matches = [b for b in at.button if plain(b.label).startswith(label)]
    assert matches, f"no button '{label}' among {[plain(b.label) for b in at.button]}"
    return matches[0]


def upload(at: AppTest, shared: Path, *names: str) -> AppTest:
    at.file_uploader[0].set_value([(Path(n).name, (shared / n).read_bytes(), "application/pdf") for n in names])
    at.run()
    settled(button(at, "Ingest").click())
    assert not at.exception, at.exception
    return at


def results(at: AppTest) -> dict[str, dict]:
    frame = at.dataframe[0].value
    return {row["file"]: row for row in frame.to_dict("records")}


def search(at: AppTest, query: str, top_k: int | None = None) -> AppTest:
    at.text_input(key="query").set_value(query)
    if top_k is not None:
        at.slider(key="top_k").set_value(top_k)
    button(at, "Search").click().run()
    assert not at.exception, at.exception
    return at

