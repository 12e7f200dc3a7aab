"""The Upload page uses the settings it shows, or says before the ingest which ones a collection keeps (issue 39,
item 7): the sample documents are loaded with the page's child size and chunk settings; an existing collection shows
its own keyword language, chunk headers and child size (disabled), and a chunk_size other than its documents' is
named before the files go in."""

from __future__ import annotations

import pytest

from tests.pages.conftest import button, plain, settled, start, texts, until
from ui import resources, settings


def _store():
    return resources.store("folder", settings.qdrant_path(), "")


def test_the_sample_documents_are_loaded_with_the_settings_the_page_shows(app_env, monkeypatch):
    monkeypatch.delenv("RAG_SAMPLE_DIR")  # the bundled samples
    at = start()
    at.number_input(key="upload_child_size").set_value(48).run()
    at.number_input(key="upload_chunk_size").set_value(300).run()
    said = texts(at.caption)
    settled(button(at, "Load the 4 sample documents").click())
    assert not at.exception, at.exception
    info = next(c for c in _store().collections() if c.name == "documents")
    assert info.child_size == 48
    assert {(d.chunk_size, d.overlap) for d in _store().documents("documents")} == {(300, 50)}
    assert "Into 'documents' with chunk_size 300, overlap 50, structure, child size 48" in said  # before the click


def test_an_existing_collection_says_what_it_keeps_and_what_the_new_files_get(app_env, monkeypatch):
    monkeypatch.delenv("RAG_SAMPLE_DIR")
    at = start()
    at.number_input(key="upload_child_size").set_value(48).run()
    settled(button(at, "Load the 4 sample documents").click())
    assert not at.exception, at.exception

    kept = [e for e in at.expander if "keeps its own" in plain(e.label)]
    assert kept and "child size 48" in plain(kept[0].label), [plain(e.label) for e in at.expander]
    child = [n for n in at.number_input if n.label.startswith("Child size")]
    assert [(n.value, n.disabled) for n in child] == [(48, True)]
    assert not [i for i in at.info if "will mix settings" in plain(i.value)]  # 350 / 50 as the samples

    at.number_input(key="upload_chunk_size").set_value(300).run()
    note = texts(at.info)
    assert "'documents' holds documents chunked 350 / 50 / structure" in note
    assert "these files will be chunked 300 / 50 / structure" in note
    at.file_uploader[0].set_value([("notes.md", b"# Notes\n\nEin kurzer Absatz zum Testen.\n", "text/markdown")])
    at.run()
    settled(button(at, "Ingest").click())
    assert not at.exception, at.exception
    stored = {d.title: d.chunk_size for d in _store().documents("documents")}
    assert stored["notes.md"] == 300 and stored["retrieval-basics.md"] == 350


@pytest.mark.live_jobs
def test_loading_the_samples_says_so_where_the_button_was(app_env, monkeypatch, held):
    """Issue 39, item 8: the job's progress is far down the page; the box that was clicked says it is at work."""
    monkeypatch.delenv("RAG_SAMPLE_DIR")
    at = start()
    button(at, "Load the 4 sample documents").click().run()
    until(held.waiting.is_set, "the sample job embedding")
    at.run()
    assert not at.exception, at.exception
    assert "Loading the 4 sample documents into 'documents'…" in texts(at.info)
    assert button(at, "Load the 4 sample documents").disabled  # one click, one job
    held.open.set()
