"""Documents as they were read, kept on disk by id, so they can be chunked and ingested again without the file.

Qdrant holds chunks, not files. To repair an interrupted ingest, or to apply new chunk settings to a
document, its text is needed whole: every ingest saves the Document (pages, headings, notes; not the file's
bytes, so an encrypted PDF needs no password again) as `<document id>.json` in the archive folder, next to
the embedded Qdrant folder (`<RAG_QDRANT_PATH>/../documents`), or in the data root for a Qdrant server.
A file is written to a temporary name and renamed, so a crash never leaves half a document.
"""

from __future__ import annotations

import errno
import json
import re
from pathlib import Path

from rag.documents import PAGE_SEPARATOR, Document, Heading, Page
from rag.errors import StoreError
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
