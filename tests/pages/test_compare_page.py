"""The Compare page with AppTest: one query on two sides (modes, collections) and a query set, checked against the
rag functions the page calls; old collections offer dense only; bad input is an error in words; a query-set
comparison is a job of the app's process that a click or a new session never stops, and its Cancel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from qdrant_client import models

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import get_embedder
from rag.evaluation.comparisons.compare import compare_evaluations, compare_hits
from rag.evaluation.metrics.paired import format_p
from rag.evaluation.querysets.queries import load_query_set
from rag.evaluation.sweeps.sweep import evaluate_collection
from rag.retrieval import SearchRequest
from rag.store.open import open_store
from tests.pages.conftest import JOB_TIMEOUT, PDF, button, plain, select, settled, start, texts, until, upload
from ui import jobs, nav
from ui.jobs.compare import CompareJob
from ui.render import md

QUERY = "Welche Schriftgröße verwendet die Klasse?"
QUERY_SET = [
    {"query": "Welche Schriftgröße verwendet die Klasse?", "document": "hausarbeit-jura.pdf",
     "answer": "Schriftgrößen"},
    {"query": "Wie wird Literatur eingebunden?", "document": "hausarbeit-jura.pdf", "answer": "bib-Format"},
    {"query": "Gliederungsebenen chapter section", "document": "hausarbeit-jura.pdf", "answer": "Gliederungsebenen"},
    {"query": "misfits rebels troublemakers", "document": "crazyones.pdf"},
]


def compare_page(at):
    return at.switch_page(nav.COMPARE.path).run()


def run_query(at, query: str = QUERY, top_k: int = 10):
    at.text_input(key="compare_query").set_value(query)
    at.slider(key="compare_top_k").set_value(top_k)
    button(at, "Compare").click().run()
    assert not at.exception, at.exception
    return at


def store_of(at):
    return at.session_state["workspace"].store


def ingest_files(folder: Path, shared: Path, collection: str, settings: ChunkSettings, *names: str) -> None:
    """Fill a collection before the app starts (the embedded folder is closed again for the app)."""
    store = open_store(path=str(folder / "qdrant"))
    files = [pipeline.SourceFile(Path(n).name, (shared / n).read_bytes()) for n in names]
    pipeline.ingest(files, collection, settings, get_embedder("fake"), store=store)
    store.close()


def test_one_query_dense_against_hybrid_side_by_side(app_env, shared_data):
    at = compare_page(upload(start(), shared_data, PDF, "pdfs/crazyones.pdf"))
    assert at.selectbox(key="compare_a_mode").value == "dense"
    assert at.selectbox(key="compare_b_mode").value == "hybrid-convex"  # the default B: the same collection, hybrid
    run_query(at)
    store, embedder = store_of(at), get_embedder("fake")
    expected = compare_hits(pipeline.search(QUERY, "documents", SearchRequest(top_k=10, mode="dense"), store=store,
                                            embedder=embedder),
                            pipeline.search(QUERY, "documents", SearchRequest(top_k=10, mode="hybrid"), store=store,
                                            embedder=embedder))
    side_a, side_b = (d.value for d in at.dataframe)
    assert list(side_a["#"]) == list(range(1, 11)) and list(side_b["#"]) == list(range(1, 11))
    assert (side_a["found"] == "only A").sum() == len(expected.only_a)
    assert (side_b["found"] == "only B").sum() == len(expected.only_b)
    for row, frame_row in zip(expected.a, side_a.to_dict("records"), strict=True):
        assert frame_row["found"].startswith("both") == row.shared
        if row.shared:  # "in B" and the arrow agree with compare's shift (rank in B minus rank in A)
            assert frame_row["in B"] == row.other_rank
            arrow = frame_row["found"].removeprefix("both ")
            assert arrow == ("=" if row.shift == 0 else f"▲ {-row.shift}" if row.shift < 0 else f"▼ {row.shift}")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["shared"] == f"{len(expected.shared_a)} of 10" and metrics["only in B"] == str(len(expected.only_b))
    assert "A = 'documents' · Dense · B = 'documents' · Hybrid convex" in plain(texts(at.caption))


def test_selecting_a_hit_shows_its_text_and_why_it_was_found(app_env, shared_data):
    at = run_query(compare_page(upload(start(), shared_data, PDF)))
    select(at, "compare_table_b", 0)
    top_b = at.dataframe[1].value.iloc[0]
    assert len(at.code) == 1 and at.code[0].value.strip()
    assert f"B #1** · {top_b['document']} · chunk {top_b['chunk']}" in plain(texts(at.markdown))
    assert "fused (convex): w × dense" in texts(at.caption)  # B is hybrid: where it stood in each list


def test_two_chunkings_share_text_across_collections(app_env, shared_data):
    ingest_files(app_env, shared_data, "klein", ChunkSettings(200, 20), PDF)
    at = start()
    assert at.sidebar.selectbox(key="collection_choice").value == "klein"  # a new session opens what exists
    at.sidebar.selectbox(key="collection_choice").set_value("documents").run()
    at = compare_page(upload(at, shared_data, PDF))
    at.selectbox(key="compare_b_collection").set_value("klein").run()
    at.selectbox(key="compare_b_mode").set_value("dense").run()
    run_query(at, top_k=5)
    side_a, side_b = (d.value for d in at.dataframe)
    assert side_a["found"].str.startswith("both").any()  # a 200-token chunk inside a 600-token one: the same text
    assert "B = 'klein' · Dense" in plain(texts(at.caption))
    assert not any("hold different documents" in w for w in texts(at.warning))  # the same PDF on both sides


@pytest.mark.slow
def test_collections_with_other_documents_are_warned_about(app_env, shared_data):
    ingest_files(app_env, shared_data, "documents", ChunkSettings(), PDF)
    ingest_files(app_env, shared_data, "andere", ChunkSettings(200, 20), PDF, "pdfs/crazyones.pdf")
    at = compare_page(start())  # the sidebar opens the larger collection: choose both sides
    at.selectbox(key="compare_a_collection").set_value("documents").run()
    at.selectbox(key="compare_b_collection").set_value("andere").run()
    warning = plain(texts(at.warning))
    assert "'documents' and 'andere' hold different documents: 1 document only in 'andere' (crazyones.pdf)" in warning


def test_a_query_set_shows_metric_deltas_and_per_query_changes(app_env, shared_data):
    at = compare_page(upload(start(), shared_data, PDF, "pdfs/crazyones.pdf"))
    at.button_group(key="compare_source").set_value("query set").run()
    data = "\n".join(json.dumps(q, ensure_ascii=False) for q in QUERY_SET).encode("utf-8")
    at.file_uploader(key="compare_query_file").set_value([("fragen.jsonl", data, "application/jsonl")]).run()
    at.text_input(key="compare_ks").set_value("1,5")
    settled(button(at, "Compare").click())
    assert not at.exception, at.exception
    store, embedder, queries = store_of(at), get_embedder("fake"), load_query_set(data, "fragen.jsonl")
    expected = compare_evaluations(
        evaluate_collection(queries, "documents", embedder, SearchRequest(mode="dense"), store=store, ks=[1, 5]),
        evaluate_collection(queries, "documents", embedder, SearchRequest(mode="hybrid"), store=store, ks=[1, 5]))
    table = at.dataframe[0].value.set_index("metric")
    assert list(table.index) == ["hit@1", "hit@5", "recall@5", "precision@5", "mrr@5", "ndcg@5"]
    for key in table.index:
        assert table.loc[key, "B − A"] == pytest.approx(expected.deltas[key])
        assert table.loc[key, "A"] == pytest.approx(expected.metrics_a[key])
        test = expected.paired[key]
        assert table.loc[key, "interval"] == f"{test.low:+.3f} to {test.high:+.3f}"
        assert table.loc[key, "p"] == ("too few differ" if test.too_few_differ else format_p(test.p_value))
        assert test.low <= 0.0 <= test.high or not test.tied  # the interval shown agrees with the verdict
    assert any(md(expected.verdict()) in m.value for m in at.markdown)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["B better"] == str(expected.count("better")) and metrics["the same"] == str(expected.count("same"))
    changed = [q for q in expected.per_query if q.change != "same"]
    assert changed and sorted(at.dataframe[1].value["query"]) == sorted(q.query for q in changed)
    at.toggle(key="compare_only_changed").set_value(False).run()
    assert len(at.dataframe[1].value) == len(QUERY_SET)


@pytest.mark.slow
def test_bad_query_sets_and_k_values_are_errors_in_words(app_env, shared_data):
    at = compare_page(upload(start(), shared_data, PDF))
    at.button_group(key="compare_source").set_value("query set").run()
    button(at, "Compare").click().run()
    assert "Upload a query set first" in texts(at.info)
    bad = b'{"query": "Schrift", "document": "gibt-es-nicht.pdf"}\n{"query": ""}\n'
    at.file_uploader(key="compare_query_file").set_value([("bad.jsonl", bad, "application/jsonl")]).run()
    button(at, "Compare").click().run()
    assert "bad.jsonl line 2: 'query' is missing or empty" in plain(texts(at.error))
    at.text_input(key="compare_ks").set_value("1,zehn").run()
    button(at, "Compare").click().run()
    assert at.error and not at.exception


def test_same_sides_are_refused_and_an_empty_query_is_an_error(app_env, shared_data):
    at = compare_page(upload(start(), shared_data, PDF))
    at.selectbox(key="compare_b_mode").set_value("dense").run()
    assert "A and B are the same" in texts(at.warning) and button(at, "Compare").disabled
    at.selectbox(key="compare_b_mode").set_value("sparse").run()
    run_query(at, query="   ")
    assert "The query is empty" in texts(at.error)


@pytest.mark.slow
def test_a_collection_from_before_keyword_search_offers_dense_only(app_env, shared_data):
    store = open_store(path=str(app_env / "qdrant"))
    embedder = get_embedder("fake")
    meta = {"rag_lab": {"embedder": embedder.model_id, "dimension": embedder.dimension, "vector": "fake-64"}}
    params = models.VectorParams(size=embedder.dimension, distance=models.Distance.COSINE)
    store.client.create_collection("alt", vectors_config={"fake-64": params}, metadata=meta)
    store.close()
    ingest_files(app_env, shared_data, "alt", ChunkSettings(), PDF)
    at = start()
    at.sidebar.selectbox(key="collection_choice").set_value("documents").run()  # a new session opened "alt"
    at = compare_page(upload(at, shared_data, PDF))
    at.selectbox(key="compare_a_collection").set_value("alt").run()
    assert at.selectbox(key="compare_a_mode").options == ["Dense"]
    assert "re-ingest its documents into a new collection for keyword and hybrid search" in texts(at.caption)
    run_query(at, top_k=3)
    assert len(at.dataframe) == 2 and not at.error


def test_nothing_to_compare_points_to_upload(app_env):
    at = compare_page(start())
    assert "nothing to compare" in texts(at.info)


@pytest.mark.slow
def test_a_squad_file_is_a_query_set_too(app_env, shared_data):
    from rag.evaluation.querysets.squad import import_squad, squad_queries

    raw = json.loads((shared_data / "xquad-de/xquad.de.dev.json").read_text(encoding="utf-8"))
    small = json.dumps({"version": raw.get("version", "1.1"), "data": raw["data"][:1]}, ensure_ascii=False).encode()
    store = open_store(path=str(app_env / "qdrant"))
    imported = import_squad(small, "x.json").documents
    articles = [pipeline.SourceFile(d.filename, d.text.encode("utf-8")) for d in imported]
    pipeline.ingest(articles, "documents", ChunkSettings(200, 0), get_embedder("fake"), store=store)
    store.close()
    at = compare_page(start())
    at.button_group(key="compare_source").set_value("query set").run()
    at.file_uploader(key="compare_query_file").set_value([("xquad-1.json", small, "application/json")]).run()
    settled(button(at, "Compare").click())
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(at.dataframe[1].value) <= len(squad_queries(small, "xquad-1.json"))
    assert "hit@1" in list(at.dataframe[0].value["metric"])


# ---- a query-set comparison is a job of the app's process ----------------------------------------------------

MANY = [dict(q, query=f"{q['query']} {n}") for n in range(10) for q in QUERY_SET]  # 40 queries: several slices


def queue_comparison(at, hold):
    """Upload MANY as the query set and press Compare with the queries' embedding held; return the gate and job."""
    compare_page(at)
    at.button_group(key="compare_source").set_value("query set").run()
    data = "\n".join(json.dumps(q, ensure_ascii=False) for q in MANY).encode("utf-8")
    at.file_uploader(key="compare_query_file").set_value([("viele.jsonl", data, "application/jsonl")]).run()
    gate = hold("embed_query")
    button(at, "Compare").click().run()  # the run ends at once: the comparison is queued
    assert not at.exception, at.exception
    job = jobs.jobs_queue().jobs(kind=CompareJob)[0]
    until(lambda: gate.waiting.is_set() or not job.active, "the comparison's first embedding")
    assert gate.waiting.is_set(), job.summary()
    return gate, job


