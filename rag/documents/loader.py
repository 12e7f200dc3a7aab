"""bytes + filename -> Document (pages of clean text, headings); PDF via pdfium (pypdf as fallback), text, Markdown."""

from __future__ import annotations

import hashlib
import stat
from dataclasses import dataclass, replace
from pathlib import Path, PurePath

from rag.documents.boxes import Box
from rag.documents.expansion import too_large
from rag.documents.headings import find_headings
from rag.documents.markdown import clean_markdown
from rag.documents.model import PAGE_SEPARATOR, SUPPORTED, Document, Page
from rag.documents.pdf import PagesRead, page_count, read_pdf
from rag.documents.text import clean_plain_text, decode_text
from rag.errors import DocumentError, DocumentTooLargeError, EmptyDocumentError, UnsupportedFileError
from rag.settings import LIMITS, limit

DEFAULT_MAX_FILE_MB = int(LIMITS["RAG_MAX_FILE_MB"])
DEFAULT_MAX_PAGES = int(LIMITS["RAG_MAX_PAGES"])
KINDS_BY_SUFFIX = {".pdf": "pdf", ".txt": "text", ".text": "text", ".md": "markdown", ".markdown": "markdown"}


@dataclass(frozen=True)
class SourceFile:
    """A file to ingest: its bytes, or the path to read them from when the ingest reaches it."""

    name: str
    data: bytes | None = None
    password: str | None = None
    path: Path | None = None  # read by read(), after its size was checked against the limit
    size: int | None = None  # known size (an upload): checked before data is used

    def read(self) -> bytes:
        """Return the file's bytes; Empty/DocumentTooLargeError before reading a file over the limit."""
        if self.size is not None:
            check_size(self.size, self.name)
        if self.data is not None:
            return self.data
        if self.path is None:
            raise ValueError(f"SourceFile {self.name!r} has neither data nor path")
        try:
            return read_file(self.path, self.name)
        except OSError as error:
            message = f"'{self.name}' cannot be read ({error.strerror}). Check the file."
            raise DocumentError(message, self.name) from None


def read_file(path: Path, name: str, max_bytes: int | None = None) -> bytes:
    """Return the bytes of a regular file, read no further than the size limit; DocumentError saying why not.

    The size on disk is checked before reading, and the bytes read again: files that report 0 bytes but have
    content (/proc, some network file systems) are read, and one that grows while read stays within the limit.
    A pipe, device or socket is refused, so reading it can never block. OSError is left to the caller.
    """
    max_bytes = _limits(max_bytes, 1)[0]
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise UnsupportedFileError(
            f"'{name}' is not a regular file (a pipe, device or socket). Save its content as a file and choose that.",
            name,
        )
    if info.st_size:
        check_size(info.st_size, name, max_bytes)
    with path.open("rb") as file:
        data = file.read(max_bytes + 1)
    check_size(len(data), name, max_bytes)
    return data


def load_document(
    data: bytes,
    filename: str,
    password: str | None = None,
    *,
    max_bytes: int | None = None,
    max_pages: int | None = None,
    pdf_engine: str = "pdfium",
    pages_read: PagesRead | None = None,
    max_chars: int | None = None,
    boxes: bool = False,
) -> Document:
    """Return the Document read from a file's bytes; raise a DocumentError subclass for a bad file.

    Limits default to RAG_MAX_FILE_MB / RAG_MAX_PAGES / RAG_MAX_CHARS (read at call time), else 200 MB / 5000
    pages / 20 million characters; a PDF's characters are counted while it is read, in a child process of bounded
    memory (rag.documents.expansion, rag.documents.bounded). pdf_engine "pypdf" reads a PDF with pypdf alone (for
    comparison); pages_read(done, pages) is told how far the reading of a long PDF is, and what it raises stops it.
    boxes: a PDF's pages keep their words' rectangles, so that document.span_boxes(spans) can place any text
    (rag.documents.boxes; it costs the read about a third more).
    """
    name = PurePath(filename or "").name or "document"
    max_bytes, max_pages = _limits(max_bytes, max_pages)
    max_chars = int(limit("RAG_MAX_CHARS")) if max_chars is None else max_chars
    check_size(len(data), name, max_bytes)
    kind = _detect_kind(data, name)
    if kind == "pdf":
        pages, empty, outline, notes = read_pdf(data, name, password, max_pages, engine=pdf_engine,
                                                 progress=pages_read, max_chars=max_chars, boxes=boxes)
    else:
        text, notes = decode_text(data, name)
        text = clean_plain_text(text)
        if kind == "markdown":  # the text chunks hold and models read: no anchors, tags or link targets
            text = clean_plain_text(clean_markdown(text))
        pages, empty, outline = [Page(1, text)], [], []
        if len(text) > max_chars:
            raise too_large(name, max_chars, f"it holds {len(text):,}")
        if not pages[0].text:
            raise EmptyDocumentError(f"'{name}' contains only whitespace. Choose a file with text.", name)
    document = Document(
        id=hashlib.sha256(data).hexdigest(),
        title=name,
        kind=kind,
        pages=tuple(pages),
        text=PAGE_SEPARATOR.join(page.text for page in pages),
        empty_pages=tuple(empty),
    )
    starts = {page.number: start for page, start in zip(pages, document.page_starts, strict=True)}
    headings = find_headings(document.text, kind, outline=outline, page_starts=starts)
    located = sum(heading.source == "outline" for heading in headings)
    if located < len(outline):
        notes.append(
            f"{len(outline) - located} of {len(outline)} bookmarks were not found in the text "
            "and are not used as headings."
        )
    return replace(document, headings=headings, notes=tuple(notes))


