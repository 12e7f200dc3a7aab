"""The funnel in the app (AppTest, real embedded Qdrant): the Evaluate page's misses by stage agree with
`rag eval --json`, each missed question's stages side by side; the Search page's "why not this one?"."""

from __future__ import annotations

import html
import json
import re

import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

from rag.embeddings import get_embedder
from rag.evaluation.funnel.stages import RANKED, STAGES, explain_chunk, query_rankings
from rag.evaluation.metrics.modes import SearchMode
from rag.evaluation.querysets.squad import import_squad, write_import
from rag.reports.evaluation_html import sweep_report
from rag.runs.db import RunLog, runs_path_of
from tests.conftest import run
from tests.pages.conftest import PDF, plain, search, start, upload
from tests.pages.test_evaluate_page import env, evaluate_page, set_grid  # noqa: F401 (env: a fixture)
from ui import nav
from ui.state import result_key

QUERY = "Welche Schriftgröße verwendet die Klasse?"


@pytest.mark.slow
def test_evaluate_shows_the_misses_by_stage_as_the_cli_counts_them(env, shared_data, capsys):  # noqa: F811
    at = evaluate_page()
    at.radio(key="evaluate_query_from").set_value("Sample folder")
    at.run()
    at.number_input(key="evaluate_articles").set_value(2)
    at.run()
    set_grid(at, "100", "0", "1,5")
    assert not at.error, [e.value for e in at.error]
    chart = next(c for c in at.get("vega_lite_chart") if '"lost at"' in c.proto.spec)
    frame = convert_arrow_bytes_to_pandas_df(chart.proto.data.data)
    shown = dict(zip(frame["stage"], frame["misses"].astype(int), strict=True))
    assert list(shown) == list(STAGES)
    # the same collection and mode through the command line: the same counts
    result = at.session_state["evaluate_result"].results[0]
    squad = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), "xquad.json", 2)
    write_import(squad, env / "set")
    code, out, _ = run(capsys, "eval", str(env / "set" / "queries.jsonl"), "--collection", result.collection,
                       "--store", str(env / "qdrant"), "--k", "1,5", "--json", "--mode", result.mode.mode,
                       "--fusion", result.mode.fusion, "--embedder", "fake:32", "--no-cache")
    assert code == 0
    funnel = json.loads(out)["funnel"]
    assert funnel["lost_at"] == shown and funnel["misses"] == sum(shown.values()) > 0
    missed = next(d.value for d in at.dataframe if "lost at" in d.value.columns)
    assert len(missed) == funnel["misses"] and set(missed["lost at"]) <= set(STAGES)
    assert list(missed.columns[2:6]) == list(RANKED)
    assert any(f"{funnel['misses']} of {funnel['queries']} answers did not reach the context" in c.value
               for c in at.caption)


