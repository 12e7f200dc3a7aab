"""The Experiments page and "Use this configuration" with AppTest: a sweep on the Evaluate page is kept as a run and
applied to a collection by a job; kept runs are listed, filtered, compared (the numbers of `rag runs compare
--json`), their report downloaded and deleted after a confirmation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag import pipeline
from rag.cli import main
from rag.evaluation.querysets.squad import import_squad, write_import
from rag.retrieval import SearchRequest
from rag.runs.compare import compare_runs
from rag.runs.db import RunLog
from rag.store.open import open_store
from tests.pages.conftest import settled
from tests.pages.test_evaluate_page import sample_articles, set_grid
from ui import nav
from ui.state import result_key

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 180


@pytest.fixture
def env(sweep_env):
    return sweep_env


def page(path: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page(path)
    at.run()
    assert not at.exception, at.exception
    return at


def text(at: AppTest) -> str:
    return " ".join(e.value.replace("\\", "") for kind in ("caption", "success", "markdown", "warning")
                    for e in at.get(kind))


@pytest.mark.slow
def test_a_sweep_is_kept_and_a_chosen_row_becomes_the_collections_configuration(env, monkeypatch):
    at = page(nav.EVALUATE.path)
    sample_articles(at, 2)
    set_grid(at, "100,200", "0", "1,5")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "Kept as run 1" in text(at)
    (kept,) = RunLog(env / "runs.sqlite").runs()
    result = at.session_state["evaluate_result"]
    assert kept["kind"] == "sweep" and kept["settings"]["query_set"] == "xquad.json"
    assert [r["metrics"] for r in kept["rows"]] == [r.metrics for r in result.results]

    best = result.best()
    other = next(r for r in result.results if r.config != best.config)
    for row, name in ((best, "best"), (other, "other")):
        at.selectbox(key=result_key("apply_row", result)).set_value(row.label)
        at.text_input(key=result_key("apply_collection", result)).set_value(name).run()  # a new one: no confirmation
        at.button(key="apply_configuration").click()
        settled(at)
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert f"re-chunked into '{name}'" in text(at) and "chosen by run 1" in text(at)
        store = open_store(path=str(env / "qdrant"))
        assert {(d.chunk_size, d.overlap) for d in store.documents(name)} == {(row.config.chunk_size, 0)}
        assert sum(d.chunks for d in store.documents(name)) == row.chunks
        assert store.collection_setting(name, "run") == 1
        assert pipeline.search_defaults(store, name, SearchRequest()).mode == row.mode.mode

    # a sweep's own collection is refused before any job is queued
    at.text_input(key=result_key("apply_collection", result)).set_value(best.collection)
    at.run()
    assert at.button(key="apply_configuration").disabled
    assert "sweeps' own collections" in at.error[0].value.replace("\\", "")

    monkeypatch.setenv("RAG_COLLECTION", "best")  # the Library says what the collection searches with, and why
    library = page(nav.LIBRARY.path)
    assert f"Search defaults: mode {best.mode.mode}" in text(library) and "chosen by run 1" in text(library)
    assert "Chunk headers: on" not in text(library)
    RunLog(env / "runs.sqlite").delete(1)  # the Library does not point at a run that is gone without saying so
    library = page(nav.LIBRARY.path)
    assert "chosen by run 1 (deleted from the Experiments page since)" in text(library)


@pytest.mark.slow
def test_runs_are_listed_filtered_compared_and_deleted(env, shared_data, capsys):
    docs = env / "docs"
    write_import(import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=2), docs)
    store = ["--store", str(env / "qdrant")]
    assert main([*store, "ingest", *map(str, sorted(docs.glob("*.txt"))), "--embedder", "fake:32"]) == 0
    for mode in ("hybrid", "dense"):
        assert main([*store, "eval", str(docs / "queries.jsonl"), "--mode", mode, "--k", "1,5"]) == 0
    capsys.readouterr()
    log = RunLog(env / "runs.sqlite")
    expected = compare_runs(log, "1", "2").to_json()  # the page's default: A the older run, B the newer

    at = page(nav.EXPERIMENTS.path)
    assert at.title[0].value == "Experiments"
    listed = at.dataframe[0].value
    assert list(listed["id"]) == [2, 1] and list(listed["kind"]) == ["eval", "eval"]
    assert list(listed["value"]) == [round(r["rows"][0]["metrics"]["mrr@5"], 3) for r in log.runs()]
    compared = at.dataframe[2].value.set_index("metric")
    assert compared.loc["mrr@5", "B - A"] == round(expected["deltas"]["mrr@5"], 3)
    interval = expected["paired"]["mrr@5"]["interval"]
    assert compared.loc["mrr@5", "95 % interval"] == f"{interval[0]:+.3f} to {interval[1]:+.3f}"
    assert expected["verdict"] in [m.value.replace("\\", "") for m in at.markdown][-1]
    assert [b.label for b in at.get("download_button")] == ["Download report (HTML)"]

    at.text_input(key="experiments_filter").set_value("dense")
    at.run()
    assert list(at.dataframe[0].value["id"]) == [2]
    at.multiselect(key="experiments_kinds").set_value(["sweep"])
    at.run()
    assert "No run matches the filter." in text(at)
    at.multiselect(key="experiments_kinds").set_value(["eval", "sweep"])
    at.text_input(key="experiments_filter").set_value("")
    at.run()

    at.selectbox(key="experiments_run").set_value(1)
    at.run()
    assert at.button(key="experiments_delete_1").disabled  # nothing is deleted without the confirmation
    at.checkbox(key="experiments_confirm_1").check()
    at.run()
    at.button(key="experiments_delete_1").click()
    at.run()
    assert not at.exception, at.exception
    assert [r["id"] for r in log.runs()] == [2] and list(at.dataframe[0].value["id"]) == [2]
    assert json.loads(json.dumps(log.run(2)))["rows"][0]["mode"] == "dense"


@pytest.mark.slow
def test_a_sweep_whose_run_cannot_be_kept_still_shows_its_result(env):
    (env / "runs.sqlite").mkdir()  # where the database should be: it cannot be opened, like a full disk
    at = page(nav.EVALUATE.path)
    sample_articles(at)
    at.text_input(key="evaluate_sizes").set_value("150")
    at.text_input(key="evaluate_overlaps").set_value("0")
    next(b for b in at.button if b.label == "Run the sweep").click()
    settled(at)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert plain_first(at.success).startswith("Best by mrr@10")  # the result is there
    (warning,) = [w.value.replace("\\", "") for w in at.warning if "not kept" in w.value.replace("\\", "")]
    assert "this run was not kept" in warning and "runs.sqlite" in warning
    experiments = page(nav.EXPERIMENTS.path)
    assert "could not be read" in experiments.error[0].value.replace("\\", "")


def plain_first(elements) -> str:
    return elements[0].value.replace("\\", "")
