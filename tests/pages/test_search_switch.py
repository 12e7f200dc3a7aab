"""Switching the collection on the Search page searches the query there (issue 39, item 8): the results stay a search,
never an empty page that asks for the query typed a moment ago."""

from __future__ import annotations

from pathlib import Path

from rag import ingest
from rag.documents import SourceFile
from tests.pages.conftest import PDF, plain, search, start, texts, upload
from ui import nav, resources

QUERY = "Wo stehen die Seitenzahlen?"


def test_switching_the_collection_on_search_searches_the_query_there(app_env, shared_data: Path):
    at = upload(start(), shared_data, PDF).switch_page(nav.SEARCH.path).run()
    ws = at.session_state["workspace"]
    stored = ingest([SourceFile("crazyones.pdf", (shared_data / "pdfs/crazyones.pdf").read_bytes())], "other",
                    embedder=ws.embedder_for("other"), store=ws.store)
    assert stored[0].ok
    resources.store_changed()  # as an ingest job of the app says after it stored
    at.run()
    search(at, QUERY, top_k=3)
    first = at.session_state["search"]
    assert first.collection == ws.collection and first.outcome.hits

    at.selectbox(key="search_collection").set_value("other").run()
    at.run()  # the sidebar applies the pending collection on the next run, as a click's rerun does
    assert not at.exception, at.exception
    run = at.session_state["search"]
    assert run.collection == "other" and run.query == QUERY
    assert run.outcome.hits and {h.document_title for h in run.outcome.hits} == {"crazyones.pdf"}
    assert f"for “{QUERY}”" in texts(at.caption)
    assert "Type a query" not in texts(at.caption)
    assert plain(at.text_input(key="query").value) == QUERY
