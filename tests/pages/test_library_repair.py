"""Upload says when a file replaces a document of the same name; the Library repairs an interrupted ingest."""

from __future__ import annotations

import pytest

from rag.store.open import open_store
from tests.pages.conftest import button, plain, results, select, settled, start, texts, upload
from ui import nav

POLICY_V1 = "# Richtlinie\n\nPasswörter müssen zwölf Zeichen lang sein.\n"
POLICY_V2 = "# Richtlinie\n\nPasswörter müssen vierzehn Zeichen lang sein.\n"


def upload_text(at, name: str, text: str, keep: bool | None = None):
    at.file_uploader[0].set_value([(name, text.encode(), "text/markdown")])
    at.run()
    if keep is not None:
        at.checkbox(key="keep_versions").set_value(keep).run()
    settled(button(at, "Ingest").click())
    assert not at.exception, at.exception
    return at


def test_upload_says_a_file_replaces_its_old_version_before_it_happens(app_env):
    at = upload_text(start(), "policy.md", POLICY_V1)
    at.file_uploader[0].set_value([("policy.md", POLICY_V2.encode(), "text/markdown")])
    at.run()
    assert "'policy.md' (1 chunk) is already in 'documents': ingesting replaces the old version" in plain(
        texts(at.warning))
    settled(button(at, "Ingest").click())
    assert results(at)["policy.md"]["status"] == "ingested"
    store = open_store(path=str(app_env / "qdrant"))
    (document,) = store.documents("documents")
    assert "vierzehn" in store.document_chunks("documents", document.document_id)[0].content


def test_keep_both_versions_keeps_the_old_one(app_env):
    at = upload_text(start(), "policy.md", POLICY_V1)
    upload_text(at, "policy.md", POLICY_V2, keep=True)
    assert len(open_store(path=str(app_env / "qdrant")).documents("documents")) == 2


def test_same_content_under_another_name_is_skipped_in_words(app_env):
    at = upload_text(start(), "policy.md", POLICY_V1)
    upload_text(at, "kopie.md", POLICY_V1)
    assert results(at)["kopie.md"]["status"] == "skipped"
    assert "same content as 'policy.md'" in plain(texts(at.info) + texts(at.error) + texts(at.warning))


@pytest.fixture
def interrupted(app_env, shared_data, monkeypatch):
    """A PDF in the Library whose second ingest (other settings) died after writing its chunks, before its commit."""
    at = upload(start(), shared_data, "pdfs/hausarbeit-jura.pdf")
    store = open_store(path=str(app_env / "qdrant"))
    from rag import pipeline
    from rag.chunking.chunker import ChunkSettings
    from rag.embeddings import get_embedder
    from ui import resources

    def crash(*args, **kwargs):
        raise SystemExit("killed")  # not a StoreError: nothing is rolled back, as after kill -9

    (document,) = store.documents("documents")
    with monkeypatch.context() as patch, pytest.raises(SystemExit):
        patch.setattr(store, "commit_generation", crash)
        pipeline.reingest([document.document_id], "documents", ChunkSettings(150, 20), get_embedder("fake"),
                          store=store, archive=resources.archive(store))
    resources.store_changed()  # another process wrote: the app's listings are read again
    at.switch_page(nav.LIBRARY.path).run()
    return at, store


