"""What "Show on page" draws: a hit's, a chunk's, an answer's or a judgment's evidence's pages, with the text marked.

A PDF's pages are drawn from the file kept at ingest (rag.store.DocumentArchive.original) with the chunk's boxes
from its payload, else placed in that file by the chunk's offsets (amber) and a span's boxes (red: the child that
ranked a hit, a question's answer, a judgment's evidence), found in the file the same way the chunk's were
(rag.documents.span_boxes). A document stored before boxes or files were kept, or whose file is gone, gives
NoPageImageError: one line saying to ingest it again.

Text and Markdown have no pages to draw: marked_text gives their text as plain text with the chunk between
CHUNK_OPEN and CHUNK_CLOSE and the child, answer or evidence between MARK_OPEN and MARK_CLOSE, for the app to show
as text (never as Markdown or HTML).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from rag.documents import CHUNK, COLOUR_NAMES, MATCH, Box, Document, Mark, load_document, place_spans, render_page
from rag.errors import NoPageImageError
from rag.store import DocumentArchive, Hit

CHUNK_OPEN, CHUNK_CLOSE = "⟦", "⟧"  # the chunk in a text shown as text
MARK_OPEN, MARK_CLOSE = "»", "«"  # the child, answer or evidence inside it
AROUND = 400  # characters of text shown before and after a marked span of a long document
Span = tuple[int, int]


@dataclass(frozen=True)
class PagePicture:
    """One drawn page: its number, the PNG, and what its colours mean."""

    page: int
    png: bytes
    caption: str


def is_pdf(hit: Hit) -> bool:
    """Return whether the hit's document is a PDF (its pages can be drawn), else text to mark (marked_text)."""
    return hit.payload.get("document_kind") == "pdf"


def chunk_boxes(hit: Hit) -> tuple[Box, ...]:
    """Return the boxes the chunk's payload carries; NoPageImageError when it was stored before boxes were kept."""
    boxes = hit.payload.get("boxes")
    if not isinstance(boxes, list):
        raise NoPageImageError(f"No page image is available for '{hit.document_title}' until the document is "
                               "re-ingested: it was stored before RAG Lab kept where its text lies. Upload it again.")
    return tuple(Box.from_dict(b) for b in boxes)


def located_boxes(archive: DocumentArchive, hit: Hit) -> tuple[Box, ...]:
    """Return the chunk's boxes: its payload's, else placed in the kept file by the chunk's offsets, the way evidence
    is (a chunk stored without them: a sweep's collection of an ingested document, a re-chunk without the file at
    hand); NoPageImageError when there are none and no file to place them in."""
    kept = hit.payload.get("boxes")
    if isinstance(kept, list) and kept:
        return tuple(Box.from_dict(b) for b in kept)
    path = archive.original_path(hit.document_id)
    if hit.start is not None and hit.end is not None and hit.end > hit.start and path is not None and path.exists():
        return tuple(_span_boxes(str(archive.folder), hit.document_id, ((hit.start, hit.end),))[0])
    return chunk_boxes(hit)


def child_span(hit: Hit) -> Span | None:
    """Return the document span of the child that ranked the hit (None: no child, or the chunk itself ranked it)."""
    if hit.child is None or hit.child.index is None or hit.start is None:
        return None
    return hit.start + hit.child.start, hit.start + hit.child.end


def child_boxes(hit: Hit) -> tuple[Box, ...] | None:
    """Return the boxes of the child that ranked the hit, as its parent's payload keeps them ("child_boxes", by
    child index); None when there is no such child or the payload does not keep them."""
    kept = hit.payload.get("child_boxes")
    if hit.child is None or hit.child.index is None or not isinstance(kept, list) or hit.child.index >= len(kept):
        return None
    return tuple(Box.from_dict(b) for b in kept[hit.child.index])


def hit_pages(archive: DocumentArchive, hit: Hit, width: int) -> list[PagePicture]:
    """Return the pages of a hit's chunk with its boxes marked, and the child that ranked it in the other colour
    (its boxes from the payload: the file is not read again)."""
    boxes, kid = located_boxes(archive, hit), child_boxes(hit)
    span = child_span(hit)
    if kid is not None:
        return draw_pages(archive, hit.document_id, hit.document_title, width, boxes, (), "the matched child", kid)
    return draw_pages(archive, hit.document_id, hit.document_title, width, boxes, [span] if span else [],
                      "the matched child")


