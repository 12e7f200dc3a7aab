"""The Search page's diagnostics with AppTest: each hit explained (dense and keyword place, fusion, query words),
and the score distribution over the whole collection with the threshold and the top_k cut drawn on it."""

from __future__ import annotations

import json
from fractions import Fraction

from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

from rag.embeddings import get_embedder
from rag.reports.scores import score_distribution
from rag.retrieval import SearchRequest
from tests.pages.conftest import PDF, plain, search, start, texts, upload
from ui import nav

QUERY = "Welche Schriftgröße verwendet die Klasse?"


def search_page(shared_data, *names: str):
    at = upload(start(), shared_data, *(names or (PDF,)))
    at = at.switch_page(nav.SEARCH.path).run()
    return at.button_group(key="search_mode").set_value("dense").run()  # these tests start from dense search


def charts(at) -> list[dict]:
    """Return each chart's spec, with its datasets (sent apart, as Arrow) as lists of rows under "datasets"."""
    specs = []
    for chart in at.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        spec["datasets"] = {d.name: convert_arrow_bytes_to_pandas_df(d.data.data).to_dict("records")
                            for d in chart.proto.datasets}
        specs.append(spec)
    return specs


def test_hybrid_hits_show_both_lists_and_how_rrf_added_them_up(app_env, shared_data):
    at = search_page(shared_data)
    at.button_group(key="search_mode").set_value("hybrid").run()
    at.selectbox(key="fusion").set_value("rrf").run()
    search(at, QUERY, top_k=8)
    frame = at.dataframe[0].value
    assert {"dense", "keyword", "fused from", "query words in chunk"} <= set(frame)
    for row in frame.to_dict("records"):  # the fused score is exactly the sum the table shows
        parts = [Fraction(p.strip()) for p in row["fused from"].split("+")]
        assert abs(float(sum(parts)) - row["score"]) < 1e-6
        if row["dense rank"] == row["dense rank"]:  # not NaN: the dense column names that place
            assert row["dense"].startswith(f"#{int(row['dense rank'])} · ")
    schrift = frame[frame["heading path"].str.contains("Schriftgrößen")].iloc[0]
    assert "Schriftgröße" in schrift["query words in chunk"] and "Klasse" in schrift["query words in chunk"]
    captions = texts(at.caption)
    assert "dense list: cosine" in captions and "keyword list: BM25" in captions and "fused (RRF): 1/" in captions


def test_dbsf_and_dense_hits_say_which_query_words_they_hold(app_env, shared_data):
    at = search_page(shared_data)
    search(at, "Schriftgrößen Punkt")
    frame = at.dataframe[0].value
    assert "dense" not in frame and "query words in chunk" in frame  # dense mode: one list, nothing fused
    assert any("Schriftgrößen" in words for words in frame["query words in chunk"])
    at.button_group(key="search_mode").set_value("hybrid").run()
    at.selectbox(key="fusion").set_value("dbsf").run()
    search(at, "Schriftgrößen Punkt")
    assert "fused from" not in at.dataframe[0].value  # DBSF normalises scores: no per-rank sum to show
    assert "fused (DBSF): both normalised and added" in texts(at.caption)


def test_score_distribution_draws_the_threshold_and_the_top_k_cut(app_env, shared_data):
    at = search_page(shared_data)
    at.checkbox(key="use_threshold").check()
    at.number_input(key="threshold-cosine").set_value(0.2)
    search(at, QUERY, top_k=3)
    expected = score_distribution(QUERY, "documents", SearchRequest(top_k=3, score_threshold=0.2), store=_store(at),
                                  embedder=get_embedder("fake"))
    histogram, by_rank = charts(at)[:2]
    for chart in (histogram, by_rank):
        labels = [row.get("label") for rows in chart["datasets"].values() for row in rows]
        assert "threshold 0.2" in labels and f"top_k=3 cut {expected.kth_score:.3g}" in labels
    caption = plain(texts(at.caption))
    assert f"all {expected.total} chunks scored · top_k = 3 cuts at {expected.kth_score:.3f}" in caption
    assert f"{expected.above_threshold} chunks reach the threshold 0.2 · the search returns {expected.kept}" in caption
    rows = max(by_rank["datasets"].values(), key=len)  # one row per scored chunk
    assert len(rows) == expected.total and sum(r["returned"] == "returned" for r in rows) == expected.kept


def _store(at):
    """Return the Store the running app uses (an embedded folder can be opened by one client only)."""
    return at.session_state["workspace"].store


def test_keyword_distribution_says_which_chunks_got_no_score(app_env, shared_data):
    at = search_page(shared_data)
    at.button_group(key="search_mode").set_value("sparse").run()
    search(at, "Schriftgrößen")
    caption = plain(texts(at.caption))
    assert "chunks contain no query term, so keyword search gives them no score at all" in caption
    assert "BM25 keyword score" in json.dumps(charts(at)[0])


def test_closing_the_distribution_skips_its_search(app_env, shared_data):
    at = search_page(shared_data)
    search(at, QUERY)
    assert len(at.get("vega_lite_chart")) == 3  # histogram, scores by rank, scores per source
    at.session_state["score_distribution"] = False  # the expander, closed
    at.run()
    assert len(at.get("vega_lite_chart")) == 1 and "chunks scored" not in texts(at.caption)


def test_a_threshold_that_removes_every_hit_still_shows_the_distribution(app_env, shared_data):
    at = search_page(shared_data)
    at.checkbox(key="use_threshold").check()
    at.number_input(key="threshold-cosine").set_value(0.99)
    search(at, QUERY)
    assert "removed all" in texts(at.warning)
    assert "0 chunks reach the threshold 0.99 · the search returns 0" in plain(texts(at.caption))


def test_the_distribution_uses_the_tables_ranking_and_scale(app_env, shared_data):
    at = search_page(shared_data, PDF, "markdown/asvs-de-V2-Authentication.md")  # more chunks than fusion's depth
    at.button_group(key="search_mode").set_value("hybrid").run()
    tables = {}
    for top_k in (5, 50):
        search(at, QUERY, top_k=top_k)
        scores = list(at.dataframe[0].value["score"])
        tables[top_k] = scores
        caption = plain(texts(at.caption))
        assert f"top_k = {top_k} cuts at {scores[top_k - 1]:.3f} (best {scores[0]:.3f})" in caption
    assert len(tables[50]) == 50 and tables[50][:5] == tables[5]  # a larger top_k shows more of the same ranking
