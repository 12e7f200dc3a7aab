"""Generations: a write is searchable whole or not at all; edited files replace their old version by title."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import get_embedder
from rag.embeddings.fake import FakeEmbedder
from rag.errors import DocumentNotFoundError, StoreError
from rag.retrieval import SearchRequest
from rag.store.archive import DocumentArchive
from rag.store.versions import REGISTRY_ID, WRITING
from tests.conftest import TEXT, fake_embedder, ingest, make_chunks, make_document


@pytest.fixture
def embedder() -> FakeEmbedder:
    return fake_embedder()


def search_titles(store, embedder, query: str = "Passwörter Zeichen") -> list[str]:
    vector = embedder.embed_query([query])[0]
    return [h.document_title for h in store.search("documents", vector, embedder, SearchRequest(top_k=50))]


def test_a_write_in_progress_is_hidden_and_listed_as_incomplete(store, embedder, monkeypatch):
    ingest(store, embedder, make_document(TEXT[:120], "doc-b", "kurz.md"))
    real_upsert, seen = store.client.upsert, {}

    def observing_upsert(collection, points, **kwargs):
        real_upsert(collection, points, **kwargs)
        if not seen:  # after the first batch of the second document: what does a reader see now?
            seen["titles"] = search_titles(store, embedder)
            seen["documents"] = {d.title: d.complete for d in store.documents("documents")}
            seen["ids"] = len(store.point_ids("documents"))

    monkeypatch.setattr(store.client, "upsert", observing_upsert)
    count, _ = ingest(store, embedder, make_document())
    assert set(seen["titles"]) == {"kurz.md"}
    assert seen["documents"] == {"kurz.md": True, "richtlinie.md": False}
    assert seen["ids"] == len(store.document_chunks("documents", "doc-b"))
    assert set(search_titles(store, embedder)) == {"kurz.md", "richtlinie.md"}
    assert all(d.complete for d in store.documents("documents")) and store.registry("documents") == {}
    assert store.collections()[0].points == count + len(store.document_chunks("documents", "doc-b"))


def test_failed_write_removes_its_chunks_and_its_registry_entry(store, embedder, monkeypatch):
    real_upsert = store.client.upsert
    calls = []

    def failing(collection, points, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # the registry is created by the first upsert, the first chunk batch is the second
            raise sqlite3.OperationalError("database or disk is full")  # as the embedded engine raises it
        return real_upsert(collection, points, **kwargs)

    monkeypatch.setattr(store.client, "upsert", failing)
    with pytest.raises(StoreError, match="is full.*Nothing of 'richtlinie.md' was changed"):
        ingest(store, embedder, make_document())
    assert store.documents("documents") == [] and store.registry("documents") == {}


@pytest.mark.slow
def test_an_edited_file_replaces_its_old_version(store, embedder):
    ingest(store, embedder, make_document(TEXT, "v1", "policy.md"))
    ingest(store, embedder, make_document(TEXT.replace("zwölf", "vierzehn"), "v2", "policy.md"))
    (document,) = store.documents("documents")
    assert (document.document_id, document.title) == ("v2", "policy.md")
    contents = " ".join(h.content for h in store.search("documents", embedder.embed_documents(["Zeichen"])[0], embedder,
                                                        SearchRequest(top_k=50)))
    assert "vierzehn" in contents and "zwölf" not in contents


def test_keep_versions_keeps_both(store, embedder):
    ingest(store, embedder, make_document(TEXT, "v1", "policy.md"))
    document = make_document(TEXT.replace("zwölf", "vierzehn"), "v2", "policy.md")
    chunks = make_chunks(document, 60)
    store.upsert_document("documents", document, chunks, embedder.embed_documents([c.content for c in chunks]),
                          ChunkSettings(60, 0, "tokens"), embedder, keep_versions=True)
    assert sorted(d.document_id for d in store.documents("documents")) == ["v1", "v2"]


def test_plan_says_what_an_ingest_will_do(store, embedder):
    _, settings = ingest(store, embedder, make_document(TEXT, "v1", "policy.md"))
    assert store.plan_ingest("documents", make_document(TEXT, "v1", "policy.md"), settings).unchanged
    renamed = store.plan_ingest("documents", make_document(TEXT, "v1", "other.md"), settings)
    assert renamed.duplicate_of == "policy.md" and not renamed.replaces
    edited = store.plan_ingest("documents", make_document("neu", "v2", "policy.md"), settings)
    assert [d.document_id for d in edited.replaces] == ["v1"]
    assert store.plan_ingest("documents", make_document("neu", "v2", "policy.md"), settings, keep_versions=True
                             ).replaces == ()
    assert store.plan_ingest("nowhere", make_document(), settings) == type(edited)()


def test_pipeline_skips_same_content_under_a_new_name_and_keeps_the_old_title(shared_data, store):
    fake = get_embedder("fake:32")
    data = (shared_data / "pdfs" / "crazyones.pdf").read_bytes()
    (first,) = pipeline.ingest([pipeline.SourceFile("crazyones.pdf", data)], embedder=fake, store=store)
    (second,) = pipeline.ingest([pipeline.SourceFile("renamed.pdf", data)], embedder=fake, store=store)
    assert first.status == "ingested" and second.status == "skipped"
    assert "same content as 'crazyones.pdf'" in second.error
    assert [d.title for d in store.documents("documents")] == ["crazyones.pdf"]
    (again,) = pipeline.ingest([pipeline.SourceFile("crazyones.pdf", data)], embedder=fake, store=store)
    assert again.status == "unchanged" and again.chunks == first.chunks


@pytest.mark.slow
def test_legacy_points_without_generation_are_replaced(store, embedder):
    """Collections written before generations existed: their points have none, and are still replaced."""
    ingest(store, embedder, make_document(TEXT, "v1", "policy.md"))
    ids = store.point_ids("documents")
    store.client.delete_payload("documents", ["generation"], points=ids)
    store.client.delete("documents", [REGISTRY_ID])
    assert store.documents("documents")[0].complete
    ingest(store, embedder, make_document(TEXT + " Neu.", "v2", "policy.md"))
    assert [d.document_id for d in store.documents("documents")] == ["v2"]
    assert not set(ids) & set(store.point_ids("documents"))


def test_interrupted_write_before_any_chunk_is_listed_and_deletable(store, embedder):
    ingest(store, embedder, make_document(TEXT[:100], "doc-b", "kurz.md"))
    store.begin_generation("documents", "doc-a", "richtlinie.md", {"chunk_size": 60})
    listed = {d.title: d for d in store.documents("documents")}
    assert not listed["richtlinie.md"].complete and listed["richtlinie.md"].chunks == 0
    assert {e["state"] for e in store.registry("documents").values()} == {WRITING}
    assert store.delete_document("documents", "doc-a", only_interrupted=True) == 0
    assert [d.title for d in store.documents("documents")] == ["kurz.md"] and store.registry("documents") == {}


def test_reingest_from_the_archive_applies_new_settings(shared_data, store, tmp_path):
    fake = get_embedder("fake:32")
    archive = DocumentArchive(tmp_path / "documents")
    data = (shared_data / "pdfs" / "hausarbeit-jura.pdf").read_bytes()
    (result,) = pipeline.ingest([pipeline.SourceFile("hausarbeit-jura.pdf", data)], embedder=fake, store=store,
                                archive=archive)
    saved = archive.load(result.document_id)
    assert saved is not None and saved.title == "hausarbeit-jura.pdf" and len(saved.pages) == result.pages
    (again,) = pipeline.reingest([result.document_id], "documents", ChunkSettings(120, 20), fake, store=store,
                                 archive=archive)
    assert again.ok and again.chunks > result.chunks
    (document,) = store.documents("documents")
    assert (document.chunk_size, document.overlap, document.chunks) == (120, 20, again.chunks)


def test_empty_vectors_shape_checked(store, embedder):
    with pytest.raises(StoreError):
        store.upsert_document("documents", make_document(), make_chunks(make_document(), 60),
                              np.zeros((1, 3), dtype=np.float32), ChunkSettings(), embedder)


class Crash(BaseException):
    """Stands for a kill -9 at that point: nothing after it runs, nothing catches it."""


def crash_on_first_point_delete(store, monkeypatch):
    real_delete = store.client.delete

    def crashing(collection, selector, **kwargs):
        raise Crash

    monkeypatch.setattr(store.client, "delete", crashing)
    return lambda: monkeypatch.setattr(store.client, "delete", real_delete)


@pytest.mark.parametrize("legacy", [False, True])
def test_a_delete_is_committed_by_one_registry_update_and_finished_by_the_next_listing(store, embedder, monkeypatch,
                                                                                       legacy):
    """Crashed after its commit, before any point was deleted: the document is gone from listings, chunks and
    searches; the next listing deletes the rest, and the same file is ingested anew (not "unchanged")."""
    ingest(store, embedder, make_document(TEXT[:120], "doc-b", "kurz.md"))
    count, settings = ingest(store, embedder, make_document())
    if legacy:  # written before generations existed: no registry entry can hide these points as they are
        store.client.delete_payload("documents", ["generation"], points=store.point_ids("documents"))
    restore = crash_on_first_point_delete(store, monkeypatch)
    with pytest.raises(Crash):
        store.delete_document("documents", "doc-a")
    restore()
    assert set(search_titles(store, embedder)) == {"kurz.md"}
    assert store.document_chunks("documents", "doc-a") == []
    assert store.collections()[0].points > len(store.document_chunks("documents", "doc-b"))  # hidden, still there
    assert [d.title for d in store.documents("documents")] == ["kurz.md"]
    assert store.collections()[0].points == len(store.document_chunks("documents", "doc-b"))  # the listing cleaned
    assert store.plan_ingest("documents", make_document(), settings).unchanged is False
    assert ingest(store, embedder, make_document())[0] == count
    assert set(search_titles(store, embedder)) == {"kurz.md", "richtlinie.md"} and store.registry("documents") == {}


def test_a_write_deleted_meanwhile_is_not_committed(store, embedder, monkeypatch):
    """Another process deleted the document while it was being written: the write does not come back to life."""
    real_upsert = store.client.upsert

    def deleting_upsert(collection, points, **kwargs):
        real_upsert(collection, points, **kwargs)
        if any((p.payload or {}).get("generation") for p in points):  # a chunk batch, not the registry
            monkeypatch.setattr(store.client, "upsert", real_upsert)
            store.delete_document("documents", "doc-a", only_interrupted=True)

    monkeypatch.setattr(store.client, "upsert", deleting_upsert)
    with pytest.raises(StoreError, match="'richtlinie.md' was deleted from 'documents' while it was being written"):
        ingest(store, embedder, make_document())
    assert store.documents("documents") == [] and store.registry("documents") == {}
    assert store.collections()[0].points == 0


def test_delete_without_a_document_id_deletes_nothing(store, embedder):
    ingest(store, embedder, make_document())
    with pytest.raises(DocumentNotFoundError, match="No document id"):
        store.delete_document("documents", " ")
    assert [d.title for d in store.documents("documents")] == ["richtlinie.md"]


def test_a_document_a_delete_cut_short_before_this_fix_is_incomplete_and_ingested_anew(store, embedder):
    """Older versions deleted points one batch at a time: a kill left the document listed complete with part of
    its chunks, and its re-ingest was called unchanged. The gaps in its chunk_index give it away."""
    count, settings = ingest(store, embedder, make_document())
    chunks = store.document_chunks("documents", "doc-a")
    store.client.delete("documents", [chunks[1].chunk_id, chunks[3].chunk_id])  # what such a kill left
    (listed,) = store.documents("documents")
    assert not listed.complete and listed.missing == 2 and listed.chunks == count - 2
    assert store.plan_ingest("documents", make_document(), settings).unchanged is False
    assert ingest(store, embedder, make_document())[0] == count
    (listed,) = store.documents("documents")
    assert listed.complete and listed.missing == 0 and store.collections()[0].points == count


def test_replacing_a_legacy_version_is_one_commit_too(store, embedder, monkeypatch):
    """Crashed right after the commit of a replacement: the old points (without a generation) are already hidden."""
    ingest(store, embedder, make_document(TEXT, "v1", "policy.md"))
    store.client.delete_payload("documents", ["generation"], points=store.point_ids("documents"))
    restore = crash_on_first_point_delete(store, monkeypatch)
    with pytest.raises(Crash):
        ingest(store, embedder, make_document(TEXT + " Neu.", "v2", "policy.md"))
    restore()
    vector = embedder.embed_query(["Passwörter Zeichen"])[0]
    assert {h.document_id for h in store.search("documents", vector, embedder, SearchRequest(top_k=50))} == {"v2"}
    assert [d.document_id for d in store.documents("documents")] == ["v2"]
    assert store.collections()[0].points == len(store.document_chunks("documents", "v2"))


def test_an_ingest_reads_only_the_points_of_its_own_document_and_its_namesakes(store, embedder, monkeypatch):
    """An ingest into a large collection read every point to find the versions it replaces (quadratic filling)."""
    for n in range(6):
        ingest(store, embedder, make_document(TEXT, f"other{n}", f"other{n}.md"))
    ingest(store, embedder, make_document(TEXT, "v1", "policy.md"))
    others = sum(d.chunks for d in store.documents("documents") if d.title != "policy.md")
    read = []
    scroll = type(store)._scroll

    def counted(self, collection, flt, payload, **options):
        for point in scroll(self, collection, flt, payload, **options):
            read.append((point.payload or {}).get("document_id"))
            yield point

    monkeypatch.setattr(type(store), "_scroll", counted)
    edited = make_document(TEXT.replace("zwölf", "vierzehn"), "v2", "policy.md")
    assert store.plan_ingest("documents", edited, ChunkSettings(60, 0, "tokens")).replaces[0].document_id == "v1"
    ingest(store, embedder, edited)
    assert others > 0 and not {r for r in read if r and r.startswith("other")}
    assert [(d.document_id, d.title) for d in store.documents("documents") if d.title == "policy.md"] == [
        ("v2", "policy.md")]