@pytest.mark.slow
def test_library_marks_an_interrupted_document_and_ingests_it_again(interrupted):
    at, store = interrupted
    assert "not stored completely" in texts(at.warning)
    assert list(at.dataframe[0].value["complete"]) == ["NO"]
    at.session_state[at.dataframe[0].key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert not at.exception, at.exception
    assert "its earlier complete version stays searchable" in plain(texts(at.warning))
    assert "chunk_size 150, overlap 20" in texts(at.caption)
    button(at, "Ingest 'hausarbeit-jura.pdf' again").click().run()
    assert not at.exception, at.exception
    (document,) = store.documents("documents")
    assert document.complete and (document.chunk_size, document.overlap) == (150, 20)
    assert store.registry("documents") == {}


@pytest.mark.slow
def test_library_deletes_what_an_interrupted_ingest_left(interrupted):
    at, store = interrupted
    before = store.documents("documents")[0]
    at.session_state[at.dataframe[0].key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    button(at, "Delete what the interrupted ingest left").click().run()
    (document,) = store.documents("documents")
    assert document.complete and document.chunk_size == before.chunk_size and document.interrupted == 0
    assert list(at.dataframe[0].value["complete"]) == ["yes"]


def test_an_upload_over_the_limit_is_refused_by_its_size(app_env, monkeypatch):
    monkeypatch.setenv("RAG_MAX_FILE_MB", "0.001")
    at = start()
    at.file_uploader[0].set_value([("gross.md", b"Wort " * 1000, "text/markdown"),
                                   ("klein.md", b"# Klein\n\nText.", "text/markdown")])
    at.run()
    settled(button(at, "Ingest").click())
    rows = results(at)
    assert rows["gross.md"]["status"] == "failed" and "; the limit is" in rows["gross.md"]["message"]
    assert rows["klein.md"]["status"] == "ingested"


def test_a_new_collection_gets_the_language_and_prompts_chosen_on_upload(app_env):
    at = start()
    assert at.text_input(key="upload_query_prompt").value == ""  # the fake model wants none
    at.selectbox(key="upload_language").set_value("de")
    at.text_input(key="upload_query_prompt").set_value("Frage: ")
    at.text_input(key="upload_document_prompt").set_value("Text: ")
    upload_text(at, "policy.md", POLICY_V1)
    meta = open_store(path=str(app_env / "qdrant")).collection_meta("documents")
    assert (meta["language"], meta["query_prompt"], meta["document_prompt"]) == ("de", "Frage: ", "Text: ")
    assert not any(t.key == "upload_query_prompt" for t in at.text_input)  # the collection exists now: its own


def test_chunk_headers_chosen_on_upload_are_recorded_and_the_stored_text_stays(app_env):
    at = start()
    assert at.toggle(key="upload_chunk_headers").value is False  # the default: off (docs/benchmarks.md: measured)
    at.toggle(key="upload_chunk_headers").set_value(True)
    upload_text(at, "policy.md", POLICY_V1)
    store = open_store(path=str(app_env / "qdrant"))
    assert store.collection_meta("documents")["chunk_headers"] is True
    (document,) = store.documents("documents")
    assert all(not c.content.startswith("policy\n") for c in store.document_chunks("documents", document.document_id))
    assert not any(t.key == "upload_chunk_headers" for t in at.toggle)  # the collection exists now: its own
    at.switch_page(nav.LIBRARY.path).run()
    assert "Chunk headers: on" in texts(at.caption)  # the Library says how the collection indexes its chunks


def test_a_delete_confirms_the_document_it_was_shown_for(app_env):
    """The table's selection is a row number: when the listing changes before the click (another process added a
    document above it), the confirmation must not delete whatever document that row holds now."""
    at = upload_text(start(), "a.md", POLICY_V1)
    upload_text(at, "c.md", POLICY_V2)
    at.switch_page(nav.LIBRARY.path).run()
    select(at, "library_table", 1)
    confirm = button(at, "Yes, delete the document")  # shown for c.md
    store = open_store(path=str(app_env / "qdrant"))
    from rag import pipeline
    from rag.chunking.chunker import ChunkSettings
    from rag.embeddings import get_embedder
    from ui import resources

    pipeline.ingest([pipeline.SourceFile("b.md", b"# B\n\nEin anderes Dokument.\n")], "documents", ChunkSettings(),
                    get_embedder("fake"), store=store)
    resources.store_changed()
    confirm.click().run()
    assert not at.exception, at.exception
    assert [d.title for d in store.documents("documents")] == ["a.md", "b.md", "c.md"]  # nothing deleted
    select(at, "library_table", 1)  # the new listing's table starts unselected (ui.state.table_key)
    button(at, "Yes, delete the document").click().run()  # now shown for b.md, which row 1 holds
    assert [d.title for d in store.documents("documents")] == ["a.md", "c.md"]


def test_a_selected_row_past_the_end_of_a_shorter_listing_selects_nothing(app_env):
    at = upload_text(start(), "a.md", POLICY_V1)
    at.switch_page(nav.LIBRARY.path).run()
    select(at, "library_table", 3)
    assert not at.exception, at.exception
    assert "Select a row" in texts(at.caption)


def test_a_store_folder_removed_under_the_running_app_is_said_not_served_from_memory(app_env):
    import shutil

    from ui import resources

    at = upload_text(start(), "a.md", POLICY_V1)
    shutil.rmtree(app_env / "qdrant")
    resources.store_changed()
    at.switch_page(nav.LIBRARY.path).run()
    assert not at.exception, at.exception
    assert "cannot open its Qdrant store" in texts(at.error) and not at.dataframe
    assert "was removed while RAG Lab was using it" in plain(texts(at.sidebar.error))