def heads(at) -> list[str]:
    return [plain(m.value) for m in at.markdown if plain(m.value).startswith("**Comparing ")]


@pytest.mark.slow
@pytest.mark.live_jobs
def test_a_query_set_comparison_goes_on_after_a_click_and_a_new_session_shows_its_result(app_env, shared_data, hold):
    at, queue = upload(start(), shared_data, PDF, "pdfs/crazyones.pdf"), jobs.jobs_queue()
    assert queue.wait_idle(JOB_TIMEOUT)  # the ingest (live_jobs: nothing waits for it)
    gate, job = queue_comparison(at, hold)
    at.toggle(key="compare_sweeps").set_value(True).run()  # a click elsewhere: the page runs again
    assert job.status == "running" and heads(at) == ["**Comparing 40 queries of viele.jsonl on 'documents' and "
                                                     "'documents'**"]
    fresh = compare_page(start())  # a reload or a second tab: a new session
    assert heads(fresh) == heads(at) and [b for b in fresh.button if b.key == f"cancel-comparejob-{job.id}"]
    assert [plain(p.proto.text) for p in fresh.get("progress")] == [job.text] and not fresh.dataframe
    gate.open.set()
    assert queue.wait_idle(JOB_TIMEOUT)
    fresh.run()  # what the live progress does once the comparison ended
    assert job.status == "done" and not fresh.error, job.summary()
    table = fresh.dataframe[0].value.set_index("metric")
    for key in table.index:
        assert table.loc[key, "B − A"] == pytest.approx(job.result.deltas[key])
    assert len(fresh.dataframe[1].value) <= len(MANY)
    assert "Result for viele.jsonl" in plain(texts(fresh.caption))
    at.run()
    assert at.dataframe[0].value.equals(fresh.dataframe[0].value) and not at.get("progress")


@pytest.mark.live_jobs
def test_cancel_stops_a_query_set_comparison_between_embedding_slices(app_env, shared_data, hold):
    at = upload(start(), shared_data, PDF, "pdfs/crazyones.pdf")
    assert jobs.jobs_queue().wait_idle(JOB_TIMEOUT)
    gate, job = queue_comparison(at, hold)
    at.button(key=f"cancel-comparejob-{job.id}").click().run()
    assert job.cancel_requested
    gate.open.set()  # the slice under way ends; the next one is not started
    assert jobs.jobs_queue().wait_idle(JOB_TIMEOUT)
    at.run()
    assert job.status == "cancelled" and job.result is None and 0 < job.embedded < len(MANY)
    assert "Cancelled: 40 queries of viele.jsonl" in plain(texts(at.info)) and not at.dataframe
    until(lambda: not at.get("progress"), "the page without progress")
