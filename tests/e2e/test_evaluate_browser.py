"""The Evaluate page in a real browser: a sweep of XQuAD articles, its ties in words, its interval charts and the
report it downloads."""

from __future__ import annotations

import re
import shutil

import pytest
from playwright.sync_api import expect

from rag.reports.evaluation_html import CSP
from tests.e2e.conftest import go, settle, upload

pytestmark = pytest.mark.e2e


def start_sweep(app_server, page, shared_data, tmp_path, *, articles: int, sizes: str, overlaps: str,
                ks: str = "1,5") -> None:
    """Start the app on XQuAD as its sample folder (fake embedder) and run a sweep of its first articles."""
    samples = tmp_path / "samples"
    samples.mkdir()
    shutil.copy(shared_data / "xquad-de/xquad.de.dev.json", samples / "xquad.json")
    server = app_server(RAG_EMBEDDER="fake", RAG_SAMPLE_DIR=str(samples))
    page.goto(server.url)
    go(page, "Evaluate")
    page.get_by_text("Sample folder", exact=True).click()
    settle(page)
    box = page.get_by_role("spinbutton", name="SQuAD articles to use")
    box.fill(str(articles))
    box.press("Enter")
    settle(page)
    page.get_by_label("chunk_size values").fill(sizes)
    page.get_by_label("overlap values").fill(overlaps)
    page.get_by_label("k values").fill(ks)
    page.get_by_role("button", name="Run the sweep").click()


def test_a_sweep_shows_best_ties_and_error_bars_and_downloads_its_report(app_server, page, shot, shared_data, tmp_path):
    start_sweep(app_server, page, shared_data, tmp_path, articles=2, sizes="100,200", overlaps="0,50")
    page.get_by_text(re.compile(r"^Best by mrr@5")).wait_for(timeout=180_000)
    settle(page)
    words = page.get_by_text(re.compile(r"(are indistinguishable by mrr@5|every other configuration is worse)"))
    assert words.first.is_visible()
    page.get_by_text("mrr@5 with its 95 % interval", exact=True).wait_for()
    chart = page.get_by_test_id("stVegaLiteChart").first
    chart.wait_for()
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 100
    page.wait_for_timeout(500)
    shot("40-evaluate-ties-and-intervals")
    shot("41-evaluate-full", full_page=True)
    button = page.get_by_role("button", name=re.compile("Download report \\(HTML\\)"))
    button.scroll_into_view_if_needed()
    shot("52-evaluate-export-buttons")
    with page.expect_download(timeout=180_000) as download:  # built on click: slow on a loaded machine
        button.click()
    saved = tmp_path / "downloaded.html"
    download.value.save_as(saved)
    assert re.fullmatch(r"sweep-[0-9-]+T\d{4}\.html", download.value.suggested_filename)
    text = saved.read_text(encoding="utf-8")
    assert f'content="{CSP}"' in text and "<h1>Sweep: mrr@5 of " in text and '<tr class="best">' in text


def test_a_reload_during_a_sweep_keeps_it_running_and_shows_its_result(app_server, page, shot, shared_data, tmp_path):
    start_sweep(app_server, page, shared_data, tmp_path, articles=3, sizes="100,150,200", overlaps="0")
    page.get_by_text(re.compile(r"^(Waiting|Running): sweep of 3 configuration")).wait_for(timeout=120_000)
    shot("43-evaluate-sweep-running")
    page.reload()  # on main this ended the script run, and with it the sweep (a sweep that ended already: the
    # new session shows its result all the same)
    page.get_by_text(re.compile(r"^Best by mrr@5")).wait_for(timeout=300_000)
    settle(page)
    page.get_by_test_id("stDataFrame").first.wait_for()  # tables draw after the run ends: wait for them
    page.get_by_role("button", name=re.compile("Download report \\(HTML\\)")).wait_for()


def sweep_uploads(app_server, page, shared_data, tmp_path):
    """Upload a query set and two documents on Evaluate, run a sweep; return the imported SQuAD set."""
    import json

    from rag.evaluation.querysets.squad import import_squad

    imported = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=2)
    (tmp_path / "set.jsonl").write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in imported.queries[:20]))
    paths = []
    for document in imported.documents:
        paths.append(tmp_path / document.filename)
        paths[-1].write_text(document.text, encoding="utf-8")
    server = app_server(RAG_EMBEDDER="fake", RAG_DATA_ROOT=str(tmp_path / "data"))
    page.goto(server.url)
    go(page, "Evaluate")
    page.get_by_test_id("stFileUploader").first.locator("input[type=file]").set_input_files(str(tmp_path / "set.jsonl"))
    settle(page)
    page.get_by_text("Upload documents", exact=True).click()
    settle(page)
    page.get_by_test_id("stFileUploader").nth(1).locator("input[type=file]").set_input_files([str(p) for p in paths])
    settle(page)
    page.get_by_label("chunk_size values").fill("150")
    page.get_by_label("overlap values").fill("0")
    settle(page)
    page.get_by_role("button", name="Run the sweep").click()
    page.get_by_text(re.compile(r"^Best by mrr@10")).wait_for(timeout=180_000)
    settle(page)
    return imported


