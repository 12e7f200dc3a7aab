"""The Evaluate page with AppTest: a sweep from the sample folder, uploads, a collection, failures, exports; the
sweep as a job of the app's process that a click, a reload or a new tab never stops, and its Cancel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import get_embedder
from rag.evaluation.querysets.squad import import_squad
from rag.store.open import open_store
from tests.pages.conftest import select, settled, until
from ui import jobs, nav
from ui.jobs.sweep import SweepJob
from ui.state import result_key

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 180


@pytest.fixture
def env(sweep_env):
    return sweep_env


def plain(text: str) -> str:
    """Return Markdown-escaped page text without its backslashes."""
    return text.replace("\\", "")


def evaluate_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page(nav.EVALUATE.path)
    at.run()
    assert not at.exception, at.exception
    return at


def set_grid(at: AppTest, sizes: str, overlaps: str, ks: str, modes: list[str] | None = None) -> None:
    if modes is not None:
        at.multiselect(key="evaluate_modes").set_value(modes)
    at.text_input(key="evaluate_sizes").set_value(sizes)
    at.text_input(key="evaluate_overlaps").set_value(overlaps)
    at.text_input(key="evaluate_ks").set_value(ks)
    next(b for b in at.button if b.label == "Run the sweep").click()
    settled(at)
    assert not at.exception, at.exception


@pytest.mark.slow
def test_sweep_of_sample_squad_articles_with_failures_and_exports(env):
    at = evaluate_page()
    assert at.title[0].value == "Evaluate"
    at.radio(key="evaluate_query_from").set_value("Sample folder")
    at.run()
    assert at.selectbox(key="evaluate_sample").value.name == "xquad.json"
    at.number_input(key="evaluate_articles").set_value(2)
    at.run()
    assert at.radio(key="evaluate_documents_from_squad").value == "The SQuAD articles"
    set_grid(at, "100,200", "0,150", "1,5")
    assert not at.error, [e.value for e in at.error]
    best = plain(at.success[0].value)
    assert best.startswith("Best by mrr@5: chunk") and "chunks of" in best
    assert any("95 % bootstrap interval" in plain(c.value) for c in at.caption)
    table = at.dataframe[0].value
    assert list(zip(table["chunk_size"], table["overlap"], strict=True)) == [(100, 0), (200, 0), (200, 150)]
    assert {"hit@1", "hit@5", "mrr@5", "ndcg@5", "chunks", "mean_tokens"} <= set(table.columns)
    assert any("overlap 150" in plain(c.value) and "skipped" in c.value for c in at.caption)  # 100/150 left out
    result = at.session_state["evaluate_result"]
    standing = list(table["by mrr@5"])
    assert standing.count("best") == 1 and sum(s.startswith("tie (p = ") for s in standing) == len(result.ties())
    assert list(table["± mrr@5"]) == [round((r.evaluation.intervals["mrr@5"][1] - r.evaluation.intervals["mrr@5"][0])
                                            / 2, 3) for r in result.results]
    assert any(plain(result.tie_summary("mrr@5")) in plain(m.value) for m in at.markdown)
    assert len(at.get("vega_lite_chart")) == 6  # interval dots, hit@k, heatmap, times, answer ranks, funnel
    assert [b.label for b in at.get("download_button")] == ["Results as CSV", "Results as JSON (with every query)",
                                                           "Download report (HTML)"]
    # the heatmap follows the chosen metric
    at.selectbox(key=result_key("evaluate_metric", result)).set_value("hit")
    at.run()
    assert plain(at.success[0].value).startswith("Best by hit@5")
    # failures: pick one and see the chunk that should have been found
    failures = at.dataframe[1].value
    assert len(failures) > 0 and {"query", "rank", "score", "top score", "expected"} <= set(failures.columns)
    assert all(r is None or r != r or r > 5 for r in failures["rank"])  # none was found in the top 5
    select(at, "evaluate_failures", 0)  # its key changes with its rows: a selection never outlives them
    assert not at.exception, at.exception
    shown = [c.value for c in at.code]
    answer = failures["answer"][0]
    assert len(shown) >= 2 and any(answer[:3] in text for text in shown[:-1])
    assert any("the answer starts at character" in plain(c.value) for c in at.caption)


def test_uploaded_query_set_and_documents(env):
    imported = import_squad((env / "samples/xquad.json").read_bytes(), articles=2)
    lines = "\n".join(json.dumps(q, ensure_ascii=False) for q in imported.queries[:20])
    at = evaluate_page()
    at.file_uploader(key="evaluate_query_file").upload("set.jsonl", lines.encode(), "application/json")
    at.run()
    at.radio(key="evaluate_documents_from").set_value("Upload documents")
    at.run()
    at.file_uploader(key="evaluate_document_files").set_value(
        [(d.filename, d.text.encode(), "text/plain") for d in imported.documents])
    at.run()
    set_grid(at, "150", "0,30", "1,3")
    assert not at.error, [e.value for e in at.error]
    assert len(at.dataframe[0].value) == 2
    assert "20 queries on 2 documents" in " ".join(plain(c.value) for c in at.caption)


def test_bad_query_set_and_unknown_documents_are_explained(env):
    store = open_store(path=str(env / "qdrant"))
    pipeline.ingest([pipeline.SourceFile("a.txt", "Ein kurzer Text über Köln.".encode())], "documents",
                    ChunkSettings(50, 0), get_embedder("fake:32"), store=store)
    at = evaluate_page()
    at.file_uploader(key="evaluate_query_file").upload("set.jsonl", b'{"query": "a"}\n', "application/json")
    at.run()
    assert "set.jsonl line 1" in plain(at.error[0].value)
    at.file_uploader(key="evaluate_query_file").set_value(
        ("set.jsonl", b'{"query": "x", "document": "b.txt"}\n', "application/json"))
    at.run()
    assert not at.error
    assert at.radio(key="evaluate_documents_from").value == "A collection"
    set_grid(at, "50", "0", "1")
    assert "'b.txt' (line 1)" in plain(at.error[0].value) and "a.txt" in plain(at.error[0].value)


@pytest.mark.slow
def test_sweep_over_a_collections_documents(env):
    store = open_store(path=str(env / "qdrant"))
    imported = import_squad((env / "samples/xquad.json").read_bytes(), articles=2)
    files = [pipeline.SourceFile(d.filename, d.text.encode()) for d in imported.documents]
    pipeline.ingest(files, "documents", ChunkSettings(300, 30), get_embedder("fake:32"), store=store)
    at = evaluate_page()
    lines = "\n".join(json.dumps(q, ensure_ascii=False) for q in imported.queries)
    at.file_uploader(key="evaluate_query_file").upload("set.jsonl", lines.encode(), "application/json")
    at.run()
    assert at.selectbox(key="evaluate_collection").value == "documents"
    set_grid(at, "80,160", "0", "1,10")
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert list(table["chunk_size"]) == [80, 160] and table["chunks"][0] > table["chunks"][1]
    assert table["hit@10"].max() > table["hit@1"].min()


@pytest.mark.slow
def test_search_modes_are_a_sweep_dimension(env):
    at = evaluate_page()
    at.radio(key="evaluate_query_from").set_value("Sample folder")
    at.run()
    at.number_input(key="evaluate_articles").set_value(1)
    at.run()
    assert at.multiselect(key="evaluate_modes").value == ["hybrid-convex"]  # the app's default search
    set_grid(at, "100,200", "0", "1,5", modes=["dense", "sparse", "hybrid-dbsf"])
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert list(zip(table["chunk_size"], table["mode"], strict=True)) == [
        (100, "dense"), (100, "sparse"), (100, "hybrid-dbsf"), (200, "dense"), (200, "sparse"), (200, "hybrid-dbsf")]
    best = plain(at.success[0].value)
    assert best.startswith("Best by mrr@5: chunk_size") and " search (mrr@5" in best
    assert any(m in best for m in ("dense search", "sparse search", "hybrid-dbsf search"))
    assert any("modes dense, sparse, hybrid-dbsf" in plain(c.value) for c in at.caption)
    charts = at.get("vega_lite_chart")
    assert len(charts) == 6 and "facet" in charts[1].proto.spec and "facet" in charts[2].proto.spec
    [values] = [convert_arrow_bytes_to_pandas_df(d.data.data) for d in charts[0].proto.datasets]
    assert len(values) == 6 and ((values["low"] <= values["value"]) & (values["value"] <= values["high"])).all()
    assert list(values["standing"]).count("best") == 1
    assert '"rule"' in charts[0].proto.spec  # the interval bars beside the dots
    # where the answer ranked: one row (configuration and mode) at a time, with a threshold line
    result = at.session_state["evaluate_result"]
    rows = at.selectbox(key=result_key("evaluate_rank_config", result)).options
    assert len(rows) == 6 and "chunk_size 200, overlap 0, child_size 128, sparse search" in [plain(r) for r in rows]
    at.selectbox(key=result_key("evaluate_rank_config", result)).set_value(
        "chunk_size 200, overlap 0, child_size 128, sparse search")
    at.number_input(key=result_key("evaluate_threshold", result)).set_value(5.0)
    at.run()
    assert not at.exception, at.exception
    assert '"threshold"' in at.get("vega_lite_chart")[4].proto.spec
    assert any("the threshold would cut" in plain(c.value) for c in at.caption)
    # no mode chosen: said, and nothing runs
    set_grid(at, "100", "0", "1", modes=[])
    assert "at least one search mode" in plain(at.error[0].value)


@pytest.mark.slow
def test_sweep_collections_stay_out_of_the_pickers_and_go_as_one_sweep(env):
    at = evaluate_page()
    at.radio(key="evaluate_query_from").set_value("Sample folder")
    at.run()
    at.number_input(key="evaluate_articles").set_value(1)
    at.run()
    set_grid(at, "100,200", "0", "1,5", modes=["dense"])
    at.switch_page(nav.UPLOAD.path).run()  # the sidebar on a new page reads the store again
    picker = at.sidebar.selectbox(key="collection_choice")
    assert not [o for o in picker.options if "sweep-" in o], picker.options
    at.sidebar.toggle(key="show_sweeps").set_value(True).run()
    assert len([o for o in at.sidebar.selectbox(key="collection_choice").options if "sweep-" in o]) == 2
    at.switch_page(nav.LIBRARY.path).run()
    assert "Sweep collections: 2 from 1 sweep" in [plain(e.label) for e in at.expander]
    from ui import resources

    store = at.session_state["workspace"].store  # a file kept for a document only the sweep's collections hold
    sweep = next(c.name for c in store.collections() if c.name.startswith("sweep-"))
    kept = resources.archive(store).original_path(store.documents(sweep)[0].document_id)
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(b"%PDF-1.4\n")
    at.button(key="confirm_delete_sweep").click().run()
    assert not at.exception, at.exception
    assert not kept.exists()  # it went with the last collections that held its document
    from rag.store.open import open_store

    assert not [c.name for c in open_store(path=str(env / "qdrant")).collections() if c.name.startswith("sweep-")]


# ---- the sweep is a job of the app's process -----------------------------------------------------------------


JOB_WAIT = 180


def sample_articles(at: AppTest, count: int = 1) -> None:
    """Choose the sample folder's query set (XQuAD-de in the sweep_env) and its first count articles."""
    at.radio(key="evaluate_query_from").set_value("Sample folder")
    at.run()
    at.number_input(key="evaluate_articles").set_value(count)
    at.run()


