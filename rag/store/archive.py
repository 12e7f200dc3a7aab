"""Documents as they were read, kept on disk by id, so they can be chunked and ingested again without the file.

Qdrant holds chunks, not files. To repair an interrupted ingest, or to apply new chunk settings to a
document, its text is needed whole: every ingest saves the Document (pages, headings, notes; not the file's
bytes, so an encrypted PDF needs no password again) as `<document id>.json` in the archive folder, next to
the embedded Qdrant folder (`<RAG_QDRANT_PATH>/../documents`), or in the data root for a Qdrant server.
A file is written to a temporary name and renamed, so a crash never leaves half a document.

A PDF's file is kept beside its document as `<document id>.pdf` (the name is the id, never a name a user typed),
so its pages can be drawn after a restart (rag.documents.render); an encrypted PDF is kept as a copy that opens
without its password, like the text beside it. delete_document and delete_collection remove a kept file once no
collection of the store holds its document any more.
"""

from __future__ import annotations

import errno
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.store.client import Store

from rag.documents import PAGE_SEPARATOR, Document, Heading, Page, unlocked_copy
from rag.errors import NoPageImageError, StoreError
from rag.files import write_atomic
from rag.settings import archive_folder

_DOCUMENT_ID = re.compile(r"[0-9a-f]{64}")
FORMAT = 1


def default_archive_dir(location: str, local: bool) -> Path:
    """Return the archive folder for a store: beside its embedded folder, else `documents` in the data root."""
    return archive_folder(location if local and location != "memory" else None)


class DocumentArchive:
    """Saved documents in a folder, one JSON file per document id (created when the first one is saved)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def __repr__(self) -> str:
        return f"DocumentArchive({str(self.folder)!r})"

    def _path(self, document_id: str) -> Path | None:
        return self.folder / f"{document_id}.json" if _DOCUMENT_ID.fullmatch(document_id) else None

    def save(self, document: Document) -> None:
        """Write the document (atomically); RagError when the folder is not writable."""
        path = self._path(document.id)
        if path is None:
            return  # not a file's sha256 (a test or a foreign id): nothing to keep
        data = {"format": FORMAT, "id": document.id, "title": document.title, "kind": document.kind,
                "pages": [page.text for page in document.pages], "empty_pages": list(document.empty_pages),
                "headings": [[h.title, h.level, h.start, h.source] for h in document.headings],
                "notes": list(document.notes)}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(data, ensure_ascii=False), mode=0o600)  # the document: this user only
        except OSError as error:
            if error.errno == errno.ENOSPC:
                raise StoreError(f"The disk holding the document archive {self.folder} is full. Free disk space, "
                                 "then try again.") from error
            raise StoreError(f"The document archive {self.folder} cannot be written ({error.strerror}). "
                           "Check that the data folder is writable.") from error

    def original_path(self, document_id: str) -> Path | None:
        """Return where the PDF file of document_id is kept (None for an id that is no file's sha256)."""
        return self.folder / f"{document_id}.pdf" if _DOCUMENT_ID.fullmatch(document_id) else None

    def keep_original(self, document: Document, data: bytes, password: str | None = None) -> None:
        """Keep a PDF's file (atomically; unlocked when it needed a password) unless it is kept already; RagError
        when the folder is not writable. Text and Markdown are not kept: their text is the saved document."""
        path = self.original_path(document.id)
        if path is None or document.kind != "pdf" or path.exists():
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomic(path, unlocked_copy(data, password), mode=0o600)
        except OSError as error:
            raise StoreError(f"The original of '{document.title}' cannot be kept in {self.folder} ({error.strerror}). "
                             "Free disk space or check that the data folder is writable.") from error

    def original(self, document_id: str, title: str = "") -> bytes:
        """Return the kept PDF file of document_id; NoPageImageError saying what to do when it is not kept."""
        path = self.original_path(document_id)
        try:
            if path is not None:
                return path.read_bytes()
        except OSError:
            pass
        raise NoPageImageError(f"No page image is available for '{title or document_id[:12]}' until the document is "
                               "re-ingested: its original file is not kept. Upload the file again.")

    def release_originals(self, store: Store, document_ids: list[str]) -> None:
        """Remove the kept files of document_ids that no collection of store holds any more."""
        for document_id in dict.fromkeys(document_ids):
            path = self.original_path(document_id)
            if path is not None and path.exists() and not store.holds_document(document_id):
                path.unlink(missing_ok=True)

    def load(self, document_id: str) -> Document | None:
        """Return the saved document, or None when it was never saved (or the file is unreadable)."""
        path = self._path(document_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path else None
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        pages = tuple(Page(i, text) for i, text in enumerate(data["pages"], 1))
        return Document(
            id=data["id"], title=data["title"], kind=data["kind"], pages=pages,
            text=PAGE_SEPARATOR.join(page.text for page in pages),
            headings=tuple(Heading(t, level, start, source) for t, level, start, source in data["headings"]),
            empty_pages=tuple(data["empty_pages"]), notes=tuple(data["notes"]),
        )  # fmt: skip

    def delete(self, document_id: str) -> None:
        """Forget a saved document (nothing happens when it was never saved)."""
        path = self._path(document_id)
        if path is not None:
            path.unlink(missing_ok=True)


def delete_document(store: Store, archive: DocumentArchive | None, collection: str, document_id: str,
                    only_interrupted: bool = False) -> int:
    """Return how many chunks Store.delete_document deleted; the document's kept file goes when no collection
    holds the document any more."""
    removed = store.delete_document(collection, document_id, only_interrupted=only_interrupted)
    if archive is not None:
        archive.release_originals(store, [document_id])
    return removed


def delete_collection(store: Store, archive: DocumentArchive | None, name: str) -> None:
    """Delete collection name (Store.delete_collection) and the kept files no other collection needs."""
    ids = [d.document_id for d in store.documents(name)] if archive is not None else []
    store.delete_collection(name)
    if archive is not None:
        archive.release_originals(store, ids)
