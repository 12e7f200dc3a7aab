""""Show on page": a toggle under a hit, a chunk, a source, a missed question's answer or a judgment's evidence that
draws its PDF pages with the text marked (rag.reports.pages), or for Text and Markdown the text with the span marked.

Drawn only while the toggle is on: a closed toggle costs the page nothing. Pages are rendered PAGE_WIDTH pixels wide,
the width they are shown at, and cached by rag (rag.documents.render). Images come from st.image and the text from
st.code; document text never becomes HTML or Markdown (captions are escaped with md).
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from rag.documents import Box
from rag.reports import (
    CHUNK_CLOSE,
    CHUNK_OPEN,
    MARK_CLOSE,
    MARK_OPEN,
    PagePicture,
    child_span,
    draw_pages,
    hit_pages,
    is_pdf,
    located_boxes,
    text_marked,
)
from rag.store import Hit, Store
from ui import errors, resources
from ui.render import md

PAGE_WIDTH = 760  # pixels: drawn at the width shown
LABEL = "Show on page"
HELP = ("Draw the page with this chunk's text marked (amber) and, where there is one, the matched child, answer or "
        "evidence (red). Text and Markdown show their text with the chunk between ⟦ ⟧ and the match between » «.")


def toggle(key: str, label: str = LABEL) -> bool:
    """Return whether the reader turned "Show on page" on for key (a widget key naming what it shows); label is
    Markdown, so a document's title in it comes escaped (md)."""
    return st.toggle(label, key=f"page-{key}", help=HELP)


def hit(store: Store, found: Hit, key: str, label: str = LABEL) -> None:
    """Draw a toggle (label: Markdown, escaped by the caller); when on, the hit's pages with its chunk and the child
    that ranked it marked."""
    if not toggle(key, label):
        return
    span = child_span(found)
    if not is_pdf(found):
        _text(store, found, [span] if span else [])
        return
    with errors.reported():
        _pictures(hit_pages(resources.archive(store), found, PAGE_WIDTH))


def span(store: Store, found: Hit, spans: Sequence[tuple[int, int]], what: str, key: str,
         label: str = LABEL) -> None:
    """Draw a toggle; when on, the pages of found's chunk with spans of its document (the answer, the evidence: what)
    marked over it, also on pages the chunk does not reach."""
    if not toggle(key, label):
        return
    if not is_pdf(found):
        _text(store, found, spans)
        return
    with errors.reported():
        boxes: tuple[Box, ...] = located_boxes(resources.archive(store), found)
        _pictures(draw_pages(resources.archive(store), found.document_id, found.document_title, PAGE_WIDTH, boxes,
                             spans, what))


def _pictures(pictures: list[PagePicture]) -> None:
    for picture in pictures:
        st.image(picture.png, width=PAGE_WIDTH, output_format="PNG")  # sharp text: JPEG would blur it
        st.caption(md(picture.caption))


def _text(store: Store, found: Hit, spans: Sequence[tuple[int, int]]) -> None:
    with errors.reported():
        st.code(text_marked(resources.archive(store), found, spans), language=None, wrap_lines=True, height=320)
        st.caption(f"{md(found.document_title)} is text, not a PDF: the chunk between {CHUNK_OPEN} {CHUNK_CLOSE}"
                   + (f", the match between {MARK_OPEN} {MARK_CLOSE}" if spans else "") + ".")