def draw_pages(archive: DocumentArchive, document_id: str, title: str, width: int, boxes: Sequence[Box] = (),
               spans: Sequence[Span] = (), span_name: str = "the span", span_boxes: Sequence[Box] = ()
               ) -> list[PagePicture]:
    """Return the pages that hold boxes or a span's text, boxes amber and spans red (spans: offsets of the
    document's text, placed by reading the kept file; span_boxes: already placed).

    NoPageImageError when the document's file is not kept, or a page is past its end.
    """
    data = archive.original(document_id, title)
    found = [*span_boxes, *(b for group in _span_boxes(str(archive.folder), document_id, tuple(spans)) for b in group)
             ] if spans else list(span_boxes)
    marked = [Mark(CHUNK, tuple(boxes)), Mark(MATCH, tuple(found))]
    numbers = sorted({b.page for m in marked for b in m.boxes})
    if not numbers:
        raise NoPageImageError(f"No page image is available for this chunk of '{title}' until the document is "
                               "re-ingested: the chunk was stored without where its text lies (or its page has no text "
                               "layer).")
    legend = "; ".join(part for part, present in (
        (f"{COLOUR_NAMES[CHUNK]}: the chunk", bool(boxes)), (f"{COLOUR_NAMES[MATCH]}: {span_name}", bool(found)))
        if present)
    return [PagePicture(n, render_page(data, n, width, marked, key=document_id, name=title),
                        f"Page {n} of {title}" + (f" ({legend})" if legend else "")) for n in numbers]


@functools.lru_cache(maxsize=64)
def _span_boxes(folder: str, document_id: str, spans: tuple[Span, ...]) -> list[list[Box]]:
    """Return the boxes of each span of a kept file's text: from the pages the spans touch alone, when the document
    kept at ingest says where its pages begin, else from the whole file read with its words' rectangles. Remembered:
    a toggle left on places its span once, not on every rerun of the page (a document id is its file's sha256)."""
    archive = DocumentArchive(folder)
    saved = archive.load(document_id)
    if saved is not None:
        placed = place_spans(archive.original(document_id), saved, spans, key=document_id)
        if placed is not None:
            return placed
    return _boxed(folder, document_id).span_boxes(list(spans))


@functools.lru_cache(maxsize=4)
def _boxed(folder: str, document_id: str) -> Document:
    """Return the kept file read with its words' rectangles: read once (the whole file), then any span is placed
    without reading it again."""
    return load_document(DocumentArchive(folder).original(document_id), f"{document_id}.pdf", boxes=True)


def marked_text(text: str, chunks: Sequence[Span] = (), matches: Sequence[Span] = (), around: int = AROUND) -> str:
    """Return text with each chunk span between CHUNK_OPEN and CHUNK_CLOSE and each match span (a child, an answer,
    evidence) between MARK_OPEN and MARK_CLOSE, cut to `around` characters about them ("…" where text is left out);
    plain text, to show with st.text or st.code, never as Markdown."""
    marks = [(max(0, s), min(len(text), e), kind) for kind, spans in ((0, chunks), (1, matches)) for s, e in spans
             if e > s and s < len(text)]
    if not marks:
        return text
    first = max(0, min(s for s, _, _ in marks) - around)
    last = min(len(text), max(e for _, e, _ in marks) + around)
    # (position, order, marker): at one position closes come before opens, a chunk opens before a match inside it
    # and closes after it
    events = sorted([(s, 2 + kind, (CHUNK_OPEN, MARK_OPEN)[kind]) for s, _, kind in marks]
                    + [(e, 1 - kind, (CHUNK_CLOSE, MARK_CLOSE)[kind]) for _, e, kind in marks])
    parts, at = ["…" if first else ""], first
    for position, _, marker in events:
        parts += [text[at:position], marker]
        at = position
    parts += [text[at:last], "…" if last < len(text) else ""]
    return "".join(parts)


def text_marked(archive: DocumentArchive, hit: Hit, matches: Sequence[Span] = ()) -> str:
    """Return the text about a Text or Markdown hit with its chunk and the match spans marked (marked_text): from the
    document kept at ingest, else the chunk's own content (offsets as in the document)."""
    saved = archive.load(hit.document_id)
    chunk = [(hit.start, hit.end)] if hit.start is not None and hit.end is not None else []
    if saved is not None:
        return marked_text(saved.text, chunk, matches)
    start = hit.start or 0
    inside = [(s - start, e - start) for s, e in matches]
    return marked_text(hit.content, [(0, len(hit.content))] if chunk else [], inside)
