"""The search-diagnostics views in a real browser: hit explanations and the score distribution on Search, Compare
(one query and a query set, dense vs hybrid) and the Embedding map, on real PDFs and German Markdown.

Screenshots go to the test's tmp_path (and to $RAG_SCREENSHOTS, e.g. /tmp/ragshots6, when set).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import go, search, settle

pytestmark = pytest.mark.e2e
SAMPLES = ["pdfs/hausarbeit-jura.pdf", "pdfs/crazyones.pdf", "markdown/asvs-de-V2-Authentication.md",
           "markdown/asvs-de-Using-ASVS.md"]
QUERY_SET = [
    {"query": "Welche Schriftgröße verwendet die Klasse?", "document": "hausarbeit-jura.pdf"},
    {"query": "Wie wird Literatur eingebunden?", "document": "hausarbeit-jura.pdf"},
    {"query": "Passwortlänge mindestens 12 Zeichen", "document": "asvs-de-V2-Authentication.md"},
    {"query": "Mehrfaktor-Authentifizierung", "document": "asvs-de-V2-Authentication.md"},
    {"query": "Wie benutzt man den ASVS?", "document": "asvs-de-Using-ASVS.md"},
    {"query": "misfits rebels troublemakers", "document": "crazyones.pdf"},
]


@pytest.fixture
def sample_folder(tmp_path: Path, shared_data: Path) -> Path:
    folder = tmp_path / "samples"
    folder.mkdir()
    for name in SAMPLES:
        shutil.copy(shared_data / name, folder / Path(name).name)
    return folder


def segment(page, option: str) -> None:
    """Click an option of a segmented control (a button group) by its text."""
    page.get_by_test_id("stButtonGroup").get_by_role("radio", name=option, exact=True).click()
    settle(page)


def test_search_compare_and_map_views(app_server, page, shot, sample_folder, tmp_path):
    server = app_server(RAG_EMBEDDER="fake", RAG_SAMPLE_DIR=str(sample_folder))
    page.goto(server.url)
    page.get_by_role("button", name="Load the 4 sample documents").click()
    page.get_by_text("4 of 4 files ingested.").wait_for(timeout=120_000)
    settle(page)

    go(page, "Search")
    segment(page, "Dense")
    page.get_by_text("Score threshold").click()
    search(page, "Welche Schriftgröße verwendet die Klasse?")
    page.get_by_text(re.compile(r"chunks scored · top_k = 5 cuts at")).wait_for()
    settle(page)
    page.get_by_test_id("stVegaLiteChart").nth(2).wait_for()  # charts draw after the run ends: wait, then count
    assert page.get_by_test_id("stVegaLiteChart").count() >= 3  # histogram, scores by rank, scores per source
    page.get_by_text(re.compile(r"5 hits? for")).evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    shot("31-search-distribution-dense")
    segment(page, "Hybrid")
    search(page, "Welche Schriftgröße verwendet die Klasse?")
    page.get_by_text(re.compile(r"hits? for .* hybrid \(convex\)")).wait_for()
    settle(page)
    page.get_by_text(re.compile(r"fused \(convex\): w × dense")).first.wait_for()
    shot("32-search-hybrid-explained")
    shot("32-search-hybrid-full", full_page=True)

    go(page, "Compare")
    page.get_by_label("Query", exact=True).fill("Welche Schriftgröße verwendet die Klasse?")
    page.get_by_role("button", name="Compare", exact=True).click()
    page.get_by_text(re.compile(r"Result for “Welche Schriftgröße verwendet die Klasse\?”, top 10 each")).wait_for()
    settle(page)
    page.get_by_test_id("stDataFrame").nth(1).wait_for()  # tables draw after the run ends: wait, then count
    assert page.get_by_test_id("stDataFrame").count() == 2  # A and B side by side
    shot("33-compare-query")
    shot("33-compare-query-full", full_page=True)
    queries = tmp_path / "fragen.jsonl"
    queries.write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in QUERY_SET), encoding="utf-8")
    segment(page, "Query set")
    page.locator("input[type=file]").set_input_files(str(queries))
    page.get_by_text("fragen.jsonl").first.wait_for()
    page.get_by_role("button", name="Compare", exact=True).click()
    page.get_by_role("heading", name="Per query").wait_for(timeout=60_000)
    settle(page)
    shot("34-compare-query-set", full_page=True)

    go(page, "Embedding map")
    page.get_by_text(re.compile(r"all \d+ chunks of 'documents' · PCA")).wait_for(timeout=60_000)
    page.get_by_text(re.compile(r"5 hits of .* ringed and numbered")).wait_for()
    settle(page)
    shot("35-embedding-map")
    chart = page.get_by_test_id("stVegaLiteChart").first
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    found = False
    for height in (0.45, 0.35, 0.55, 0.25, 0.65):  # find a chunk under the pointer: its tooltip appears
        for dx in range(0, 400, 4):
            page.mouse.move(box["x"] + 60 + dx, box["y"] + box["height"] * height)
            if page.locator("#vg-tooltip-element.visible").count():
                found = True
                break
        if found:
            break
    page.locator("#vg-tooltip-element.visible").wait_for()
    assert "starts with" in page.locator("#vg-tooltip-element").inner_text()
    shot("35b-embedding-map-tooltip")
    page.mouse.down()
    page.mouse.up()
    page.get_by_test_id("stCode").first.wait_for()
    settle(page)
    shot("35c-embedding-map-clicked", full_page=True)
    segment(page, "Heading")
    page.get_by_text(re.compile(r"colour: \d+ headings")).wait_for()
    settle(page)
    shot("36-embedding-map-headings")


def test_evaluate_with_three_modes_keeps_charts_and_legends_on_screen(app_server, page, shot, tmp_path, shared_data):
    samples = tmp_path / "squad"
    samples.mkdir()
    shutil.copy(shared_data / "xquad-de/xquad.de.dev.json", samples / "xquad.json")
    server = app_server(RAG_EMBEDDER="fake", RAG_SAMPLE_DIR=str(samples), RAG_EMBEDDING_CACHE=str(tmp_path / "c"))
    page.goto(server.url + "/evaluate")
    page.get_by_role("heading", name="Evaluate", level=1).wait_for()
    page.get_by_text("Sample folder").click()
    settle(page)
    page.get_by_label("SQuAD articles to use", exact=True).fill("1")
    page.get_by_label("SQuAD articles to use", exact=True).press("Enter")
    settle(page)
    page.get_by_label("chunk_size values").fill("100,200")
    page.get_by_label("overlap values").fill("0,50")
    modes = page.get_by_test_id("stMultiSelect")
    for mode in ("dense", "sparse"):
        modes.click()
        page.get_by_role("option", name=mode, exact=True).click()
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Run the sweep").click()
    page.get_by_text(re.compile("Best by mrr@10")).wait_for(timeout=120_000)
    settle(page)
    charts = page.locator("[data-testid='stVegaLiteChart']")
    charts.first.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    shot("40-evaluate-three-modes")
    main = page.get_by_test_id("stMainBlockContainer").bounding_box()
    for index in range(2):  # hit@k and the heatmap: one panel per mode, inside the page, legends included
        box = charts.nth(index).bounding_box()
        assert box["x"] + box["width"] <= main["x"] + main["width"] + 2, (index, box, main)
        assert charts.nth(index).locator("svg g.mark-group.role-legend, .role-legend").count() >= 1
