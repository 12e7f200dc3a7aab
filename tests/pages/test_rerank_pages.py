"""The reranking control on the Search, Context and Evaluate pages (AppTest, real Qdrant, the loopback stand-in
reranker): off by default, the hits reordered on the reranker's own scale, errors as one line."""

from __future__ import annotations

import html

import pytest

from rag.evaluation.sweeps.rerank_effect import effect_note, effect_words
from rag.reports.evaluation_html import sweep_report
from rag.store.open import open_store
from tests.conftest import run
from tests.pages.conftest import PDF, button, plain, search, settled, start, upload
from tests.rerank.stand_in import RerankServer, overlap
from ui import nav

QUERY = "Welche Schriftgröße verwendet die Klasse?"
pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def server():
    stand_in = RerankServer()
    yield stand_in
    stand_in.close()


@pytest.mark.slow
def test_search_and_context_rerank_with_the_control_and_say_a_bad_spec_in_one_line(app_env, shared_data, server,
                                                                                  monkeypatch):
    monkeypatch.setenv("TEI_URL", server.url)  # the operator's reranker: visitors may use it
    at = upload(start(), shared_data, PDF).switch_page(nav.SEARCH.path).run()
    assert at.text_input(key="rerank_spec").value == ""  # off by default
    search(at, QUERY, top_k=5)
    assert "before rerank" not in at.dataframe[0].value.columns and server.requests == []
    at.text_input(key="rerank_spec").set_value(f"tei:{server.url}")
    at.number_input(key="rerank_depth").set_value(8).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    run = at.session_state["search"]
    frame = at.dataframe[0].value
    assert len(server.texts_seen) == 1 and len(server.texts_seen[0]) == 8
    assert [h.score for h in run.outcome.hits] == [overlap(QUERY, h.content) for h in run.outcome.hits]
    assert list(frame["score"].round(6)) == [round(h.score, 6) for h in run.outcome.hits]
    assert list(frame["score"]) == sorted(frame["score"], reverse=True) and "before rerank" in frame.columns
    assert any("reranked by tei:" in plain(c.value) for c in at.caption)
    assert at.checkbox(key="use_threshold").disabled  # the reranker's scale is its own

    at.switch_page(nav.CONTEXT.path).run()
    assert not at.exception, at.exception
    assert at.text_input(key="rerank_spec").value == f"tei:{server.url}"
    included = at.dataframe[0].value
    assert list(included["score"].round(6)) == [round(h.score, 6) for h in run.outcome.hits][:len(included)]
    at.text_input(key="rerank_spec").set_value("").run()  # off again: the same search without the reranker
    assert at.session_state["search"].rerank == ("", 0) and len(server.requests) == 1

    at.switch_page(nav.SEARCH.path).run()
    at.text_input(key="rerank_spec").set_value("bm25:x").run()
    assert len(at.error) == 1 and "Unknown reranker 'bm25:x'" in plain(at.error[0].value)
    at.text_input(key="rerank_spec").set_value(f"local:{app_env.parent}").run()  # a folder outside the data root
    assert len(at.error) == 1 and "outside the data root" in plain(at.error[0].value)
    other = RerankServer()
    try:  # a server the operator did not configure never gets the documents' text
        at.text_input(key="rerank_spec").set_value(f"tei:{other.url}").run()
        assert len(at.error) == 1 and "only the one in TEI_URL is allowed" in plain(at.error[0].value)
        assert other.requests == []
    finally:
        other.close()


