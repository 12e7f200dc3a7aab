"""A PDF's file kept beside its document (rag.store.archive), by id, removed with the last collection that holds it."""

from __future__ import annotations

import hashlib

import pytest

from rag import pipeline
from rag.chunking import ChunkSettings
from rag.documents import SourceFile, page_count
from rag.embeddings import get_embedder
from rag.errors import NoPageImageError
from rag.reports import chunk_boxes, hit_pages, located_boxes
from rag.store import DocumentArchive, delete_collection, delete_document

SETTINGS = ChunkSettings(200, 0)


def ingest(store, archive, collection: str, *files: SourceFile):
    results = pipeline.ingest(list(files), collection, SETTINGS, get_embedder("fake:32"), store=store, archive=archive)
    assert all(r.ok for r in results), [r.error for r in results]
    return results


def test_a_pdf_is_kept_by_its_id_and_text_is_not(store, tmp_path, shared_data):
    archive = DocumentArchive(tmp_path / "documents")
    pdf = (shared_data / "pdfs/hausarbeit-jura.pdf").read_bytes()
    results = ingest(store, archive, "c", SourceFile("Mein Bericht (final).pdf", pdf),
                     SourceFile("notes.txt", b"Berlin liegt an der Spree."))
    kept = sorted(p.name for p in archive.folder.iterdir() if p.suffix == ".pdf")
    assert kept == [f"{hashlib.sha256(pdf).hexdigest()}.pdf"]  # the id, never the typed name
    assert archive.original(results[0].document_id) == pdf
    with pytest.raises(NoPageImageError, match="until the document is re-ingested"):
        archive.original(results[1].document_id, "notes.txt")


def test_an_encrypted_pdf_is_kept_as_a_copy_that_opens_without_its_password(store, tmp_path, shared_data):
    archive = DocumentArchive(tmp_path / "documents")
    locked = (shared_data / "pdfs/encryption__r6-user-password.pdf").read_bytes()
    [result] = ingest(store, archive, "c", SourceFile("locked.pdf", locked, password="asdfzxcv"))
    assert page_count(archive.original(result.document_id)) == page_count(locked, password="asdfzxcv")


def test_the_file_goes_with_the_last_collection_that_holds_its_document(store, tmp_path, shared_data):
    archive = DocumentArchive(tmp_path / "documents")
    pdf = SourceFile("a.pdf", (shared_data / "pdfs/crazyones.pdf").read_bytes())
    [result] = ingest(store, archive, "one", pdf)
    ingest(store, archive, "two", pdf)
    path = archive.original_path(result.document_id)
    assert delete_document(store, archive, "one", result.document_id) > 0
    assert path.exists()  # "two" still holds it
    delete_collection(store, archive, "two")
    assert not path.exists()
    ingest(store, archive, "three", pdf)
    assert path.exists()
    delete_document(store, archive, "three", result.document_id)
    assert not path.exists()


def test_a_document_ingested_again_unchanged_gets_its_file_kept(store, tmp_path, shared_data):
    """A document stored before files were kept: ingesting the same file again keeps it, with nothing embedded."""
    pdf = SourceFile("a.pdf", (shared_data / "pdfs/crazyones.pdf").read_bytes())
    [before] = ingest(store, None, "c", pdf)
    archive = DocumentArchive(tmp_path / "documents")
    with pytest.raises(NoPageImageError, match=r"^No page image is available for 'a.pdf' until the document is "
                                                r"re-ingested: its original file is not kept. Upload the file again.$"):
        archive.original(before.document_id, "a.pdf")
    [again] = ingest(store, archive, "c", pdf)
    assert again.unchanged and archive.original(before.document_id) == pdf.data


def test_a_chunk_stored_without_boxes_says_to_ingest_again(store):
    from tests.conftest import fake_embedder, make_document
    from tests.conftest import ingest as store_ingest

    store_ingest(store, fake_embedder(), make_document())
    hit = store.document_chunks("documents", "doc-a")[0]
    hit.payload.pop("boxes", None)  # as a collection written before boxes were kept
    with pytest.raises(NoPageImageError) as raised:
        chunk_boxes(hit)
    message = str(raised.value)
    assert "\n" not in message and "until the document is re-ingested" in message


def test_a_re_ingest_reads_the_boxes_from_the_kept_file(store, tmp_path, shared_data):
    """Re-chunking reads the saved text; the kept file gives its words' rectangles again, so the new chunks carry
    boxes; without the file they carry none, and "Show on page" says to ingest the document again."""
    archive = DocumentArchive(tmp_path / "documents")
    [result] = ingest(store, archive, "c", SourceFile("a.pdf", (shared_data / "pdfs/hausarbeit-jura.pdf").read_bytes()))
    embedder = get_embedder("fake:32")
    pipeline.reingest([result.document_id], "d", ChunkSettings(120, 10), embedder, store=store, archive=archive,
                      source="c")
    chunks = store.document_chunks("d", result.document_id)
    assert len(chunks) > 20 and all(chunk_boxes(h) for h in chunks if h.content.strip())
    archive.original_path(result.document_id).unlink()
    pipeline.reingest([result.document_id], "e", ChunkSettings(150, 10), embedder, store=store, archive=archive,
                      source="c")
    hit = store.document_chunks("e", result.document_id)[0]
    assert chunk_boxes(hit) == ()
    with pytest.raises(NoPageImageError, match="until the document is re-ingested"):
        hit_pages(archive, hit, 400)  # no boxes stored, no file to place them in
    archive.keep_original(archive.load(result.document_id), (shared_data / "pdfs/hausarbeit-jura.pdf").read_bytes())
    placed = located_boxes(archive, hit)  # the file is back: the chunk is placed in it by its offsets
    assert placed == chunk_boxes(store.document_chunks("d", result.document_id)[0])[:len(placed)]
    assert [p.page for p in hit_pages(archive, hit, 400)] == sorted({b.page for b in placed})
