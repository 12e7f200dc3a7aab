"""What a read document is: its pages of clean text, its headings, and where each page begins."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import cached_property

from rag.documents.boxes import Box, PageWords, document_boxes

PAGE_SEPARATOR = "\n\n"
SUPPORTED = "PDF (.pdf), text (.txt) and Markdown (.md, .markdown)"


@dataclass(frozen=True)
class Page:
    number: int  # 1-based
    text: str
    # a PDF page read with boxes: its words' rectangles (rag.documents.boxes); None otherwise, and where pypdf read it
    words: PageWords | None = field(default=None, compare=False, repr=False)


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

    @property
    def has_boxes(self) -> bool:
        """Return whether the document was read with its words' rectangles (a PDF, load_document(boxes=True))."""
        return any(page.words is not None for page in self.pages)

    def span_boxes(self, spans: list[tuple[int, int]]) -> list[list[Box]]:
        """Return the boxes of each span of text (one per line fragment; rag.documents.boxes); [] for each when the
        document has no boxes (text, Markdown, or a PDF read without them)."""
        if not self.has_boxes:
            return [[] for _ in spans]
        return document_boxes([page.words for page in self.pages], self.page_starts,
                              [len(page.text) for page in self.pages], spans)