def span_boxes(data: bytes, spans: list[tuple[int, int]], *, password: str | None = None, filename: str = "document.pdf"
               ) -> list[list[Box]]:
    """Return the boxes of each span (offsets of the Document.text load_document reads from data, as chunks and
    judgments' evidence spans use them) on a PDF's pages: one per line fragment. [] for each span of a file that is
    not a PDF; a DocumentError for one that cannot be read (e.g. the wrong password)."""
    return load_document(data, filename, password, boxes=True).span_boxes(spans)


def check_size(size: int, name: str, max_bytes: int | None = None) -> None:
    """Return None if a file of `size` bytes may be read; Empty/DocumentTooLargeError otherwise.

    Callers with a file on disk or an upload check its size with this *before* reading the bytes.
    """
    max_bytes = _limits(max_bytes, 1)[0]
    if size == 0:
        raise EmptyDocumentError(f"'{name}' is empty (0 bytes). Choose a file with content.", name)
    if size > max_bytes:
        raise DocumentTooLargeError(
            f"'{name}' is {_mb(size)} MB; the limit is {_mb(max_bytes)} MB. "
            "Split it into smaller files, or raise the limit with RAG_MAX_FILE_MB.",
            name,
        )


def _limits(max_bytes: int | None, max_pages: int | None) -> tuple[int, int]:
    """Return (max_bytes, max_pages): the arguments, else RAG_MAX_FILE_MB / RAG_MAX_PAGES, else the defaults.

    A limit that is set but malformed raises InvalidSettingsError (rag.settings.limit).
    """
    if max_bytes is None:
        max_bytes = int(limit("RAG_MAX_FILE_MB") * 1024 * 1024)
    if max_pages is None:
        max_pages = int(limit("RAG_MAX_PAGES"))
    return max_bytes, max_pages


def _mb(size: int) -> str:
    """Return a byte count as megabytes for a message, e.g. '0.5' or '200'."""
    return f"{size / (1024 * 1024):.3g}"


def expected_size(file: SourceFile) -> tuple[str, float]:
    """Return what tells how much text a file not read yet holds, as (unit, amount): ("pages", n) for a PDF pdfium
    can count (PDF bytes are mostly fonts and images), else ("bytes", n); ("bytes", 0) for one that cannot be read
    (its ingest reports why)."""
    if PurePath(file.name).suffix.lower() in KINDS_BY_SUFFIX and not file.name.lower().endswith(".pdf"):
        return "bytes", float(len(file.data) if file.data is not None else file.size or _disk_size(file.path))
    try:
        data = file.read()
        pages = page_count(data, file.password) if _detect_kind(data, file.name) == "pdf" else None
    except (DocumentError, ValueError):
        return "bytes", 0.0
    return ("pages", float(pages)) if pages else ("bytes", float(len(data)))


def _disk_size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def _detect_kind(data: bytes, name: str) -> str:
    """Return "pdf", "text" or "markdown" from the file name, sniffing a PDF header when it is unknown."""
    suffix = PurePath(name).suffix.lower()
    if suffix in KINDS_BY_SUFFIX:
        return KINDS_BY_SUFFIX[suffix]
    if b"%PDF-" in data[:1024]:
        return "pdf"
    raise UnsupportedFileError(
        f"'{name}' is not a supported file type. RAG Lab reads {SUPPORTED} files; "
        "convert it to one of these (e.g. save it as PDF) and upload it again.",
        name,
    )
