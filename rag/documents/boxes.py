"""Where a span of a PDF's text is on its pages: one rectangle (Box) per line fragment, in the page's own PDF points.

While a page is read (rag.documents.pdf, in the reading child) its clean text keeps, per character, the index of
pdfium's character it came from (rag.documents.textmap), through ligatures, hyphenation and whitespace cleaning.
Each word of the clean text then gets its rectangles from pdfium in one call (FPDFText_CountRects over the word's
characters, GetRect for each: pdfium unions the character boxes in C; a word split by a line break gets two).
A page keeps them as a PageWords: numpy arrays of word spans and rectangles, a few dozen bytes a word. The boxes of
any span (a chunk, a child, a judgment's evidence) are then its words' rectangles joined along each line: no
pdfium, no second read. Measured in bench/boxes.py (docs/benchmarks.md, "Boxes").

Coordinates are PDF user space of the page, unrotated: x to the right, y up, origin where the page's MediaBox
puts it (usually its lower left corner). A page with /Rotate is shown turned; its boxes are not (the renderer
turns both, e.g. with pypdfium2's page.get_rotation() and the page size).
"""

from __future__ import annotations

import bisect
import ctypes
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_WORD = re.compile(r"\S+")
_DIGITS = 2  # decimals of a coordinate in JSON: 1/100 pt


@dataclass(frozen=True)
class Box:
    """A rectangle of text on a page: 1-based page number, PDF points in the page's own (unrotated) coordinates."""

    page: int
    left: float
    bottom: float
    right: float
    top: float

    def as_dict(self) -> dict[str, float | int]:
        return {"page": self.page, "left": round(self.left, _DIGITS), "bottom": round(self.bottom, _DIGITS),
                "right": round(self.right, _DIGITS), "top": round(self.top, _DIGITS)}

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> Box:
        """Return the Box of as_dict's form; ValueError (or KeyError, TypeError) for anything else."""
        box = cls(int(value["page"]), float(value["left"]), float(value["bottom"]), float(value["right"]),
                  float(value["top"]))
        if box.page < 1 or not all(np.isfinite([box.left, box.bottom, box.right, box.top])):
            raise ValueError(f"not a box: {value!r}")
        return box


def boxes_from_payload(payload: dict[str, Any] | None) -> list[Box]:
    """Return the boxes a stored chunk's payload carries; [] when it has none (ingested before boxes) or they are
    not boxes."""
    try:
        return [Box.from_dict(value) for value in (payload or {}).get("boxes") or []]
    except (KeyError, TypeError, ValueError):
        return []


@dataclass(frozen=True, eq=False)
class PageWords:
    """The words of one page's clean text and their rectangles: word i is text[starts[i]:ends[i]], its rectangles
    rects[first[i]:first[i + 1]] (left, bottom, right, top)."""

    starts: np.ndarray  # int32, ascending
    ends: np.ndarray  # int32
    first: np.ndarray  # int32, len(starts) + 1
    rects: np.ndarray  # float32, (n, 4)

    def span_rects(self, start: int, end: int) -> np.ndarray:
        """Return the rectangles of the words that overlap text[start:end], in text order."""
        lo = int(np.searchsorted(self.ends, start, side="right"))
        hi = int(np.searchsorted(self.starts, end, side="left"))
        if hi <= lo:
            return self.rects[:0]
        return self.rects[self.first[lo]:self.first[hi]]


# ---- at read time: the words of a page, from pdfium (the caller holds pdfium's lock) ---------------------------

