"""What a document may expand to: at most RAG_MAX_CHARS characters, counted page by page while it is read.

A PDF's size says little about its text: a content stream compressed 400:1 (issue 39: a 122 KB file, one page of
35 million characters) passes RAG_MAX_FILE_MB and RAG_MAX_PAGES, and pdfium needs about 260 bytes of memory for
each character of the page it extracts (10.5 GB for that page). So a PDF's text is counted while it is read:

- before pdfium (or pypdf) reads a page, the page's content streams are decoded (pypdf's decoders, which stop at
  75 MB a stream, one stream at a time); a page whose streams are longer than the characters still allowed has
  the bytes of its strings (the operands of the text operators) counted, and more of them than allowed end the
  read before the page's text is extracted. A real page's streams hold a few kB to a few MB: the count is rare;
- after each page, its characters are added up, and the page that crosses the limit ends the read.

What these checks cannot see (text in a Form XObject drawn a million times, an unknown kind of bomb) meets the
memory limit and the timeout of the child process that reads a PDF (rag.documents.bounded).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rag.errors import DocumentTooLargeError

# a literal string, (...) with \-escapes (unrolled: 20x faster than an alternation per byte; nested parentheses
# are counted in part, which is enough for an estimate); a hex string, <4f6b>, is half as many bytes of text
_LITERAL = re.compile(rb"\([^()\\]*(?:\\.[^()\\]*)*\)")
_HEX = re.compile(rb"<[0-9A-Fa-f \t\r\n]*>")
STREAM_LIMIT = 75_000_000  # pypdf's limit of a decoded stream (pypdf.Configuration): one over it holds more


def too_large(name: str, max_chars: int, where: str) -> DocumentTooLargeError:
    """Return the error for a document that expands to more than max_chars characters; where says what showed it."""
    return DocumentTooLargeError(
        f"'{name}' expands to more than {max_chars:,} characters of text ({where}). "
        "Split it into smaller files, or raise the limit with RAG_MAX_CHARS.",
        name,
    )


class TextBudget:
    """The characters a document may still expand to: check_page before a PDF page is read, add after it."""

    def __init__(self, name: str, max_chars: int, reader: Callable[[], Any] | None = None):
        self.name, self.max_chars, self.chars = name, max_chars, 0
        self._reader = reader  # returns the document's pypdf reader, None when pypdf cannot open it

    def check_page(self, number: int) -> None:
        """Raise DocumentTooLargeError when page number's (1-based) content streams hold more text than is left."""
        reader = self._reader() if self._reader is not None else None
        if reader is None:
            return
        left = self.max_chars - self.chars
        if content_text(reader, number, left) > left:
            where = f"page {number} alone holds more" if not self.chars else (
                f"page {number} holds more than the {left:,} left after the {self.chars:,} of the pages before")
            raise too_large(self.name, self.max_chars, where)

    def add(self, number: int, text: str | None) -> None:
        """Count page number's text; raise DocumentTooLargeError once the document holds more than max_chars."""
        self.chars += len(text or "")
        if self.chars > self.max_chars:
            raise too_large(self.name, self.max_chars, f"{self.chars:,} by page {number}")


def content_text(reader: Any, number: int, left: int) -> int:
    """Return how many characters page number's (1-based) content streams can show, as an estimate: their decoded
    length while it is at most left (a page can show no more characters than its streams have bytes, ligatures
    and the spaces a reader adds aside), else the bytes of their strings, counted until they exceed left; 0 when
    the page cannot be decoded (its reader decides). A stream over pypdf's limit counts as STREAM_LIMIT."""
    from pypdf.errors import LimitReachedError
    from pypdf.filters import decode_stream_data

    try:
        contents = reader.pages[number - 1].get("/Contents")
        contents = contents.get_object() if contents is not None else []
        streams = list(contents) if isinstance(contents, list) else [contents]
    except Exception:  # a broken page tree or page: pdfium or pypdf say so when they read it
        return 0
    decoded = estimate = 0
    for stream in streams:
        try:
            data = decode_stream_data(stream.get_object())
        except LimitReachedError:
            return estimate + STREAM_LIMIT
        except Exception:  # a damaged or unknown filter: the reader skips it or fails on the page
            continue
        decoded += len(data)
        estimate += len(data) if decoded <= left else string_bytes(data, left - estimate)
        if estimate > left:
            break
    return estimate


def string_bytes(data: bytes, stop: int) -> int:
    """Return the bytes of text in a content stream's strings (a hex string's digits count half), counted until they
    exceed stop."""
    total = 0
    for match in _LITERAL.finditer(data):
        total += match.end() - match.start() - 2
        if total > stop:
            return total
    for match in _HEX.finditer(data):
        total += (match.end() - match.start() - 2) // 2
        if total > stop:
            return total
    return total

