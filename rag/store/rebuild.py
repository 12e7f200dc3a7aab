"""Stored documents rebuilt from their chunks, so they can be chunked again without the file.

The store keeps chunks, not files: a stored document's text, pages and headings are rebuilt from its
chunks' offsets (consecutive chunks may overlap; gaps between them become line breaks).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

from rag.chunking import Chunk
from rag.documents import KINDS_BY_SUFFIX, PAGE_SEPARATOR, Document, Heading, Page
from rag.retrieval import Hit

ChunkLike = Chunk | Hit


def document_from_chunks(document_id: str, title: str, chunks: Sequence[ChunkLike], kind: str | None = None
                         ) -> Document:  # fmt: skip
    """Return the document rebuilt from its stored chunks, so it can be re-chunked without the file.

    Chunk text lands at its offsets; what lies between chunks (only whitespace, which the chunker skips)
    becomes newlines. Chunks without offsets (foreign collections) are joined with blank lines. Headings
    come from the heading paths, pages from the chunks' page numbers (a page break inside a chunk is
    placed at its last paragraph break). The kind is "markdown" for a Markdown document (its stored
    document_kind, else its title's suffix), so its tables are chunked again as at ingest; else "text".
    """
    kind = kind or _kind(title, chunks)
    ordered = sorted(chunks, key=lambda c: (c.chunk_index is None, c.chunk_index or 0))
    spans = _spans(ordered)
    chars = ["\n"] * max((b for _, b in spans), default=0)
    for chunk, (a, b) in zip(ordered, spans, strict=True):
        chars[a:b] = chunk.content
    text = "".join(chars)
    starts = _page_starts(ordered, spans, text)
    numbers = sorted(starts)
    edges = [starts[n] for n in numbers] + [len(text) + len(PAGE_SEPARATOR)]
    cut = len(PAGE_SEPARATOR)
    pages = tuple(Page(n, text[a : b - cut]) for n, a, b in zip(numbers, edges, edges[1:], strict=False))
    headings = _headings(ordered, spans)
    return Document(document_id, title, kind, pages or (Page(1, text),), text, headings)


def _kind(title: str, chunks: Sequence[ChunkLike]) -> str:
    """Return "markdown" for the chunks of a Markdown document (rag.chunking.tables applies), else "text"."""
    stored = {c.payload.get("document_kind") for c in chunks if isinstance(c, Hit)}
    if stored - {None}:
        return "markdown" if "markdown" in stored else "text"
    return "markdown" if KINDS_BY_SUFFIX.get(PurePath(title).suffix.lower()) == "markdown" else "text"


def _spans(chunks: Sequence[ChunkLike]) -> list[tuple[int, int]]:
    """Return each chunk's [start, end): its own offsets when all have them, else laid end to end."""
    if all(c.start is not None and c.end is not None and c.end - c.start == len(c.content) for c in chunks):
        return [(c.start, c.end) for c in chunks]
    spans, offset = [], 0
    for chunk in chunks:
        spans.append((offset, offset + len(chunk.content)))
        offset += len(chunk.content) + len(PAGE_SEPARATOR)
    return spans


def _page_starts(chunks: Sequence[ChunkLike], spans: list[tuple[int, int]], text: str) -> dict[int, int]:
    """Return page number -> offset where the page begins, from the pages the chunks were found on."""
    starts: dict[int, int] = {}
    for chunk, (a, b) in zip(chunks, spans, strict=True):
        if chunk.page_start is not None and chunk.page_start not in starts:
            starts[chunk.page_start] = 0 if not starts else a
        if chunk.page_end is not None and chunk.page_end not in starts and chunk.page_end != chunk.page_start:
            cut = text.rfind(PAGE_SEPARATOR, a, b)  # the page break is a blank line inside this chunk
            starts[chunk.page_end] = cut + len(PAGE_SEPARATOR) if cut > a else b
    ordered, last = {}, -len(PAGE_SEPARATOR)
    for number in sorted(starts):  # pages must begin in order and at least one separator apart
        if starts[number] >= last + len(PAGE_SEPARATOR) or not ordered:
            ordered[number] = last = max(starts[number], 0)
    return ordered


def _headings(chunks: Sequence[ChunkLike], spans: list[tuple[int, int]]) -> tuple[Heading, ...]:
    """Return the headings implied by the chunks' heading paths, each starting where its first chunk starts."""
    found = []
    starts = {id(chunk): a for chunk, (a, _) in zip(chunks, spans, strict=True)}
    for chunk, path, first_new in walk_sections(chunks):
        for depth in range(first_new, len(path)):
            found.append(Heading(path[depth], depth + 1, starts[id(chunk)], "stored"))
    return tuple(sorted(found, key=lambda h: h.start))


def walk_sections(chunks: Sequence[ChunkLike]):
    """Yield (chunk, heading path, depth of the first heading that begins at this chunk) in order.

    The depth equals the path length when no new heading begins (the chunk continues the section before).
    A path equal to the one before continues it; a path that is a prefix of the one before means the
    heading at its last level appeared again.
    """
    previous: tuple[str, ...] | None = None
    for chunk in sorted(chunks, key=lambda c: (c.chunk_index is None, c.chunk_index or 0)):
        path = tuple(chunk.heading_path)
        if path == previous:
            first_new = max(len(path), 1)
        else:
            common = 0
            while previous and common < min(len(path), len(previous)) and path[common] == previous[common]:
                common += 1
            first_new = min(common, max(len(path) - 1, 0))
        previous = path
        yield chunk, path, first_new
