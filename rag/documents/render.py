"""A PDF page drawn as a PNG at a width in pixels, with boxes marked: a translucent fill and an outline per box.

Only the page asked for is rendered (pdfium opens a PDF lazily: a page of a 300-page file takes as long as a page of
a one-page file). Two marks: CHUNK (amber), the chunk's text; MATCH (red), the child that ranked a hit, a judgment's
evidence or a question's answer, drawn over the chunk. A box is in PDF points in the page's own coordinates
(rag.documents.boxes); pdfium's own page-to-device transform places it, so rotated and cropped pages come out right.

Rendered pages are cached in this process by (key, page, width): the base image, and the PNG with its marks; the key
is the document id (the sha256 of the file's bytes), so a changed file is a new key.
"""

from __future__ import annotations

import ctypes
import hashlib
import io
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from rag.documents import bounded
from rag.documents.boxes import Box, PageWords, document_boxes
from rag.documents.model import Document
from rag.documents.pdf import page_words_of, pdfium_lock
from rag.errors import CorruptDocumentError, InvalidSettingsError, NoPageImageError
from rag.words import counted

CHUNK, MATCH = "chunk", "match"
COLOURS = {CHUNK: (245, 166, 35), MATCH: (214, 39, 40)}  # amber: the chunk; red: the child, evidence or answer
COLOUR_NAMES = {CHUNK: "amber", MATCH: "red"}
FILL_ALPHA = 70  # of 255: the words stay readable under the fill
OUTLINE_PIXELS = 2
MIN_WIDTH, MAX_WIDTH = 100, 4000
MAX_HEIGHT = 6000  # pixels: a page far taller than wide is drawn narrower than asked rather than huge
DRAW_MEMORY = 8 * MAX_WIDTH * MAX_HEIGHT  # bytes a drawing may map beyond a read's: pdfium's bitmap and its RGB copy
_PRECISION = 16  # pdfium's page-to-device gives whole pixels: ask at 16x the size, divide, keep the fraction
_BASES: OrderedDict[tuple[str, int, int], tuple[Any, tuple[float, ...]]] = OrderedDict()
_PNGS: OrderedDict[tuple, bytes] = OrderedDict()
_WORDS: OrderedDict[tuple[str, int], tuple[str, PageWords] | None] = OrderedDict()  # place_spans' pages
_KEEP_BASES, _KEEP_PNGS = 12, 64
_CACHE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Mark:
    """Boxes to mark in one colour: kind CHUNK or MATCH."""

    kind: str
    boxes: tuple[Box, ...]


def render_page(data: bytes, page: int, width: int, marks: Sequence[Mark] = (), *, key: str | None = None,
                password: str | None = None, name: str = "the PDF") -> bytes:
    """Return the PNG of page (1-based) of the PDF data, width pixels wide, with the marks' boxes on that page drawn.

    key: what the cache knows the file by (default the sha256 of data). NoPageImageError for a page past the end,
    EncryptedDocumentError without the right password, CorruptDocumentError when pdfium cannot open the file.
    """
    if not MIN_WIDTH <= width <= MAX_WIDTH:
        raise InvalidSettingsError(f"A page is drawn {MIN_WIDTH} to {MAX_WIDTH} pixels wide, not {width}. Give a "
                                   "width in that range.")
    key = key or hashlib.sha256(data).hexdigest()
    marks = tuple(Mark(m.kind, tuple(b for b in m.boxes if b.page == page)) for m in marks)
    wanted = (key, page, width, marks)
    with _CACHE_LOCK:
        if wanted in _PNGS:
            _PNGS.move_to_end(wanted)
            return _PNGS[wanted]
    base, transform = _base(data, page, width, key, password, name)
    png = _png(_marked(base, transform, marks))
    with _CACHE_LOCK:
        _remember(_PNGS, wanted, png, _KEEP_PNGS)
    return png


def page_count(data: bytes, *, password: str | None = None, name: str = "the PDF") -> int:
    """Return the number of pages of the PDF data (EncryptedDocumentError, CorruptDocumentError as render_page)."""
    with pdfium_lock():
        pdf = _open(data, password, name)
        try:
            return len(pdf)
        finally:
            pdf.close()


