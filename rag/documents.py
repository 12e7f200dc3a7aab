"""bytes + filename -> Document (pages of clean text, headings); PDF via pypdf, text, Markdown."""

from __future__ import annotations

import bisect
import hashlib
import re
import unicodedata
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import PurePath

from rag.errors import DocumentTooLargeError, EmptyDocumentError, UnsupportedFileError
from rag.settings import LIMITS, limit

PAGE_SEPARATOR = "\n\n"
DEFAULT_MAX_FILE_MB = int(LIMITS["RAG_MAX_FILE_MB"])
DEFAULT_MAX_PAGES = int(LIMITS["RAG_MAX_PAGES"])
KINDS_BY_SUFFIX = {".pdf": "pdf", ".txt": "text", ".text": "text", ".md": "markdown", ".markdown": "markdown"}
SUPPORTED = "PDF (.pdf), text (.txt) and Markdown (.md, .markdown)"


@dataclass(frozen=True)
class Page:
    number: int  # 1-based
    text: str


@dataclass(frozen=True)
class Heading:
    """A heading located in Document.text; `start` is the offset where its line begins."""

    title: str
    level: int  # 1 = top level
    start: int
    source: str  # "markdown" | "outline" | "numbered"


@dataclass(frozen=True)
class Document:
    id: str  # sha256 of the file's bytes, hex
    title: str  # the file name
    kind: str  # "pdf" | "text" | "markdown"
    pages: tuple[Page, ...]  # every page in order (pages[i].number == i + 1); a page without text has text ""
    text: str  # page texts joined by PAGE_SEPARATOR; chunk offsets refer to this string
    headings: tuple[Heading, ...] = ()  # sorted by start
    empty_pages: tuple[int, ...] = ()  # 1-based numbers of pages without text
    notes: tuple[str, ...] = field(default=())  # things the user should know (encoding fallback, ...)

    @cached_property
    def page_starts(self) -> tuple[int, ...]:
        """Return the offset in `text` where each page begins."""
        starts, offset = [], 0
        for page in self.pages:
            starts.append(offset)
            offset += len(page.text) + len(PAGE_SEPARATOR)
        return tuple(starts)

    def page_at(self, offset: int) -> int:
        """Return the 1-based number of the page that holds character `offset` of `text`."""
        index = bisect.bisect_right(self.page_starts, offset) - 1
        return self.pages[max(index, 0)].number


def load_document(
    data: bytes,
    filename: str,
    password: str | None = None,
    *,
    max_bytes: int | None = None,
    max_pages: int | None = None,
) -> Document:
    """Return the Document read from a file's bytes; raise a DocumentError subclass for a bad file.

    Limits default to RAG_MAX_FILE_MB / RAG_MAX_PAGES (read at call time), else 200 MB / 5000 pages.
    """
    from rag.headings import find_headings  # imported here: both need Page/Heading from this module
    from rag.pdf import read_pdf

    name = PurePath(filename or "").name or "document"
    max_bytes, max_pages = _limits(max_bytes, max_pages)
    check_size(len(data), name, max_bytes)
    kind = _detect_kind(data, name)
    if kind == "pdf":
        pages, empty, outline, notes = read_pdf(data, name, password, max_pages)
    else:
        text, notes = _decode_text(data, name)
        pages, empty, outline = [Page(1, clean_plain_text(text))], [], []
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


# ---- text and Markdown files -----------------------------------------------------------------------------

_CONTROL = {c: None for c in (*range(32), *range(0x7F, 0xA0)) if chr(c) not in "\n\t"}
_CONTROL |= {0xFEFF: None, 0x200B: None}  # BOM / zero-width space inside text
_CONTROL |= {0x0B: "\n", 0x0C: "\n", 0x85: "\n", 0x2028: "\n", 0x2029: "\n"}
_SURROGATES = re.compile("[\ud800-\udfff]")
_BLANK_LINES = re.compile(r"\n{3,}")


def _decode_text(data: bytes, name: str) -> tuple[str, list[str]]:
    """Return the text of a text file and notes; UTF-8 (BOM stripped), else cp1252, else latin-1."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), [f"'{name}' was decoded as UTF-16."]
        except UnicodeDecodeError:
            pass
    if b"\x00" in data[:4096]:
        raise UnsupportedFileError(
            f"'{name}' looks like a binary file, not text. RAG Lab reads {SUPPORTED} files; "
            "upload the document in one of these formats.",
            name,
        )
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError:
        pass
    for encoding, label in (("cp1252", "Windows-1252 (cp1252)"), ("latin-1", "Latin-1 (ISO-8859-1)")):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        return text, [f"'{name}' is not UTF-8; it was decoded as {label}. Check umlauts and special characters."]
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


def clean_plain_text(text: str) -> str:
    """Return a text file's text with Unix line ends, no control characters and at most one blank line."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_CONTROL)
    text = unicodedata.normalize("NFC", _SURROGATES.sub("", text))
    # line by line, not `[ \t]+$` with MULTILINE: that regex retries every space of a long run (quadratic)
    text = "\n".join(line.rstrip(" \t") for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip()


# ---- PDF ---------------------------------------------------------------------------------------------------