@pytest.mark.slow
def test_a_sweep_with_a_reranker_runs_each_mode_off_and_on_and_says_whether_it_helps(app_env, shared_data, server,
                                                                                     monkeypatch):
    monkeypatch.setenv("TEI_URL", server.url)
    samples = app_env / "samples"
    samples.mkdir()
    (samples / "xquad.json").write_bytes((shared_data / "xquad-de/xquad.de.dev.json").read_bytes())
    at = start(nav.EVALUATE.path)
    at.radio(key="evaluate_query_from").set_value("Sample folder").run()
    at.number_input(key="evaluate_articles").set_value(2).run()
    at.multiselect(key="evaluate_modes").set_value(["dense"])
    at.text_input(key="evaluate_sizes").set_value("100")
    at.text_input(key="evaluate_overlaps").set_value("0")
    at.text_input(key="evaluate_ks").set_value("1,5")
    at.text_input(key="rerank_spec").set_value(f"tei:{server.url}")
    at.number_input(key="rerank_depth").set_value(20)
    settled(button(at, "Run the sweep").click())
    assert not at.exception and not at.error, [e.value for e in at.error]
    result = at.session_state["evaluate_result"]
    assert result.modes == ["dense", "dense+rerank"] and result.rerank["depth"] == 20
    assert [s.value for s in at.subheader if "Does reranking help?" in s.value]
    (_, _, test), = result.rerank_effect("mrr@5")
    said = "helps" if not test.tied and test.difference > 0 else "hurts" if not test.tied else "cannot tell"
    assert any(f"rerank {said}" in plain(m.value) for m in at.markdown)
    # the HTML report says the same: each line of the page, and what they rest on
    lines = effect_words(result.rerank_effect("mrr@5"), "mrr@5")
    shown = next(plain(m.value) for m in at.markdown if plain(m.value).startswith("- ") and "rerank " in m.value)
    assert shown == "\n".join(f"- {line}" for line in lines)
    assert any(plain(c.value) == effect_note(result.rerank) for c in at.caption)
    report = sweep_report(result, "mrr@5")
    assert "Does reranking help? (mrr@5)" in report
    assert all(f"<li>{html.escape(line)}</li>" in report for line in lines)
    assert html.escape(effect_note(result.rerank)) in report
    on = next(row for row in result.results if row.mode.rerank)  # the reranked row's funnel, traced with it
    assert on.funnel is not None and on.funnel.misses == sum(on.funnel.lost_at.values())
    assert all(f.stages is None or f.stages.reranked is not None or f.lost_at is not None for f in on.funnels)


@pytest.mark.slow
def test_the_pages_prefill_a_collections_saved_reranker_when_the_collection_changes(app_env, shared_data, server,
                                                                                  monkeypatch, capsys):
    monkeypatch.setenv("TEI_URL", server.url)
    saved, store = f"tei:{server.url}", str(app_env / "qdrant")
    for name, collection in ((PDF, "documents"), ("pdfs/crazyones.pdf", "other")):
        assert run(capsys, "ingest", str(shared_data / name), "--collection", collection, "--embedder", "fake",
                   "--store", store)[0] == 0
    opened = open_store(path=store)
    opened.save_collection_setting("documents", "rerank", saved)  # as sweep --apply-best does
    opened.close()
    at = start(nav.SEARCH.path)
    at.selectbox(key="search_collection").set_value("documents").run()
    assert at.selectbox(key="search_collection").value == "documents"
    assert at.text_input(key="rerank_spec").value == saved
    said = "The reranker saved with 'documents'"
    assert any(said in plain(c.value) for c in at.caption)
    search(at, QUERY, top_k=5)
    assert len(server.requests) == 1 and at.session_state["search"].rerank[0] == saved
    for page in (nav.CONTEXT.path, nav.EVALUATE.path):  # the same collection: the same reranker, said so
        at.switch_page(page).run()
        assert not at.exception, at.exception
        assert at.text_input(key="rerank_spec").value == saved
        assert any(said in plain(c.value) for c in at.caption)

    at.switch_page(nav.SEARCH.path).run()
    at.text_input(key="rerank_spec").set_value("").run()  # the user may turn it off: it stays off
    at.switch_page(nav.CONTEXT.path).run()
    assert at.text_input(key="rerank_spec").value == "" and not any(said in plain(c.value) for c in at.caption)
    at.switch_page(nav.SEARCH.path).run()
    assert at.text_input(key="rerank_spec").value == ""

    at.selectbox(key="search_collection").set_value("other").run()  # a collection without one: off
    assert at.text_input(key="rerank_spec").value == ""
    at.selectbox(key="search_collection").set_value("documents").run()  # back: its saved reranker again
    assert at.text_input(key="rerank_spec").value == saved
    assert any(said in plain(c.value) for c in at.caption)
    at.selectbox(key="search_collection").set_value("other").run()  # a pre-filled one goes with its collection
    assert at.text_input(key="rerank_spec").value == ""
    assert not any("The reranker saved with" in plain(c.value) for c in at.caption)
    at.text_input(key="rerank_spec").set_value(saved).run()  # typed by the user: kept on a change
    at.selectbox(key="search_collection").set_value("documents").run()
    assert at.text_input(key="rerank_spec").value == saved
    assert not at.exception and not at.error, [e.value for e in at.error]