def unlocked_copy(data: bytes, password: str | None) -> bytes:
    """Return the PDF data as a copy that opens without a password (the data itself when it needs none)."""
    if not password:
        return data
    import pypdfium2

    with pdfium_lock():
        pdf = _open(data, password, "the PDF")
        try:
            out = io.BytesIO()
            pdf.save(out, flags=pypdfium2.raw.FPDF_REMOVE_SECURITY)
            return out.getvalue()
        finally:
            pdf.close()


def _base(data: bytes, page: int, width: int, key: str, password: str | None, name: str
          ) -> tuple[Any, tuple[float, ...]]:
    """Return (the page as an RGB image, the affine transform from PDF points to its pixels), cached."""
    cached = (key, page, width)
    with _CACHE_LOCK:
        if cached in _BASES:
            _BASES.move_to_end(cached)
            return _BASES[cached]
    from PIL import Image

    # drawn in a child of bounded memory and time, as a read is (rag.documents.bounded): a page that expands to far
    # more than it looks, or makes pdfium loop, costs that child, never the app
    memory = bounded.memory_limit(len(data), 0) + DRAW_MEMORY
    pixels, size, transform = bounded.run(partial(_draw_page, data, page, width, password, name), name, memory,
                                          pdfium_lock())
    drawn = Image.frombytes("RGB", size, pixels), transform
    with _CACHE_LOCK:
        _remember(_BASES, cached, drawn, _KEEP_BASES)
    return drawn


def _draw_page(data: bytes, page: int, width: int, password: str | None, name: str, _progress: Any
               ) -> tuple[bytes, tuple[int, int], tuple[float, ...]]:
    """Return page (1-based) drawn width pixels wide as (RGB bytes, size, transform); in the drawing child."""
    with pdfium_lock():
        pdf = _open(data, password, name)
        try:
            if not 1 <= page <= len(pdf):
                raise NoPageImageError(f"'{name}' has {counted(len(pdf), 'page')}; page {page} is past its end. "
                                       f"Choose a page from 1 to {len(pdf)}.")
            image, transform = _draw(pdf[page - 1], width)
        finally:
            pdf.close()
    return image.tobytes(), image.size, transform


def _draw(pdf_page: Any, width: int) -> tuple[Any, tuple[float, ...]]:
    """Return the page rendered width pixels wide (or less, under MAX_HEIGHT) and its transform; closes the page."""
    try:
        page_width, page_height = pdf_page.get_size()
        scale = min(width / max(page_width, 1.0), MAX_HEIGHT / max(page_height, 1.0))
        bitmap = pdf_page.render(scale=scale, may_draw_forms=True)
        try:
            image = bitmap.to_pil().convert("RGB")
        finally:
            bitmap.close()
        return image, _transform(pdf_page, image.width, image.height)
    finally:
        pdf_page.close()


def _transform(pdf_page: Any, width: int, height: int) -> tuple[float, ...]:
    """Return (a, b, c, d, e, f): pixel x = a*x + c*y + e, pixel y = b*x + d*y + f for PDF points (x, y)."""
    import pypdfium2

    left, bottom, right, top = pdf_page.get_mediabox()
    span = max(right - left, top - bottom, 1.0)

    def device(x: float, y: float) -> tuple[float, float]:
        dx, dy = ctypes.c_int(), ctypes.c_int()
        pypdfium2.raw.FPDF_PageToDevice(pdf_page.raw, 0, 0, width * _PRECISION, height * _PRECISION, 0,
                                        ctypes.c_double(x), ctypes.c_double(y), ctypes.byref(dx), ctypes.byref(dy))
        return dx.value / _PRECISION, dy.value / _PRECISION

    (x0, y0), (x1, y1), (x2, y2) = device(left, bottom), device(left + span, bottom), device(left, bottom + span)
    a, b, c, d = (x1 - x0) / span, (y1 - y0) / span, (x2 - x0) / span, (y2 - y0) / span
    return a, b, c, d, x0 - a * left - c * bottom, y0 - b * left - d * bottom


