"""The app in a real browser: upload a real PDF through the file input, read its chunks, search, preview context."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import VIEWPORT, first_search, go, search, settle, upload

pytestmark = pytest.mark.e2e
PDF = "pdfs/hausarbeit-jura.pdf"


def test_upload_chunks_search_context_with_fake_embedder(app_server, page, shot, shared_data):
    server = app_server(RAG_EMBEDDER="fake")
    page.goto(server.url)
    page.get_by_text("Start here").wait_for()
    main = page.get_by_test_id("stMainBlockContainer").bounding_box()
    assert main["width"] > VIEWPORT["width"] - 500, main  # the wide layout: tables get the window, not 736 px
    assert "RAG Lab" in page.title()
    shot("01-first-run")

    upload(page, shared_data / PDF)
    shot("02-upload-results")

    go(page, "Library")
    page.get_by_text("Collection 'documents': 1 document, 20 chunks").wait_for()
    shot("02b-library")

    go(page, "Chunks")
    page.get_by_text("Stored with chunk_size 350, overlap 50, structure").wait_for()
    page.get_by_text("Select a row to read the whole chunk").wait_for()
    shot("03-chunks-table")
    page.get_by_role("tab", name="Document").click()
    page.locator(".rl-overlap").first.wait_for()
    shot("04-chunks-document")
    page.get_by_role("tab", name="Live tuning").click()
    page.get_by_text("Tokens per chunk, stored settings").wait_for()
    thumb = page.get_by_test_id("stSlider").filter(has_text="chunk_size").get_by_role("slider")
    thumb.focus()
    for _ in range(15):  # 350 -> 200 in steps of 10: re-chunked live, nothing re-embedded
        thumb.press("ArrowLeft")
    page.locator("th", has_text="new: 200 / 50 / structure").wait_for(state="attached")
    settle(page)
    shot("05-chunks-tuning", full_page=True)
    page.get_by_role("tab", name="Heading tree").click()
    page.get_by_text("Select a section to read its chunks.").wait_for()
    shot("06-chunks-tree")

    go(page, "Search")
    search(page, "Schriftgröße der Klasse")
    page.get_by_text(re.compile(r"5 hits? for")).wait_for()
    settle(page)
    shot("07-search")
    shot("07-search-full", full_page=True)

    page.get_by_role("link", name="Preview the LLM context for these hits").click()
    page.get_by_role("heading", name="What the LLM receives").wait_for()
    settle(page)
    assert page.get_by_text(re.compile(r"\[Quelle 1: hausarbeit-jura\.pdf")).first.is_visible()
    shot("08-context")
    shot("08-context-full", full_page=True)


@pytest.mark.model
def test_real_model_flags_cut_off_chunks_and_finds_german_text(app_server, page, shot, shared_data):
    server = app_server(RAG_EMBEDDER="local:all-MiniLM-L6-v2")  # English, 256 wordpieces: it cuts chunks off
    page.goto(server.url)
    upload(page, shared_data / PDF)

    go(page, "Chunks")
    page.get_by_text(re.compile(r"\d+ of \d+ chunks are longer than local:all-MiniLM-L6-v2 reads")).wait_for(
        timeout=120_000)  # the banner; the reader's caption says "N shown chunks are longer ..."
    shot("11-model-chunks-flags")

    go(page, "Search")
    search(page, "Wie stellt man die Schriftgröße ein?")
    page.get_by_text(re.compile(r"hits? for")).wait_for(timeout=120_000)
    settle(page)
    first_hit = page.get_by_test_id("stMain").get_by_test_id("stExpander").filter(has_text="#1 · ").first
    assert "Schriftgr" in first_hit.inner_text()
    shot("12-model-search")


def test_sample_folder_with_bad_files_and_an_encrypted_pdf(app_server, page, shot, shared_data):
    server = app_server(RAG_EMBEDDER="fake", RAG_SAMPLE_DIR=str(shared_data / "pdfs"))
    page.goto(server.url)
    page.get_by_role("button", name=re.compile(r"Load the \d+ sample documents")).click()
    page.get_by_text(re.compile(r"\d+ of 10 files? ingested\.")).wait_for(timeout=120_000)
    settle(page)
    assert page.get_by_text("has no text layer").first.is_visible()
    shot("21-samples-with-errors", full_page=True)
    form = page.get_by_test_id("stForm").filter(has_text="encrypted-file.pdf")
    form.locator("input[type=password]").fill("test")
    form.get_by_role("button", name="Open and ingest").click()
    page.get_by_test_id("stForm").filter(has_text="encrypted-file.pdf").wait_for(state="detached")
    settle(page)
    shot("22-after-password", full_page=True)


@pytest.mark.parametrize(("path", "title"), [("search", "Search"), ("chunks", "Chunks"), ("evaluate", "Evaluate"),
                                           ("embedding_map", "Embedding map")])
def test_deep_link_on_a_fresh_server_opens_the_page_with_its_sidebar(app_server, page, path, title):
    """A bookmarked page as the first request of a new server: no traceback, the sidebar is there."""
    server = app_server(RAG_EMBEDDER="fake")
    page.goto(f"{server.url}/{path}")
    page.get_by_role("heading", name=title, level=1).wait_for()
    page.get_by_test_id("stSidebarNav").get_by_text("Upload", exact=True).wait_for()
    settle(page)
    assert page.get_by_test_id("stException").count() == 0
    assert "KeyError" not in page.inner_text("body")


def test_ask_the_llm_answer_links_its_citations_to_the_source_blocks(app_server, page, shot, shared_data, chat_server):
    server = app_server(RAG_EMBEDDER="fake", RAG_LLM="ollama:llama3.1", OLLAMA_HOST=chat_server.url)
    first_search(page, server.url, shared_data / PDF, "Wie zitiert man Literatur?")
    page.get_by_role("link", name="Preview the LLM context for these hits").click()
    page.get_by_role("heading", name="Ask the LLM").wait_for()
    page.get_by_role("button", name="Ask the LLM").click()
    link = page.get_by_role("link", name="Quelle 1", exact=True)
    link.wait_for()
    assert link.get_attribute("href").endswith("#quelle-1")
    page.get_by_text("which the context does not have").wait_for()
    settle(page)
    link.scroll_into_view_if_needed()
    shot("09-context-answer")
    link.click()
    page.wait_for_timeout(500)
    assert page.get_by_role("heading", name=re.compile(r"^Quelle 1: hausarbeit-jura\.pdf")).is_visible()
    shot("10-context-answer-source")
