"""The funnel in the app (AppTest, real embedded Qdrant): the Evaluate page's misses by stage agree with
`rag eval --json`, each missed question's stages side by side; the Search page's "why not this one?"."""

from __future__ import annotations

import json

import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

from rag.embeddings import get_embedder
from rag.evaluation.funnel import RANKED, STAGES, explain_chunk
from rag.evaluation.modes import SearchMode
from rag.evaluation.squad import import_squad, write_import
from tests.conftest import run
from tests.pages.conftest import PDF, search, start, upload
from tests.pages.test_evaluate_page import env, evaluate_page, set_grid  # noqa: F401 (env: a fixture)
from ui import nav

QUERY = "Welche Schriftgröße verwendet die Klasse?"


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
    expected = explain_chunk(QUERY, chunk, ws.collection, store=ws.store, embedder=get_embedder("fake"),
                             mode=SearchMode("hybrid", "convex"), k=3)
    for row, stage in zip(frame.to_dict("records"), RANKED, strict=False):
        place = getattr(expected.stages, stage)
        assert (row["rank"] if row["rank"] == row["rank"] else None) == (place.rank if place else None)
        if place:
            assert row["score"] == pytest.approx(place.score)
    assert frame["note"].iloc[4] == expected.stages.context
    words = "Found" if expected.lost_at is None else f"Lost at {expected.lost_at}"
    assert any(c.value.startswith(words) for c in at.caption)
    assert any(chunk.content[:40] in c.value for c in at.code)  # the chunk as text, not Markdown
