"""The Search page's controls after the first search: top_k and the threshold cut the ranking shown, without a
search; mode, fusion, filters and a new query search again (AppTest, real embedded Qdrant)."""

from __future__ import annotations

import re
import time

import pytest

from rag import pipeline
from rag.embeddings import get_embedder
from rag.retrieval import SearchRequest
from rag.retrieval.search import SearchMixin
from tests.pages.conftest import PDF, search, start, texts, upload
from ui import nav

QUERY = "Welche Schriftgröße verwendet die Klasse?"


@pytest.fixture
def engine_calls(monkeypatch):
    """Count the round trips to Qdrant's engine (every search of the page and its distribution goes through one)."""
    calls = []
    original = SearchMixin.search_batch

    def counted(self, *args, **kwargs):
        calls.append(kwargs.get("mode"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SearchMixin, "search_batch", counted)
    return calls


def shown(at) -> list[tuple[str, float]]:
    """Return the hit table's chunks and scores, in order."""
    frame = at.dataframe[0].value
    return list(zip(frame["chunk"], frame["score"].round(6), strict=True))


def expected(at, top_k: int, mode: str = "hybrid") -> list[tuple[str, float]]:
    store = at.session_state["workspace"].store
    hits = pipeline.search(QUERY, "documents", SearchRequest(top_k=top_k, mode=mode), store=store,
                           embedder=get_embedder("fake"))
    return [(h.chunk_index, round(h.score, 6)) for h in hits]


def test_top_k_and_the_threshold_cut_the_ranking_without_searching(app_env, shared_data, engine_calls):
    at = upload(start(), shared_data, PDF, "pdfs/crazyones.pdf").switch_page(nav.SEARCH.path).run()
    search(at, QUERY)
    searched = len(engine_calls)
    assert searched >= 1
    for top_k in (10, 3, 20, 1, 5):
        at.slider(key="top_k").set_value(top_k).run()
        assert not at.exception, at.exception
        assert [c for c, _ in shown(at)] == [c for c, _ in expected(at, top_k)]
        assert [s for _, s in shown(at)] == pytest.approx([s for _, s in expected(at, top_k)], abs=1e-6)
    at.checkbox(key="use_threshold").check().run()
    at.number_input(key="threshold-convex").set_value(0.5).run()
    kept = shown(at)
    assert kept and all(score >= 0.5 for _, score in kept)
    assert len(engine_calls) == searched + 5 * 2  # only the expected() references searched
    at.button_group(key="search_mode").set_value("dense").run()
    assert len(engine_calls) > searched + 10  # another mode is another ranking: searched


def test_a_cut_names_the_search_it_cut_not_a_time_of_its_own(app_env, shared_data):
    at = upload(start(), shared_data, PDF).switch_page(nav.SEARCH.path).run()
    search(at, QUERY)
    took = re.search(r"” in (\d+\.\d\d s|under 0\.01 s) ·", texts(at.caption)).group(1)
    assert took != "0.00 s"
    at.slider(key="top_k").set_value(8).run()
    assert not at.exception, at.exception
    assert f"8 hits for “{QUERY}” cut from the search of {took} ·" in texts(at.caption)
    run = at.session_state["search"]
    assert run.cut and (took == "under 0.01 s") == (run.seconds < 0.005)


def test_reruns_after_a_search_read_no_collection_list_until_the_store_changes(app_env, shared_data, monkeypatch):
    """The sidebar and the collection picker read the listing from a cache keyed by the store's change count
    (and kept LISTING_TTL seconds, for writes by another process: a slow run under load may see one expire)."""
    from rag.store.client import Store
    from ui.resources import LISTING_TTL

    listed: list[float] = []
    original = Store.collections

    def counted(self):
        listed.append(time.monotonic())
        return original(self)

    monkeypatch.setattr(Store, "collections", counted)
    at = upload(start(), shared_data, PDF, "pdfs/crazyones.pdf").switch_page(nav.SEARCH.path).run()
    search(at, QUERY)
    before = len(listed)
    for top_k in (3, 7, 12):
        at.slider(key="top_k").set_value(top_k).run()
    at.checkbox(key="use_threshold").check().run()
    assert not at.exception, at.exception
    gaps = [later - earlier for earlier, later in zip(listed[before - 1 :], listed[before:], strict=False)]
    assert all(gap >= LISTING_TTL - 1 for gap in gaps), gaps  # four reruns: a listing only when the TTL ran out
    written = len(listed)
    upload(at.switch_page(nav.UPLOAD.path).run(), shared_data, "pdfs/multipage.pdf")  # a write: read afresh
    assert len(listed) > written