def test_a_reload_keeps_the_uploaded_documents_ready_for_the_sweep(app_server, page, shot, shared_data, tmp_path):
    imported = sweep_uploads(app_server, page, shared_data, tmp_path)
    page.reload()  # the uploaders are empty now: the kept files stand for them
    page.get_by_text("Using 2 documents as uploaded earlier; upload others to replace them.").wait_for(timeout=60_000)
    settle(page)
    for document in imported.documents:
        assert page.get_by_text(re.compile(rf"^{re.escape(document.filename)} · ")).is_visible()
    shot("44-evaluate-kept-documents")
    page.get_by_role("button", name="Run the sweep").click()
    page.get_by_text(re.compile(r"^Best by mrr@10")).wait_for(timeout=180_000)
    settle(page)
    assert page.get_by_text("20 queries on 2 documents", exact=False).first.is_visible()
    shot("45-evaluate-kept-documents-swept", full_page=True)


def test_a_trip_through_the_sidebar_keeps_the_inputs_and_the_url_names_them(app_server, page, shot, shared_data,
                                                                            tmp_path):
    sweep_uploads(app_server, page, shared_data, tmp_path)
    named = re.search(r"documents=([0-9a-f]+)", page.url)
    assert named and "query_set=set.jsonl" in page.url, page.url
    go(page, "Experiments")
    go(page, "Evaluate")  # the sidebar drops the URL's parameters and the state of the widgets not drawn
    page.get_by_text("Using 2 documents as uploaded earlier; upload others to replace them.").wait_for(timeout=60_000)
    page.get_by_text("Using set.jsonl as uploaded earlier; upload another to replace it.").wait_for()
    settle(page)
    assert f"documents={named.group(1)}" in page.url and "query_set=set.jsonl" in page.url, page.url
    assert page.get_by_label("chunk_size values").input_value() == "150"
    assert not page.get_by_text("This result is of earlier inputs", exact=False).count()
    shot("46-evaluate-after-sidebar-round-trip", full_page=True)


ROW_PICKERS = ("Configuration and mode", "Row")  # the selectors over a sweep's rows: ranks, failures, apply, why


def shown_rows(page) -> dict[str, list[str]]:
    """Return what each selector over the sweep's rows displays, by its label (three share one label)."""
    shown: dict[str, list[str]] = {}
    for box in page.get_by_test_id("stSelectbox").all():
        label = box.get_by_test_id("stWidgetLabel").inner_text().strip()
        if label in ROW_PICKERS:
            shown.setdefault(label, []).append(box.locator("input").input_value())  # the box is a combobox
    return shown


def test_a_second_sweep_shows_only_its_own_rows_in_every_selector(app_server, page, shot, shared_data, tmp_path):
    start_sweep(app_server, page, shared_data, tmp_path, articles=2, sizes="500,120", overlaps="0")
    page.get_by_text(re.compile(r"^Best by mrr@5")).wait_for(timeout=180_000)
    settle(page)
    page.get_by_test_id("stVegaLiteChart").first.wait_for()
    first = shown_rows(page)
    assert sum(map(len, first.values())) == 5, first  # ranks, failures, why missed, apply, judge
    shot("60-evaluate-first-sweep", full_page=True)
    box = page.get_by_role("spinbutton", name="SQuAD articles to use")  # other documents, another grid
    box.fill("1")
    box.press("Enter")
    settle(page)
    page.get_by_label("chunk_size values").fill("300,350")
    page.get_by_label("overlap values").fill("0,50")
    page.get_by_role("button", name="Run the sweep").click()
    page.get_by_text(re.compile(r"^Best by mrr@5: chunk_size 3[05]0")).wait_for(timeout=180_000)
    settle(page)
    page.get_by_test_id("stVegaLiteChart").first.wait_for()
    page.wait_for_timeout(500)  # the selectors draw with the rest of the run
    shot("61-evaluate-second-sweep", full_page=True)
    second = shown_rows(page)
    assert sum(map(len, second.values())) == 5, second
    for label, values in second.items():
        for value in values:
            assert re.match(r"chunk_size (300|350), overlap (0|50), ", value), (label, value, first)
    target = page.get_by_role("textbox", name="Into collection")
    target.scroll_into_view_if_needed()
    shot("62-evaluate-second-sweep-apply")
    assert target.input_value() == "xquad"  # no collection was measured: a new one named after the query set
    go(page, "Upload")  # the sidebar's collection gets a document: writing into it takes a confirmation
    upload(page, shared_data / "pdfs/hausarbeit-jura.pdf")
    go(page, "Evaluate")
    target = page.get_by_role("textbox", name="Into collection")
    target.fill("documents")
    target.press("Enter")
    settle(page)
    sure = page.get_by_text(re.compile(r"^Yes, write the sweep's 1 document into 'documents' \(which holds 1 "
                                       r"document and is not the collection the sweep measured\)"))
    sure.wait_for()
    button = page.get_by_role("button", name="Use this configuration")
    assert button.is_disabled()
    sure.scroll_into_view_if_needed()
    shot("63-evaluate-apply-needs-confirmation")
    sure.click()
    expect(button).to_be_enabled()