@pytest.mark.slow
def test_a_sweeps_funnel_is_the_same_on_the_page_in_its_json_its_report_and_its_kept_run(env, shared_data,  # noqa: F811
                                                                                          capsys):
    at = evaluate_page()
    at.radio(key="evaluate_query_from").set_value("Sample folder")
    at.run()
    at.number_input(key="evaluate_articles").set_value(2)
    at.run()
    set_grid(at, "100,200", "0", "1,5", ["dense", "hybrid-rrf"])
    assert not at.error, [e.value for e in at.error]
    result = at.session_state["evaluate_result"]
    assert at.selectbox(key=result_key("evaluate_funnel_config", result)).value == result.best().label
    assert at.selectbox(key=result_key("evaluate_funnel_k", result)).value == 5
    chart = next(c for c in at.get("vega_lite_chart") if '"lost at"' in c.proto.spec)
    frame = convert_arrow_bytes_to_pandas_df(chart.proto.data.data)
    shown = dict(zip(frame["stage"], frame["misses"].astype(int), strict=True))
    missed = next(d.value for d in at.dataframe if "lost at" in d.value.columns)
    caption = next(c.value for c in at.caption if "answers did not reach the context" in c.value)

    data = result.to_json(per_query=True)  # what "Results as JSON" downloads, as `rag sweep --json`
    funnel = data["funnel"]
    assert funnel["lost_at"] == shown and funnel["misses"] == len(missed) == sum(shown.values()) > 0
    assert funnel["k"] == 5 and funnel["row"] == result.best().short and data["best"]["funnel"]["lost_at"] == shown
    assert [m["query"] for m in funnel["missed"]] == list(missed["query"])
    assert [m["lost_at"] for m in funnel["missed"]] == list(missed["lost at"])
    assert all(row["funnel"]["misses"] == sum(row["funnel"]["lost_at"].values()) for row in data["configs"])
    best = next(row for row in data["configs"] if row["funnel"] == data["best"]["funnel"])
    assert sum(q["lost_at"] is not None for q in best["per_query"]) == funnel["misses"]
    for stage in RANKED:
        ranks = [m["stages"][stage]["rank"] if m["stages"][stage] else None for m in funnel["missed"]]
        assert ranks == [None if v is None or v != v else int(v) for v in missed[stage]]

    report = sweep_report(result)  # the HTML report: the same counts and words
    counts = dict(re.findall(r'<tr><td class="text">(\w+)</td><td>(\d+)</td>', report))
    assert {stage: int(n) for stage, n in counts.items()} == shown
    assert html.escape(f"{funnel['misses']} of {funnel['queries']} answers did not reach the context") in report
    assert f"{funnel['misses']} of {funnel['queries']} answers" in caption
    assert all(html.escape(query) in report for query in missed["query"])

    log = RunLog(runs_path_of(at.session_state["workspace"].store))  # the run kept in the runs store
    kept = log.run(log.runs()[0]["id"])
    assert kept["rows"][kept["best"]]["funnel"] == data["best"]["funnel"]
    assert f"{funnel['misses']} of {funnel['queries']} answers did not reach" in html.unescape(log.report(kept["id"]))

    # `rag sweep --json` on the same articles: the same funnel
    squad = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), "xquad.json", 2)
    write_import(squad, env / "set")
    code, out, err = run(capsys, "sweep", *sorted(str(p) for p in (env / "set").glob("*.txt")), "--queries",
                         str(env / "set" / "queries.jsonl"), "--chunk-size", "100,200", "--overlap", "0", "--k",
                         "1,5", "--mode", "dense,hybrid-rrf", "--embedder", "fake:32", "--store", str(env / "qdrant"),
                         "--no-cache", "--json")
    assert code == 0, err
    cli = json.loads(out)["funnel"]
    assert (cli["row"], cli["lost_at"], cli["misses"]) == (funnel["row"], shown, funnel["misses"])


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
def test_search_explains_a_chosen_chunk_across_modes(shared_data):
    at = upload(start(), shared_data, PDF).switch_page(nav.SEARCH.path).run()
    search(at, QUERY, top_k=3)
    at.session_state["why_not"] = True  # the expander, opened
    at.run()
    assert not at.exception, at.exception
    at.number_input(key="why_chunk").set_value(4).run()
    frame = next(d.value for d in at.dataframe if "stage" in d.value.columns)
    assert list(frame["stage"]) == [*RANKED, "context", "read whole"]
    ws = at.session_state["workspace"]
    document = at.selectbox(key="why_document").value
    chunk = ws.document_chunks(document)[4]
    expected = explain_chunk(QUERY, chunk, ws.collection, SearchMode("hybrid", "convex").request(3),
                             store=ws.store, embedder=get_embedder("fake"))
    for row, stage in zip(frame.to_dict("records"), RANKED, strict=False):
        place = getattr(expected.stages, stage)
        assert (row["rank"] if row["rank"] == row["rank"] else None) == (place.rank if place else None)
        if place:
            assert row["score"] == pytest.approx(place.score)
    assert frame["note"].iloc[4] == expected.stages.context
    words = "Found" if expected.lost_at is None else f"Lost at {expected.lost_at}"
    assert any(c.value.startswith(words) for c in at.caption)
    assert any(chunk.content[:40] in c.value for c in at.code)  # the chunk as text, not Markdown


