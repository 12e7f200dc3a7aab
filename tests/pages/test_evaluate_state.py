"""The Evaluate page's state (issue 34): a new result resets the choices made on the old one, the inputs survive a
reload, a running sweep's Cancel says so at once, and nothing asks to run a sweep while one runs."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import get_embedder
from rag.evaluation.querysets.squad import import_squad
from rag.store.open import open_store
from tests.pages.conftest import ROOT, plain, settled
from tests.pages.test_evaluate_page import (
    evaluate_page,
    newest_sweep,
    sample_articles,
    set_grid,
    sweep_held_at_embedding,
)
from ui import jobs, nav, resources
from ui.state import result_key

JOB_WAIT = 180
PICKERS = ("evaluate_rank_config", "evaluate_failure_config", "evaluate_funnel_config", "apply_row", "judge_eval_row")


@pytest.fixture
def env(sweep_env):
    return sweep_env


@pytest.mark.slow
def test_a_new_sweep_resets_every_row_chosen_on_the_one_before(env):
    at = evaluate_page()
    sample_articles(at)
    set_grid(at, "100,200", "0", "1,5", modes=["dense", "sparse"])
    first = at.session_state["evaluate_result"]
    other = next(r.label for r in first.results if r.label != first.best().label)
    for key in PICKERS:  # the analyst looks at another row everywhere
        at.selectbox(key=result_key(key, first)).set_value(other)
    at.selectbox(key=result_key("evaluate_failure_k", first)).set_value(1)
    at.run()
    assert all(at.selectbox(key=result_key(key, first)).value == other for key in PICKERS)
    set_grid(at, "100,200", "0", "1,5", modes=["dense", "sparse"])  # a new result, holding a row of that label
    second = at.session_state["evaluate_result"]
    assert second is not first and other in [r.label for r in second.results]
    best = second.best().label
    assert {key: at.selectbox(key=result_key(key, second)).value for key in PICKERS} == dict.fromkeys(PICKERS, best)
    assert at.selectbox(key=result_key("evaluate_failure_k", second)).value == 5
    missed = len(second.best().evaluation.failures(5))
    verb = "has" if missed == 1 else "have"
    assert any(plain(c.value).startswith(f"{missed} of {second.queries} queries {verb} no relevant chunk in the top 5")
               for c in at.caption)


@pytest.mark.slow
def test_judging_starts_on_the_best_row_and_labels_each_hit_with_its_rank_for_its_question(env):
    at = evaluate_page()
    sample_articles(at)
    set_grid(at, "100,200", "0", "1,5", modes=["dense", "sparse"])
    result = at.session_state["evaluate_result"]
    best = result.best()
    assert {key: at.selectbox(key=result_key(key, result)).value for key in PICKERS} == dict.fromkeys(PICKERS,
                                                                                                  best.label)
    texts = [t.value for t in at.text]
    shown = [(texts[i - 1].removeprefix("Question: "), *text.split("\n", 1)) for i, text in enumerate(texts)
             if text.startswith("#") and texts[i - 1].startswith("Question: ")]
    assert len({question for question, _, _ in shown}) > 1, texts  # hits of several questions
    ranks = {}  # question -> the hits of each of its outcomes (XQuAD asks some questions twice)
    for o in best.evaluation.per_query:
        ranks.setdefault(o.query.text, []).append([(h.document_title, " ".join(h.content.split())[:160].rstrip())
                                                   for h in o.hits])
    for question, label, content in shown:  # "#3 · title": the third hit of that question, not of the list
        number, title = label.removeprefix("#").split(" · ", 1)
        assert int(number) <= result.ks[-1], label
        assert (title, content.rstrip()) in [hits[int(number) - 1] for hits in ranks[question]], label


@pytest.mark.live_jobs
def test_under_a_running_sweep_cancel_says_cancelling_at_once_and_no_caption_asks_for_a_sweep(env, held):
    at, job = sweep_held_at_embedding(held)
    at.run()
    captions = [plain(c.value) for c in at.caption]
    assert not [c for c in captions if c.startswith("Choose a query set")], captions
    at.button(key=f"cancel-sweepjob-{job.id}").click().run()  # the embedder is still busy with its slice
    assert job.cancel_requested and job.status == "running"
    heads = [plain(m.value) for m in at.markdown if plain(m.value).startswith("**")]
    assert any(h.startswith("**Cancelling") for h in heads), heads
    assert [plain(p.proto.text) for p in at.get("progress")][0].startswith("Cancelling")
    held.open.set()
    assert jobs.jobs_queue().wait_idle(JOB_WAIT)
    assert job.status == "cancelled"


def reload(at: AppTest) -> AppTest:
    """Return the page as a reload shows it: a new session with the same URL."""
    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=JOB_WAIT)
    fresh.run()
    fresh.switch_page(nav.EVALUATE.path)
    for name, value in at.query_params.items():
        fresh.query_params[name] = value
    fresh.run()
    assert not fresh.exception, fresh.exception
    return fresh


@pytest.mark.slow
def test_a_reload_keeps_the_uploaded_query_set_and_the_grid(env):
    store = open_store(path=str(env / "qdrant"))
    imported = import_squad((env / "samples/xquad.json").read_bytes(), articles=2)
    files = [pipeline.SourceFile(d.filename, d.text.encode()) for d in imported.documents]
    pipeline.ingest(files, "documents", ChunkSettings(300, 30), get_embedder("fake:32"), store=store)
    lines = "\n".join(json.dumps(q, ensure_ascii=False) for q in imported.queries[:20]).encode()
    at = evaluate_page()
    at.file_uploader(key="evaluate_query_file").upload("../mein Satz.jsonl", lines, "application/json")
    at.run()
    set_grid(at, "150,250", "0,30", "1,3", modes=["dense", "sparse"])
    assert not at.error, [e.value for e in at.error]
    kept = env / "query-sets" / "mein_Satz.jsonl"  # under the data root, its name made safe
    assert kept.read_bytes() == lines
    fresh = reload(at)
    assert [fresh.text_input(key=k).value for k in ("evaluate_sizes", "evaluate_overlaps", "evaluate_ks")] == [
        "150,250", "0,30", "1,3"]
    assert fresh.multiselect(key="evaluate_modes").value == ["dense", "sparse"]
    assert any("Using mein_Satz.jsonl as uploaded earlier" in plain(c.value) for c in fresh.caption)
    next(b for b in fresh.button if b.label == "Run the sweep").click()
    settled(fresh)
    assert not fresh.exception and not fresh.error, fresh.exception or [e.value for e in fresh.error]
    assert not [i for i in fresh.info if plain(i.value).startswith("Choose a query set")]
    table = fresh.dataframe[0].value
    assert sorted(set(zip(table["chunk_size"], table["overlap"], strict=True))) == [
        (150, 0), (150, 30), (250, 0), (250, 30)]
    assert fresh.session_state["evaluate_result"].queries == 20


def test_a_url_naming_a_file_outside_the_kept_query_sets_reads_nothing(env):
    (env / "secret.jsonl").write_text('{"query": "x", "document": "a.txt"}\n')
    at = evaluate_page()
    at.query_params["query_set"] = "../secret.jsonl"
    at.query_params["chunk_size"] = "120"
    at.query_params["modes"] = "dense,<script>"
    fresh = reload(at)
    assert fresh.text_input(key="evaluate_sizes").value == "120"
    assert fresh.multiselect(key="evaluate_modes").value == ["hybrid-convex"]  # a mode the page lacks: the default
    assert not [c for c in fresh.caption if "as uploaded earlier" in plain(c.value)]


def test_counts_on_the_page_are_words_not_plurals_in_brackets(env):
    store = open_store(path=str(env / "qdrant"))
    pipeline.ingest([pipeline.SourceFile("a.txt", "Ein kurzer Text über Köln.".encode())], "documents",
                    ChunkSettings(50, 0), get_embedder("fake:32"), store=store)
    store.close()
    at = evaluate_page()
    at.file_uploader(key="evaluate_query_file").upload("set.jsonl", b'{"query": "x", "document": "b.txt"}\n',
                                                       "application/json")
    at.run()
    set_grid(at, "50", "0", "1")
    error = plain(at.error[0].value)
    assert "1 document named in the query set is not in the 1 document of the sweep" in error, error
    assert "(s)" not in error


@pytest.mark.slow
@pytest.mark.live_jobs
def test_a_cancelled_sweeps_message_goes_once_the_next_sweep_runs(env, hold):
    first = hold("embed_documents")
    at = evaluate_page()
    sample_articles(at)
    set_grid(at, "100,200", "0", "1,5", modes=["dense"])
    assert first.waiting.wait(JOB_WAIT)
    job = newest_sweep()
    at.button(key=f"cancel-sweepjob-{job.id}").click().run()
    second = hold("embed_documents")  # the next sweep waits here
    first.open.set()
    assert jobs.jobs_queue().wait_idle(JOB_WAIT)
    at.run()
    assert any(plain(i.value).startswith("Cancelled: sweep") for i in at.info)
    next(b for b in at.button if b.label == "Run the sweep").click()
    at.run()
    assert second.waiting.wait(JOB_WAIT)
    at.run()
    assert newest_sweep().status == "running"
    assert not [i for i in at.info if plain(i.value).startswith("Cancelled")], [plain(i.value) for i in at.info]
    second.open.set()
    assert jobs.jobs_queue().wait_idle(JOB_WAIT)


@pytest.mark.slow
def test_the_last_used_collection_is_opened_again_after_a_restart(env):
    store = open_store(path=str(env / "qdrant"))
    texts = {"alpha.md": "# Alpha\n\nDie Kündigungsfrist beträgt drei Monate.\n",
             "beta.md": "# Beta\n\nDer Vermieter trägt die Kosten der Instandhaltung.\n"}
    for name, files in (("large", texts), ("small", {"alpha.md": texts["alpha.md"]})):
        pipeline.ingest([pipeline.SourceFile(n, t.encode()) for n, t in files.items()], name, ChunkSettings(),
                        get_embedder("fake:32"), store=store)
    store.close()
    resources._last_used.clear()
    first = evaluate_page()
    assert first.sidebar.selectbox(key="collection_choice").value == "large"  # the largest, on a first start
    first.sidebar.selectbox(key="collection_choice").set_value("small").run()
    resources._last_used.clear()  # the server restarts: what its process held is gone
    assert evaluate_page().sidebar.selectbox(key="collection_choice").value == "small"
    assert list(json.loads((env / "last-collection.json").read_text()).values()) == ["small"]  # in the data root


def test_a_reload_keeps_the_uploaded_documents_and_each_can_be_removed(env):
    imported = import_squad((env / "samples/xquad.json").read_bytes(), articles=2)
    lines = "\n".join(json.dumps(q, ensure_ascii=False) for q in imported.queries[:20]).encode()
    at = evaluate_page()
    at.file_uploader(key="evaluate_query_file").upload("set.jsonl", lines, "application/json")
    at.run()
    at.radio(key="evaluate_documents_from").set_value("Upload documents")
    at.run()
    uploads = [(d.filename, d.text.encode(), "text/plain") for d in imported.documents]
    at.file_uploader(key="evaluate_document_files").set_value(
        [*uploads, ("../../Notiz über Köln.txt", "Köln liegt am Rhein.".encode(), "text/plain")])
    at.run()
    set_grid(at, "150", "0", "1,3")
    assert not at.error, [e.value for e in at.error]
    titles = [d.filename for d in imported.documents]
    assert sorted(at.session_state["evaluate_result"].documents) == sorted([*titles, "Notiz über Köln.txt"])
    kept = env / "evaluate-documents" / at.query_params["documents"]  # under the data root, names made safe
    assert sorted(p.name for p in kept.iterdir()) == sorted(
        ["names.json", "Notiz__ber_K_ln.txt", *(t.replace(" ", "_") for t in titles)])
    assert not (env.parent / "Notiz über Köln.txt").exists()

    fresh = reload(at)  # the uploader is empty now: the kept files stand for it
    assert any("Using 3 documents as uploaded earlier" in plain(c.value) for c in fresh.caption)
    shown = [t.value for t in fresh.text]
    assert [s.split(" · ")[0] for s in shown if s.endswith((" KB", " bytes"))] == [*titles, "Notiz über Köln.txt"]
    next(b for b in fresh.button if b.label == "Run the sweep").click()
    settled(fresh)
    assert not fresh.exception and not fresh.error, fresh.exception or [e.value for e in fresh.error]
    assert not [i for i in fresh.info if plain(i.value).startswith("Choose a query set")]
    result = fresh.session_state["evaluate_result"]
    assert sorted(result.documents) == sorted([*titles, "Notiz über Köln.txt"]) and result.queries == 20

    fresh.button(key="evaluate_forget_Notiz__ber_K_ln.txt").click()  # the analyst removes one
    fresh.run()
    assert any("Using 2 documents as uploaded earlier" in plain(c.value) for c in fresh.caption)
    assert not (kept / "Notiz__ber_K_ln.txt").exists()
    next(b for b in fresh.button if b.label == "Run the sweep").click()
    settled(fresh)
    assert sorted(fresh.session_state["evaluate_result"].documents) == sorted(titles)
    for title in titles:
        fresh.button(key=f"evaluate_forget_{title.replace(' ', '_')}").click()
        fresh.run()
    assert not kept.exists() and "documents" not in fresh.query_params
    next(b for b in fresh.button if b.label == "Run the sweep").click()
    fresh.run()
    assert [i for i in fresh.info if plain(i.value).startswith("Choose a query set and documents first")]


def test_a_url_naming_no_kept_document_set_reads_nothing(env):
    (env / "evaluate-documents").mkdir()
    (env / "secret.txt").write_text("geheim")
    at = evaluate_page()
    at.radio(key="evaluate_documents_from").set_value("Upload documents")
    at.run()
    for name in ("..", "../..", "0123456789ab/../..", "0123456789ab"):
        at.query_params["documents"] = name
        fresh = reload(at)
        assert not [c for c in fresh.caption if "as uploaded earlier" in plain(c.value)]


def test_a_collection_at_its_own_settings_is_searched_as_stored_and_the_page_says_so(env):
    store = open_store(path=str(env / "qdrant"))
    imported = import_squad((env / "samples/xquad.json").read_bytes(), articles=2)
    files = [pipeline.SourceFile(d.filename, d.text.encode()) for d in imported.documents]
    pipeline.ingest(files, "documents", ChunkSettings(300, 30), get_embedder("fake:32"), store=store)
    store.close()
    lines = "\n".join(json.dumps(q, ensure_ascii=False) for q in imported.queries[:20]).encode()
    at = evaluate_page()
    at.file_uploader(key="evaluate_query_file").upload("set.jsonl", lines, "application/json")
    at.run()
    assert at.radio(key="evaluate_documents_from").value == "A collection"
    set_grid(at, "300", "30", "1,3", modes=["dense", "hybrid-rrf"])
    assert not at.error, [e.value for e in at.error]
    result = at.session_state["evaluate_result"]
    assert {r.collection for r in result.results} == {"documents"}
    notes = [plain(c.value) for c in at.caption]
    assert ("Searched 'documents' as stored at its own settings (300/30 child 128): no collection built, no chunk "
            "embedded, only the questions.") in notes
    set_grid(at, "200", "0", "1,3", modes=["dense"])
    assert "Not searched as stored: 'documents' is chunked 300/30, not 200/0; the sweep built its own." in [
        plain(c.value) for c in at.caption]
    assert at.session_state["evaluate_result"].results[0].collection.startswith("sweep-")
