"""Helpers for the page tests (AppTest): start the app on a page, find buttons, upload, search, read text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui import jobs

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PDF = "pdfs/hausarbeit-jura.pdf"
JOB_TIMEOUT = 300


@pytest.fixture(autouse=True)
def ingest_jobs_end_before_the_page_is_read(monkeypatch, request):
    """After a script run that queued an ingest job, wait for the job (it runs in ui.jobs' worker thread, as in
    the app) and run the page once more, the way the page's live progress would redraw it. A test marked
    live_jobs sees the jobs as they run."""
    if request.node.get_closest_marker("live_jobs"):
        return
    original = AppTest._run

    def newest() -> int:
        return max((job.id for job in jobs.jobs_queue().jobs()), default=0)

    def run(self, widget_state=None, timeout=None):
        before = newest()
        result = original(self, widget_state, timeout)
        queue = jobs.jobs_queue()
        if newest() != before or not queue.wait_idle(0):  # this run queued a job (it may have ended already)
            assert queue.wait_idle(JOB_TIMEOUT), "an ingest job did not end"
            result = AppTest.run(self)  # fresh widget states: a clicked button is not clicked again
        return result

    monkeypatch.setattr(AppTest, "_run", run)


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
    button(at, "Ingest").click().run()
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

