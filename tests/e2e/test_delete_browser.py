"""Deleting in a real browser: the Library and Search pages after a document and a collection are deleted show no
exception and keep the right collection chosen, by name; a new tab opens a collection that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.conftest import go, search, settle

pytestmark = pytest.mark.e2e
TEXTS = {
    "alpha.md": "# Alpha\n\nDie Kündigungsfrist beträgt drei Monate zum Quartalsende.\n",
    "beta.md": "# Beta\n\nDer Vermieter trägt die Kosten der Instandhaltung.\n",
    "gamma.md": "# Gamma\n\nDie Mietkaution ist auf einem Treuhandkonto anzulegen.\n",
}


def files(folder: Path, texts: dict[str, str]) -> list[str]:
    folder.mkdir(exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(text)
    return [str(folder / name) for name in texts]


def picker_text(page) -> str:
    """Return what the sidebar's collection picker shows (its value sits in an input or in its text)."""
    box = page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Collection")
    shown = box.evaluate("e => [...e.querySelectorAll('input')].map(i => i.value).join(' ') + ' ' + e.innerText")
    return " ".join(shown.replace("Collection", " ").split())


def no_exception(page) -> None:
    settle(page)
    assert page.get_by_test_id("stException").count() == 0, page.get_by_test_id("stException").first.inner_text()


def ingest(page, paths: list[str], into: str | None = None) -> None:
    go(page, "Upload")
    if into:
        page.get_by_test_id("stSelectbox").filter(has_text="Target collection").click()
        page.get_by_role("option", name="+ New collection…").click()
        page.get_by_label("New collection name").fill(into)
        page.get_by_label("New collection name").press("Enter")
        settle(page)
    page.locator("input[type=file]").set_input_files(paths)
    page.get_by_text(Path(paths[-1]).name).first.wait_for()
    page.get_by_role("button", name=re.compile(rf"Ingest {len(paths)} file")).click()
    page.get_by_text(f"{len(paths)} of {len(paths)} file{'s' * (len(paths) > 1)} ingested.").wait_for(timeout=120_000)
    settle(page)


def select_row(page, row: int) -> None:
    """Tick a row of the Library's documents table (a canvas grid: its row markers sit at the left edge)."""
    grid = page.get_by_test_id("stDataFrame").first
    grid.hover()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 * (row + 1) + 17)
    settle(page)


def test_library_and_search_after_deleting_a_document_and_a_collection(app_server, page, shot, tmp_path):
    server = app_server(RAG_EMBEDDER="fake")
    page.goto(server.url)
    ingest(page, files(tmp_path / "docs", TEXTS))
    assert picker_text(page).startswith("documents · 3 chunks")

    go(page, "Library")
    select_row(page, 2)  # the last row: main crashed here with an IndexError
    page.get_by_role("button", name=re.compile("Delete this document")).click()
    page.get_by_role("button", name="Yes, delete the document").click()
    page.get_by_text("Collection 'documents': 2 documents, 2 chunks").wait_for()
    no_exception(page)
    page.get_by_text("Select a row to open or delete that document.").wait_for()
    assert picker_text(page).startswith("documents · 2 chunks")
    shot("01-library-after-a-document-delete", full_page=True)

    go(page, "Search")  # the first click after the delete: main sent the old label as the collection's name
    no_exception(page)
    assert picker_text(page).startswith("documents · 2 chunks")
    assert page.get_by_text("no keyword (BM25) vectors").count() == 0
    search(page, "Kündigungsfrist")
    page.get_by_text(re.compile(r"hits? for")).first.wait_for()
    no_exception(page)
    shot("02-search-after-a-document-delete", full_page=True)

    ingest(page, files(tmp_path / "more", {"delta.md": TEXTS["alpha.md"].replace("Alpha", "Delta")}), into="latex-200")
    page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Collection").click()
    page.get_by_role("option", name="latex-200 · 1 chunk").click()
    settle(page)
    go(page, "Library")
    page.get_by_text("Collection 'latex-200': 1 document, 1 chunk").wait_for()
    page.get_by_role("button", name=re.compile("Delete the collection 'latex-200'")).click()
    page.get_by_label("Collection name").fill("latex-200")
    page.get_by_label("Collection name").press("Enter")
    settle(page)
    page.get_by_role("button", name="Delete the collection", exact=True).click()
    page.get_by_text("The collection 'latex-200' no longer exists: showing 'documents'.").wait_for()
    page.get_by_text("Collection 'documents': 2 documents, 2 chunks").wait_for()
    no_exception(page)
    assert picker_text(page).startswith("documents · 2 chunks")
    page.get_by_role("button", name=re.compile("Delete the collection 'documents'")).wait_for()
    page.get_by_label("Collection name").wait_for(state="hidden")  # the next collection's delete starts closed
    settle(page)
    shot("03-library-after-a-collection-delete", full_page=True)

    go(page, "Search")
    no_exception(page)
    assert picker_text(page).startswith("documents · 2 chunks")
    shot("04-search-after-a-collection-delete", full_page=True)

    fresh = page.context.new_page()  # a new tab: a new session opens a collection that exists
    fresh.goto(server.url)
    fresh.get_by_role("heading", name="Upload", level=1).wait_for()
    no_exception(fresh)
    assert picker_text(fresh).startswith("documents · 2 chunks")