def _marked(base: Any, transform: tuple[float, ...], marks: tuple[Mark, ...]) -> Any:
    """Return a copy of base with each mark's boxes filled translucently and outlined, CHUNK first, MATCH over it."""
    from PIL import Image, ImageDraw

    if not any(m.boxes for m in marks):
        return base
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    for mark in sorted(marks, key=lambda m: m.kind != CHUNK):
        colour = COLOURS.get(mark.kind, COLOURS[MATCH])
        for box in mark.boxes:
            draw.rectangle(_pixels(transform, box), fill=(*colour, FILL_ALPHA), outline=(*colour, 255),
                           width=OUTLINE_PIXELS)
    return Image.alpha_composite(base.convert("RGBA"), overlay).convert("RGB")


def _pixels(transform: tuple[float, ...], box: Box) -> tuple[float, float, float, float]:
    a, b, c, d, e, f = transform
    corners = [(a * x + c * y + e, b * x + d * y + f) for x in (box.left, box.right) for y in (box.bottom, box.top)]
    xs, ys = [x for x, _ in corners], [y for _, y in corners]
    pad = 1.0  # a pixel around the glyphs: the outline does not cross the letters
    return min(xs) - pad, min(ys) - pad, max(xs) + pad, max(ys) + pad


def _png(image: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)  # fast: a page is drawn while the reader waits
    return out.getvalue()


def _open(data: bytes, password: str | None, name: str) -> Any:
    """Return the opened pdfium document (the caller holds the lock and closes it)."""
    import pypdfium2

    from rag.documents.pypdf_text import password_error

    for attempt in dict.fromkeys([password or None, None]):  # an empty user password opens without one
        try:
            return pypdfium2.PdfDocument(data, password=attempt)
        except pypdfium2.PdfiumError as error:
            if getattr(error, "err_code", None) != pypdfium2.raw.FPDF_ERR_PASSWORD:
                raise CorruptDocumentError(f"'{name}' cannot be opened as a PDF to draw its page (damaged or not a "
                                           "PDF). Check the file, or ingest it again.", name) from None
    raise password_error(name, password)


def _remember(cache: OrderedDict, key: Any, value: Any, keep: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > keep:
        cache.popitem(last=False)


def stack_pngs(pngs: Sequence[bytes], gap: int = 16) -> bytes:
    """Return one PNG of the pages stacked top to bottom, gap grey pixels between them (a single page as it is)."""
    from PIL import Image

    if len(pngs) == 1:
        return pngs[0]
    images = [Image.open(io.BytesIO(png)).convert("RGB") for png in pngs]
    stacked = Image.new("RGB", (max(i.width for i in images), sum(i.height for i in images) + gap * (len(images) - 1)),
                        (200, 200, 200))
    top = 0
    for image in images:
        stacked.paste(image, (0, top))
        top += image.height + gap
    return _png(stacked)


def place_spans(data: bytes, document: Document, spans: Sequence[tuple[int, int]], *, key: str | None = None
                ) -> list[list[Box]] | None:
    """Return the boxes of each span of document's text (document: as read from data, e.g. the archive's copy, with
    or without boxes) reading only the pages the spans touch; None when a page reads differently now (the caller
    reads the whole file with boxes instead). Pages read are cached by (key, page)."""
    key = key or hashlib.sha256(data).hexdigest()
    starts, lengths = document.page_starts, [len(p.text) for p in document.pages]
    touched = {i for start, end in spans for i, (s, n) in enumerate(zip(starts, lengths, strict=True))
               if s < end and s + n > start}
    words: list[PageWords | None] = [None] * len(document.pages)
    for index in sorted(touched):
        read = _page_words(data, key, index)
        if read is None or read[0] != document.pages[index].text:
            return None
        words[index] = read[1]
    return document_boxes(words, starts, lengths, spans)


def _page_words(data: bytes, key: str, index: int) -> tuple[str, PageWords | None] | None:
    with _CACHE_LOCK:
        if (key, index) in _WORDS:
            _WORDS.move_to_end((key, index))
            return _WORDS[(key, index)]
    read = page_words_of(data, index)
    with _CACHE_LOCK:
        _remember(_WORDS, (key, index), read, _KEEP_BASES * 4)
    return read