def page_words(textpage: Any, raw: str, text: str, to_raw: np.ndarray) -> PageWords:
    """Return the words of a page's clean text with their rectangles; to_raw[i] is the index in raw (the page's
    pdfium text, as get_text_range returned it) of text[i]."""
    from pypdfium2 import raw as pdfium

    spans = [match.span() for match in _WORD.finditer(text)]
    bounds = np.asarray(spans, dtype=np.int32).reshape(-1, 2)
    chars = _char_indices(textpage, raw)
    first_char = chars[to_raw[bounds[:, 0]]] if len(bounds) else bounds[:, 0]
    last_char = chars[to_raw[bounds[:, 1] - 1]] if len(bounds) else bounds[:, 0]
    values = [ctypes.c_double() for _ in range(4)]
    left, top, right, bottom = (ctypes.byref(v) for v in values)
    count_rects, get_rect, handle = pdfium.FPDFText_CountRects, pdfium.FPDFText_GetRect, textpage.raw
    found: list[float] = []
    first = [0]
    for a, b in zip(first_char.tolist(), last_char.tolist(), strict=True):
        for i in range(max(count_rects(handle, a, b - a + 1), 0)):
            if get_rect(handle, i, left, top, right, bottom):
                found += (values[0].value, values[3].value, values[2].value, values[1].value)
        first.append(len(found) // 4)
    return PageWords(bounds[:, 0].copy(), bounds[:, 1].copy(), np.asarray(first, dtype=np.int32),
                     np.asarray(found, dtype=np.float32).reshape(-1, 4))


def _char_indices(textpage: Any, raw: str) -> np.ndarray:
    """Return, for each character of raw (get_text_range's text of the page), pdfium's index of its character.

    pdfium counts UTF-16 units: a character beyond the basic plane is two of its characters (a surrogate pair) and
    one of Python's. Where pdfium's text leaves characters out or adds some (not seen in the shared PDFs), each
    unit is looked up (FPDFText_GetCharIndexFromTextIndex), on such pages only.
    """
    from pypdfium2 import raw as pdfium

    codes = np.frombuffer(raw.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    wide = (codes > 0xFFFF).astype(np.int32)
    units = (np.cumsum(wide) - wide + np.arange(len(raw), dtype=np.int32)).astype(np.int32)
    if len(raw) + int(wide.sum()) == pdfium.FPDFText_CountChars(textpage.raw):
        return units
    looked = np.fromiter((pdfium.FPDFText_GetCharIndexFromTextIndex(textpage.raw, u) for u in units.tolist()),
                         dtype=np.int32, count=len(raw))
    return np.maximum.accumulate(np.maximum(looked, 0)) if len(looked) else looked


# ---- at chunk time: the boxes of spans ---------------------------------------------------------------------------

def document_boxes(words: Sequence[PageWords | None], page_starts: Sequence[int], page_lengths: Sequence[int],
                   spans: Iterable[tuple[int, int]]) -> list[list[Box]]:
    """Return the boxes of each span of a document's text (offsets as chunks use them) from its pages' words; a page
    without words (read by pypdf, or not a PDF) gives no boxes."""
    found = []
    for start, end in spans:
        boxes: list[Box] = []
        for index in range(max(bisect.bisect_right(page_starts, start) - 1, 0), len(page_starts)):
            page_start, length = page_starts[index], page_lengths[index]
            if page_start >= end:
                break
            if page_start + length <= start or words[index] is None:
                continue
            rects = words[index].span_rects(max(start - page_start, 0), min(end - page_start, length))
            boxes += (Box(index + 1, *rect) for rect in line_fragments(rects))
        found.append(boxes)
    return found


def line_fragments(rects: np.ndarray) -> list[tuple[float, float, float, float]]:
    """Return rects (words' rectangles in reading order) joined into one rectangle per line fragment.

    A rectangle joins the one before when both are on one line and close: across (their heights overlap by half
    the smaller, the gap is under 1.2 line heights) or, for text running up or down the page, along (their widths
    overlap by half, both taller than wide). A column's gap, a table's cell, the next line start a new one.
    """
    fragments: list[list[float]] = []
    for left, bottom, right, top in rects.tolist():
        if fragments and _joins(fragments[-1], left, bottom, right, top):
            box = fragments[-1]
            box[:] = min(box[0], left), min(box[1], bottom), max(box[2], right), max(box[3], top)
        else:
            fragments.append([left, bottom, right, top])
    return [(round(a, _DIGITS), round(b, _DIGITS), round(c, _DIGITS), round(d, _DIGITS)) for a, b, c, d in fragments]


def _joins(box: list[float], left: float, bottom: float, right: float, top: float) -> bool:
    height, width = top - bottom, right - left
    box_height, box_width = box[3] - box[1], box[2] - box[0]
    across = min(box[3], top) - max(box[1], bottom)
    if across >= 0.5 * min(height, box_height) and height > 0:
        line = max(height, box_height)
        return -line <= left - box[2] <= 1.2 * line
    along = min(box[2], right) - max(box[0], left)
    if height > width > 0 and box_height > box_width and along >= 0.5 * min(width, box_width):
        line = max(width, box_width)
        return -line <= max(bottom - box[3], box[1] - top) <= 1.2 * line  # up the page, or down
    return False
