"""Judging in a real browser: three hits judged on the Search page are in the downloaded query set; the Evaluate
page shows hole@10 beside MRR."""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.conftest import first_search, settle
from tests.e2e.test_evaluate_browser import start_sweep

pytestmark = pytest.mark.e2e


def test_three_hits_judged_on_the_search_page_are_in_the_downloaded_query_set(app_server, page, shot, shared_data,
                                                                               tmp_path):
    server = app_server(RAG_EMBEDDER="fake", RAG_DATA_ROOT=str(tmp_path))
    first_search(page, server.url, shared_data / "pdfs/hausarbeit-jura.pdf", "Schriftgröße der Klasse")
    page.get_by_test_id("stExpander").filter(has_text="Judge these hits").locator("summary").click()
    page.get_by_text("(0 questions, 0 judgments)", exact=False).first.wait_for()  # drawn on opening
    settle(page)
    for index, label in enumerate(("2 relevant", "1 partly", "0 not relevant")):
        button = page.get_by_role("radio", name=label, exact=True).nth(index)  # a segmented control
        button.scroll_into_view_if_needed()
        button.click()
        judged = "1 judgment" if index == 0 else f"{index + 1} judgments"
        page.get_by_text(f"(1 question, {judged})", exact=False).first.wait_for()  # the caption
        settle(page)
    shot("60-search-judged-hits")
    download = page.get_by_role("button", name=re.compile("Download the query set"))
    download.scroll_into_view_if_needed()
    with page.expect_download(timeout=60_000) as saved:
        download.click()
    path = tmp_path / "downloaded.jsonl"
    saved.value.save_as(path)
    assert saved.value.suggested_filename == "documents.jsonl"
    (line,) = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()]
    assert line["query"] == "Schriftgröße der Klasse"
    assert [(j["grade"], j["by"]) for j in line["judgments"]] == [(2, "person"), (1, "person"), (0, "person")]
    assert {j["document"] for j in line["judgments"]} == {"hausarbeit-jura.pdf"}
    assert len({j["chunk_id"] for j in line["judgments"]}) == 3


def test_the_evaluate_page_shows_hole_at_10_beside_mrr(app_server, page, shot, shared_data, tmp_path):
    start_sweep(app_server, page, shared_data, tmp_path, articles=1, sizes="200", overlaps="0", ks="1,10")
    page.get_by_text(re.compile(r"^Best by mrr@10")).wait_for(timeout=180_000)
    settle(page)
    caption = page.get_by_text(re.compile(r"mrr@10 of the best: [0-9.]+, .* hole@10 [0-9.]+"))
    caption.wait_for()
    assert caption.is_visible()
    page.get_by_role("heading", name="Judge the unjudged hits of this row").scroll_into_view_if_needed()
    shot("61-evaluate-unjudged-hits")
