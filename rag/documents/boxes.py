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
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_BLANK = np.array([chr(c).isspace() for c in range(0x3002)])  # whitespace by code point; none above U+3000
_DIGITS = 2  # decimals of a coordinate: 1/100 pt
_SCALE = 10 ** _DIGITS
_new, _set = object.__new__, object.__setattr__


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
    rects: np.ndarray  # int32, (n, 4): hundredths of a point (a third of the float64 bytes to send from the child)

    def span_lines(self, start: int, end: int, page: int) -> list[Box]:
        """Return the boxes of text[start:end] on this page (its number): one per line fragment."""
        lo = int(np.searchsorted(self.ends, start, side="right"))
        hi = int(np.searchsorted(self.starts, end, side="left"))
        a, b = (int(self.first[lo]), int(self.first[hi])) if hi > lo else (0, 0)
        if b <= a:
            return []
        starts = np.concatenate(([0], np.flatnonzero(self.breaks[a + 1:b]) + 1))
        low = (np.minimum.reduceat(self.rects[a:b], starts) / _SCALE).tolist()
        high = (np.maximum.reduceat(self.rects[a:b], starts) / _SCALE).tolist()
        boxes = []
        for x, y in zip(low, high, strict=True):  # a frozen dataclass's __init__ sets each field through
            # object.__setattr__, and a document's chunks have tens of thousands of boxes: set all at once
            box = _new(Box)
            _set(box, "__dict__", {"page": page, "left": x[0], "bottom": x[1], "right": y[2], "top": y[3]})
            boxes.append(box)
        return boxes

    @functools.cached_property
    def breaks(self) -> np.ndarray:
        """Return, per rectangle, whether it begins a line fragment after the one before (_joins)."""
        return np.concatenate([[True], ~_joins(self.rects.astype(np.float64))])


# ---- at read time: the words of a page, from pdfium (the caller holds pdfium's lock) ---------------------------

def page_words(textpage: Any, raw: str, text: str, to_raw: np.ndarray) -> PageWords:
    """Return the words of a page's clean text with their rectangles; to_raw[i] is the index in raw (the page's
    pdfium text, as get_text_range returned it) of text[i]."""

    bounds = word_spans(text)
    chars = _char_indices(textpage, raw)
    first_char = chars[to_raw[bounds[:, 0]]] if len(bounds) else bounds[:, 0]
    counts = chars[to_raw[bounds[:, 1] - 1]] - first_char + 1 if len(bounds) else bounds[:, 0]
    count_rects, get_rect = _pdfium_calls()
    handle = ctypes.cast(textpage.raw, ctypes.c_void_p).value
    rects = np.empty((len(bounds) + 16, 4), dtype=np.float64)  # left, top, right, bottom: GetRect's order
    base, size, row = rects.ctypes.data, len(rects), 0
    numbers: list[int] = []  # rectangles per word
    add = numbers.append
    for a, n in zip(first_char.tolist(), counts.tolist(), strict=True):  # ~1 µs a word: no more than this here
        k = count_rects(handle, a, n)
        if k == 1 and row < size:  # GetRect reads what the last CountRects found
            at = base + 32 * row
            k = get_rect(handle, 0, at, at + 8, at + 16, at + 24)  # 1, or 0 when it failed
        elif k > 0:  # a word split across lines or text objects, or the buffer is full
            if row + k > size:
                rects = np.concatenate([rects, np.empty((size + k, 4), dtype=np.float64)])
                base, size = rects.ctypes.data, len(rects)
            found = 0
            for i in range(k):
                at = base + 32 * (row + found)
                found += get_rect(handle, i, at, at + 8, at + 16, at + 24)
            k = found
        else:
            k = 0
        row += k
        add(k)
    first = np.zeros(len(numbers) + 1, dtype=np.int32)
    np.cumsum(numbers, out=first[1:])
    return PageWords(bounds[:, 0].copy(), bounds[:, 1].copy(), first,
                     np.round(rects[:row, [0, 3, 2, 1]] * _SCALE).astype(np.int32))  # -> left, bottom, right, top


@functools.cache
def _pdfium_calls() -> tuple[Any, Any]:
    """Return FPDFText_CountRects and FPDFText_GetRect taking plain addresses: pypdfium2's typed bindings check
    and convert every argument, a third of the time a word takes (the functions are the same)."""
    from pypdfium2 import raw as pdfium

    count_rects = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int)
    get_rect = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, *[ctypes.c_void_p] * 4)
    return (count_rects(ctypes.cast(pdfium.FPDFText_CountRects, ctypes.c_void_p).value),
            get_rect(ctypes.cast(pdfium.FPDFText_GetRect, ctypes.c_void_p).value))


def word_spans(text: str) -> np.ndarray:
    """Return the (start, end) of each word of text (a run of characters that are not whitespace, as \\S+ finds
    them), as an (n, 2) int32 array; with numpy, 10x faster than the regular expression on a page."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    blank = np.concatenate(([True], _BLANK[np.minimum(codes, 0x3001)], [True])).view(np.int8)
    edges = np.flatnonzero(np.diff(blank))  # word starts (blank -> not) and ends (not -> blank), alternating
    return edges.astype(np.int32).reshape(-1, 2)


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
            boxes += words[index].span_lines(max(start - page_start, 0), min(end - page_start, length), index + 1)
        found.append(boxes)
    return found


def _joins(rects: np.ndarray) -> np.ndarray:
    """Return, for each rectangle after the first, whether it continues the line of the one before.

    It does when both are on one line and close: across (their middles differ by at most half the taller's
    height, the gap is under 1.2 line heights) or, for text running up or down the page, along (the same, turned:
    one taller than wide, the other too or short). A column's gap, a table's cell, the next line start a new one.
    """
    before, after = rects[:-1], rects[1:]
    heights, widths = rects[:, 3] - rects[:, 1], rects[:, 2] - rects[:, 0]
    line = np.maximum(heights[:-1], heights[1:])
    middles = (rects[:, 1] + rects[:, 3]) / 2  # a comma's and a full stop's boxes do not overlap, their middles meet
    same_line = (np.abs(middles[1:] - middles[:-1]) <= 0.5 * line) & (line > 0)
    gap = after[:, 0] - before[:, 2]
    joins = same_line & (gap >= -line) & (gap <= 1.2 * line)
    upright = (heights > widths) & (widths > 0)  # a word of text running up or down the page
    column = np.maximum(widths[:-1], widths[1:])
    sizes = np.maximum(widths, heights)
    # two upright words, or one and a short word beside it ("in" after "Spandau" turned: wider than tall)
    turned = ((upright[:-1] & upright[1:]) | (upright[:-1] & (sizes[1:] <= 1.5 * widths[:-1]))
              | (upright[1:] & (sizes[:-1] <= 1.5 * widths[1:])))
    centres = (rects[:, 0] + rects[:, 2]) / 2
    rise = np.maximum(after[:, 1] - before[:, 3], before[:, 1] - after[:, 3])  # up the page, or down
    return joins | (~same_line & turned & (np.abs(centres[1:] - centres[:-1]) <= 0.5 * column)
                    & (rise >= -column) & (rise <= 1.2 * column))


