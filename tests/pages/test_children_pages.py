"""Parent–child on the pages: the Upload page makes a collection with children, the Search page shows each hit's
chunk with its matching child marked (escaped) and says the scores came from children; top_k still only cuts
(AppTest, real embedded Qdrant)."""

from __future__ import annotations

import html

from rag.retrieval import SearchRequest
from rag.retrieval.search import SearchMixin
from tests.pages.conftest import PDF, search, start, texts, upload
from ui import nav

QUERY = "Here's to the crazy ones, the misfits"


def test_child_size_from_upload_to_a_marked_child_on_search(app_env, shared_data, monkeypatch):
    at = start()
    at.number_input(key="upload_child_size").set_value(16).run()
    upload(at, shared_data, PDF, "pdfs/crazyones.pdf")
    store = at.session_state["workspace"].store
    assert [c.child_size for c in store.collections()] == [16]
    calls = []
    original = SearchMixin.search_batch
    monkeypatch.setattr(SearchMixin, "search_batch", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    at.switch_page(nav.SEARCH.path).run()
    search(at, QUERY)
    marked = [e.proto.body for e in at.get("html") if 'class="rl-child"' in e.proto.body]
    assert marked, "no hit shows its matching child"
    [hit] = store.search("documents", None, None, SearchRequest(top_k=1, mode="sparse"), query_text="misfits")
    assert hit.child is not None and html.escape(hit.content[hit.child.start:hit.child.end]) in "".join(marked)
    assert "comes from a child" in texts(at.caption)
    assert "best child" in texts(at.caption)
    searched = len(calls)
    at.slider(key="top_k").set_value(3).run()
    assert not at.exception and len(calls) == searched  # a top_k change searches nothing