def newest_sweep() -> SweepJob:
    return jobs.jobs_queue().jobs(kind=SweepJob)[0]


def sweep_held_at_embedding(held) -> tuple[AppTest, SweepJob]:
    """Return the Evaluate page and the sweep it queued (one article, 100,200 x 0, k 1,5, dense), once the sweep
    waits in its first embedding call at held."""
    at = evaluate_page()
    sample_articles(at)
    set_grid(at, "100,200", "0", "1,5", modes=["dense"])  # the run ends at once: the sweep is queued
    assert held.waiting.wait(JOB_WAIT)
    job = newest_sweep()
    until(lambda: job.progress is not None and job.progress.stage == "embedding", "the first embedding event")
    return at, job


def live(at: AppTest, job: SweepJob) -> tuple[str, list[str]]:
    """Return the bold head line of the page's running sweeps and the texts of its progress bars."""
    heads = [plain(m.value) for m in at.markdown if plain(m.value).startswith(("**Running:", "**Waiting:"))]
    assert [b for b in at.button if b.key == f"cancel-sweepjob-{job.id}"], "no Cancel button for the sweep"
    return " ".join(heads), [plain(p.proto.text) for p in at.get("progress")]


@pytest.mark.slow
@pytest.mark.live_jobs
def test_a_sweep_goes_on_after_a_click_and_a_new_session_shows_its_progress_then_its_result(env, held):
    at, job = sweep_held_at_embedding(held)
    at.selectbox(key="evaluate_strategy").set_value("tokens")  # a click elsewhere on the page: it runs again
    at.run()
    assert not at.exception, at.exception
    assert job.status == "running" and not job.cancel_requested
    head, bars = live(at, job)
    assert "Running: sweep of 2 configurations × 1 mode, " in head and ", 0 of 2 done" in head
    assert bars == [job.text] and bars[0].startswith("chunk_size 100, overlap 0, child_size 128: embedding 0/")
    assert bars[0].endswith(" left")  # the time left (rag.embeddings.pace)
    fresh = evaluate_page()  # a reload or a second tab: a new session
    assert "evaluate_result" not in fresh.session_state and not fresh.dataframe
    assert live(fresh, job)[0] == head
    held.open.set()
    assert jobs.jobs_queue().wait_idle(JOB_WAIT)
    fresh.run()  # what the live progress does once the sweep ended
    assert job.status == "done", job.summary()
    assert not fresh.exception and not fresh.error, fresh.exception or [e.value for e in fresh.error]
    table = fresh.dataframe[0].value
    assert list(zip(table["chunk_size"], table["overlap"], strict=True)) == [(100, 0), (200, 0)]
    assert plain(fresh.success[0].value).startswith("Best by mrr@5: chunk")
    assert len(fresh.get("vega_lite_chart")) == 6
    assert [b.label for b in fresh.get("download_button")] == ["Results as CSV", "Results as JSON (with every query)",
                                                              "Download report (HTML)"]
    assert fresh.session_state["evaluate_result"] is job.result
    at.run()
    assert at.session_state["evaluate_result"] is job.result and len(at.dataframe[0].value) == 2
    assert not [p for p in at.get("progress")]  # nothing runs any more