@pytest.mark.usefixtures("app_env")
def test_why_not_searches_once_per_query_whatever_the_chunk_or_top_k(shared_data, monkeypatch):
    from ui.parts import funnel as funnel_part

    searched = []
    monkeypatch.setattr(funnel_part, "query_rankings",
                        lambda *a, **kw: searched.append(a) or query_rankings(*a, **kw))
    at = upload(start(), shared_data, PDF).switch_page(nav.SEARCH.path).run()
    search(at, QUERY, top_k=3)
    at.session_state["why_not"] = True  # the expander, opened
    at.run()
    at.number_input(key="why_chunk").set_value(4).run()
    at.slider(key="top_k").set_value(6).run()
    assert not at.exception, at.exception
    assert len(searched) == 1, searched
    assert any("top 6." in plain(c.value) for c in at.caption), [c.value for c in at.caption]
    frame = next(d.value for d in at.dataframe if "stage" in d.value.columns)
    ws = at.session_state["workspace"]
    chunk = ws.document_chunks(at.selectbox(key="why_document").value)[4]
    expected = explain_chunk(QUERY, chunk, ws.collection, SearchMode("hybrid", "convex").request(6),
                             store=ws.store, embedder=get_embedder("fake"))
    assert [r if r == r else None for r in frame["rank"]][:len(RANKED)] == [
        getattr(expected.stages, stage).rank if getattr(expected.stages, stage) else None for stage in RANKED]
    search(at, "Wie wird Literatur eingebunden?", top_k=6)  # a new query: searched again
    assert len(searched) == 2, searched


def test_why_not_says_where_a_chunk_was_lost_as_its_rows_show_it(shared_data):
    """A collection smaller than the candidate lists: a chunk no query word matches is "not matched", never "not
    among the 50 candidates", and the verdict names the ranks shown in the rows (hybrid, top 4)."""
    at = upload(start(), shared_data, PDF).switch_page(nav.SEARCH.path).run()
    search(at, "Wo stehen die Seitenzahlen?", top_k=4)
    at.session_state["why_not"] = True  # the expander, opened
    at.run()
    ws = at.session_state["workspace"]
    chunks = ws.document_chunks(at.selectbox(key="why_document").value)
    analyzer = ws.store.analyzer(ws.collection)
    checked = {"dense": 0, "keyword": 0, "unmatched": 0}
    for number, chunk in enumerate(chunks):
        at.number_input(key="why_chunk").set_value(number).run()
        assert not at.exception, at.exception
        frame = next(d.value for d in at.dataframe if "stage" in d.value.columns).set_index("stage")
        notes = " ".join(str(n) for n in frame["note"])
        assert "not among the" not in notes, (number, notes)  # 21 chunks cannot be "not among 50"
        verdict = next(plain(c.value) for c in at.caption if plain(c.value).startswith(("Lost at", "Found")))
        matched = analyzer.matching_words("Wo stehen die Seitenzahlen?", chunk.content, chunk.payload["language"])
        keyword = frame.loc["keyword", "rank"]
        if keyword != keyword:  # not in the keyword list: no query word holds it
            assert not matched and frame.loc["keyword", "note"] == "no query word matches it", (number, matched)
            checked["unmatched"] += 1
        lost = re.match(r"Lost at (\w+): ", verdict)
        if lost and lost.group(1) in ("dense", "keyword"):
            dense = int(frame.loc["dense", "rank"])
            assert dense > 4 and f"the dense list ranked it #{dense} of " in verdict, verdict
            if keyword != keyword:
                assert "the keyword list does not hold it (no query word matches it)" in verdict, verdict
            else:
                assert int(keyword) > 4 and f"the keyword list ranked it #{int(keyword)} of " in verdict, verdict
            checked[lost.group(1)] += 1
    assert checked["keyword"] and checked["unmatched"], checked
