"""The Evaluate page after the app restarts (issue 39, item 9): its process held the sweep's result, so a new session
finds it only in the kept runs (runs.sqlite). The old URL shows the kept run of its inputs; through the sidebar, the
page offers the last kept sweep and brings back its inputs."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from rag.runs import RunLog, runs_path
from tests.pages.conftest import ROOT, plain
from tests.pages.test_evaluate_navigation import _set_up
from tests.pages.test_evaluate_page import evaluate_page, set_grid
from ui import jobs, nav, resources
from ui.jobs import worker

JOB_WAIT = 180
CHOOSE = "Choose a query set, documents and a grid, then run the sweep."


@pytest.fixture
def env(sweep_env):
    return sweep_env


def restart(monkeypatch) -> None:
    """The app's process ends and starts again: its job queue (the sweeps it ran, with their results) is gone."""
    assert jobs.jobs_queue().wait_idle(JOB_WAIT)
    monkeypatch.setattr(worker, "_QUEUE", None)
    resources._last_used.clear()


def opened(url: dict[str, str]) -> AppTest:
    """Return the Evaluate page of a new session opened at url (its parameters)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=JOB_WAIT)
    at.run()
    at.switch_page(nav.EVALUATE.path)
    for name, value in url.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, at.exception
    return at


def captions(at: AppTest) -> list[str]:
    return [plain(c.value) for c in at.caption]


def kept_table(at: AppTest):
    return next(d.value for d in at.dataframe if "configuration" in d.value.columns)


def swept(env):
    """Run a sweep of an uploaded query set on the collection 'xquad'; return the page and its result."""
    lines, _ = _set_up(env)
    at = evaluate_page()
    at.file_uploader(key="evaluate_query_file").upload("queries.jsonl", lines, "application/json")
    at.run()
    at.radio(key="evaluate_documents_from").set_value("A collection")
    at.run()
    at.selectbox(key="evaluate_collection").set_value("xquad")
    at.run()
    set_grid(at, "300,200", "30", "1,3", modes=["dense"])
    assert not at.error, [e.value for e in at.error]
    return at, at.session_state["evaluate_result"]


@pytest.mark.slow
def test_after_a_restart_the_old_url_shows_the_kept_run_of_its_inputs(env, monkeypatch):
    at, result = swept(env)
    url = dict(at.query_params)
    [run] = RunLog(runs_path(str(env / "qdrant"))).runs()
    restart(monkeypatch)
    fresh = opened(url)
    assert "evaluate_result" not in fresh.session_state  # the result itself is gone with the process
    when = result.created_at[:16].replace("T", " ")
    assert any(c.startswith(f"The kept run {run['id']} from {when} UTC: the last sweep of these inputs, "
                            "queries.jsonl on the collection 'xquad'.") for c in captions(fresh)), captions(fresh)
    table = kept_table(fresh)
    assert list(table["configuration"]) == [r.short for r in result.results]
    assert list(table["mrr@3"]) == [round(r.metrics["mrr@3"], 3) for r in result.results]
    assert list(table["best"]).index("best") == result.results.index(result.best())
    assert CHOOSE not in captions(fresh)

    fresh.selectbox(key="evaluate_collection").set_value("documents")  # other inputs: not that run
    fresh.run()
    assert not [d for d in fresh.dataframe if "configuration" in d.value.columns]
    assert CHOOSE in captions(fresh)


@pytest.mark.slow
def test_after_a_restart_the_sidebar_offers_the_last_kept_run_with_its_inputs(env, monkeypatch):
    _, result = swept(env)
    [run] = RunLog(runs_path(str(env / "qdrant"))).runs()
    restart(monkeypatch)
    at = evaluate_page()  # through the sidebar: no URL parameters, the default grid
    assert at.text_input(key="evaluate_sizes").value != "300,200"
    when = result.created_at[:16].replace("T", " ")
    assert (f"The last sweep kept here ran on queries.jsonl on the collection 'xquad' (run {run['id']}, {when} UTC)."
            in captions(at)), captions(at)
    next(b for b in at.button if b.label == "Show it with its inputs").click()
    at.run()
    assert not at.exception, at.exception
    assert [at.text_input(key=k).value for k in ("evaluate_sizes", "evaluate_overlaps", "evaluate_ks")] == [
        "300,200", "30", "1,3"]
    assert at.multiselect(key="evaluate_modes").value == ["dense"]
    assert at.selectbox(key="evaluate_collection").value == "xquad"
    assert any("Using queries.jsonl as uploaded earlier" in c for c in captions(at))
    assert any(c.startswith(f"The kept run {run['id']} from {when} UTC") for c in captions(at)), captions(at)
    assert list(kept_table(at)["configuration"]) == [r.short for r in result.results]
    assert {"query_set": "queries.jsonl", "collection": "xquad", "chunk_size": "300,200"}.items() <= dict(
        at.query_params).items()