@pytest.mark.slow
@pytest.mark.live_jobs
def test_cancel_stops_the_sweep_before_it_builds_a_collection_and_the_next_one_runs(env, held):
    at, job = sweep_held_at_embedding(held)
    fresh = evaluate_page()
    fresh.button(key=f"cancel-sweepjob-{job.id}").click().run()
    assert job.cancel_requested
    held.open.set()  # the slice under way ends; the sweep stops at its next progress event
    assert jobs.jobs_queue().wait_idle(JOB_WAIT)
    fresh.run()
    assert job.status == "cancelled" and job.result is None
    assert any(plain(i.value).startswith("Cancelled: sweep of 2 configurations") for i in fresh.info)
    assert not fresh.dataframe and "evaluate_result" not in fresh.session_state
    assert not [c.name for c in job.store.collections() if c.name.startswith("sweep-")]
    next(b for b in at.button if b.label == "Run the sweep").click()  # the same sweep again: it runs to its end
    at.run()
    assert jobs.jobs_queue().wait_idle(JOB_WAIT)
    at.run()
    assert newest_sweep().status == "done" and len(at.dataframe[0].value) == 2
    assert not [i for i in at.info if plain(i.value).startswith("Cancelled")]


@pytest.mark.slow
@pytest.mark.live_jobs
def test_a_sweep_waits_behind_an_ingest_job_one_writer_at_a_time(env, held):
    at = evaluate_page()
    at.switch_page(nav.UPLOAD.path).run()
    at.file_uploader[0].set_value([("vertrag.txt", "Die Kündigungsfrist beträgt drei Monate. ".encode() * 50,
                                    "text/plain")])
    at.run()
    next(b for b in at.button if b.label.startswith("Ingest")).click().run()
    assert held.waiting.wait(JOB_WAIT)
    [ingest] = jobs.jobs_queue().jobs()[:1]
    assert ingest.status == "running"
    at.switch_page(nav.EVALUATE.path).run()
    sample_articles(at)
    set_grid(at, "100", "0", "1,5", modes=["dense"])
    job = newest_sweep()
    assert job.status == "queued" and ingest.status == "running"
    assert live(at, job)[0].startswith("**Waiting: sweep of 1 configuration ×")
    held.open.set()
    assert jobs.jobs_queue().wait_idle(JOB_WAIT)
    assert (ingest.status, job.status) == ("done", "done") and job.started >= ingest.finished
