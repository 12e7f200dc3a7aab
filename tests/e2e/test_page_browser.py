""""Show on page" in a real browser: the first hit's toggle draws its PDF page as an image with the chunk marked."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from rag.documents.render import COLOURS
from tests.e2e.conftest import first_search, settle

pytestmark = pytest.mark.e2e


def test_show_on_page_draws_the_first_hits_page(app_server, page, shot, shared_data, tmp_path):
    server = app_server(RAG_EMBEDDER="fake", RAG_DATA_ROOT=str(tmp_path))
    first_search(page, server.url, shared_data / "pdfs/hausarbeit-jura.pdf", "Schriftgröße der Klasse")
    hit = page.get_by_test_id("stExpander").filter(has_text="#1 ·").first
    assert hit.get_by_test_id("stImage").count() == 0  # nothing drawn before it is asked for
    toggle = hit.get_by_text("Show on page", exact=True)
    toggle.scroll_into_view_if_needed()
    toggle.click()
    image = hit.get_by_test_id("stImage").locator("img").first
    image.wait_for()
    settle(page)
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    assert image.evaluate("img => img.naturalWidth") == 760
    assert hit.get_by_text("Page ", exact=False).filter(has_text="amber: the chunk").first.is_visible()
    image.scroll_into_view_if_needed()
    drawn = Image.open(io.BytesIO(image.screenshot())).convert("RGB")
    amber = sum(1 for p in drawn.getdata() if all(abs(a - b) < 40 for a, b in zip(p, COLOURS["chunk"], strict=True)))
    assert amber > 50  # the chunk's outline is on the page the browser shows
    toggle.evaluate("e => e.scrollIntoView({block: 'start'})")  # the toggle, then the page under it
    shot("70-search-show-on-page")
