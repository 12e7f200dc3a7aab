"""The Search page after the other pages: its query, controls, filters and last results come back as left (Streamlit
forgets a widget's value when a run does not draw it, unless the widget keeps it for the session)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.pages.conftest import APP, PDF, search, settled, start, upload
from ui import nav

QUERY = "Wo stehen die Seitenzahlen?"


def test_search_comes_back_as_left_after_a_tour_of_the_other_pages(app_env, shared_data):
    at = upload(start(), shared_data, PDF, "pdfs/crazyones.pdf").switch_page(nav.SEARCH.path).run()
    search(at, QUERY, top_k=4)
    documents = [d.document_id for d in at.session_state["workspace"].documents()]
    at.multiselect(key="document_filter").select(documents[0]).run()
    at.button_group(key="search_mode").set_value("sparse").run()
    at.checkbox(key="use_threshold").check().run()
    at.number_input(key="threshold-BM25").set_value(0.5).run()
    at.checkbox(key="include_toc").check().run()
    assert not at.exception, at.exception
    left = at.session_state["search"]
    for page in (nav.CONTEXT, nav.EVALUATE, nav.EXPERIMENTS, nav.LIBRARY, nav.UPLOAD, nav.SEARCH):
        at.switch_page(page.path).run()
        assert not at.exception, at.exception
    assert at.text_input(key="query").value == QUERY
    assert at.slider(key="top_k").value == 4
    assert at.button_group(key="search_mode").value == "sparse"
    assert at.checkbox(key="use_threshold").value and at.number_input(key="threshold-BM25").value == 0.5
    assert at.checkbox(key="include_toc").value
    assert at.multiselect(key="document_filter").value == [documents[0]]
    run = at.session_state["search"]
    assert run.settings() == left.settings() and run.query == QUERY
    assert [h.chunk_id for h in run.outcome.hits] == [h.chunk_id for h in left.outcome.hits]
    assert f"hits for “{QUERY}”" in " ".join(c.value for c in at.caption)


def test_a_reload_of_the_search_page_searches_again_as_its_url_says(app_env, shared_data):
    """A reload is a new session: the URL brings back the query searched, the controls and the results."""
    at = upload(start(), shared_data, PDF, "pdfs/crazyones.pdf").switch_page(nav.SEARCH.path).run()
    search(at, QUERY, top_k=4)
    documents = [d.document_id for d in at.session_state["workspace"].documents()]
    at.multiselect(key="document_filter").select(documents[1]).run()
    at.checkbox(key="use_threshold").check().run()
    at.number_input(key="threshold-convex").set_value(0.05).run()
    at.slider(key="top_k").set_value(7).run()
    assert not at.exception, at.exception
    left, url = at.session_state["search"], dict(at.query_params)
    assert url["search"] == [QUERY] or url["search"] == QUERY, url

    again = AppTest.from_file(APP, default_timeout=120)
    again.query_params.update({name: value[0] if isinstance(value, list) else value for name, value in url.items()})
    again.run()
    again.switch_page(nav.SEARCH.path).run()
    assert not again.exception, again.exception
    assert again.text_input(key="query").value == QUERY
    assert again.slider(key="top_k").value == 7
    assert again.multiselect(key="document_filter").value == [documents[1]]
    assert again.checkbox(key="use_threshold").value and again.number_input(key="threshold-convex").value == 0.05
    run = again.session_state["search"]
    assert run.settings() == left.settings() and run.query == QUERY
    assert [h.chunk_id for h in run.outcome.hits] == [h.chunk_id for h in left.outcome.hits]


def test_a_reload_with_the_controls_in_the_url_gives_each_widget_one_value(app_env, monkeypatch):
    """A widget given a value and a session-state entry makes Streamlit log 'created with a default value but also
    had its value set via the Session State API' (once per process: the flag is reset here)."""
    import logging

    from streamlit.elements.lib import policies

    at = start()
    at.file_uploader[0].set_value([("one.md", b"Eine Zeile Text", "text/markdown")])
    at.run()
    settled(next(b for b in at.button if b.label.startswith("Ingest")).click())
    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    logger = logging.getLogger(policies.__name__)
    logger.addHandler(handler)
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    try:
        again = AppTest.from_file(APP, default_timeout=120)
        again.query_params.update({"search": "Zeile", "top_k": "7", "threshold_on": "1", "threshold": "convex:0.05"})
        again.run()
        again.switch_page(nav.SEARCH.path).run()
    finally:
        logger.removeHandler(handler)
    assert not again.exception, again.exception
    assert again.slider(key="top_k").value == 7 and again.number_input(key="threshold-convex").value == 0.05
    assert not [m for m in said if "Session State API" in m], said
