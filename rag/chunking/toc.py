"""Tables of contents: chunks that list headings with page numbers, which match every question and answer none.

A line is a table-of-contents entry when it ends in a page number after dot leaders ("2.1 Methoden . . . . 9",
"Einleitung ...... 3", "Anhang … 41"), or is a numbered title followed by a page number ("1. Allgemeines 5"),
or is a Markdown link to an anchor ("- [Ziel](#ziel)"). A chunk is a table of contents when at least
MIN_ENTRIES of its lines are entries and they are at least MIN_SHARE of its lines.

`toc_flags` finds the entries of a whole text in one pass over its lines, then reads each chunk's count from
them: only a chunk that could hold MIN_ENTRIES entries is looked at line by line (overlapping chunks would
otherwise check the same lines again, and the checks cost more than the chunking around them).
"""

from __future__ import annotations

import re

import numpy as np

MIN_ENTRIES = 3
MIN_SHARE = 0.6
MAX_LINE = 200  # longer lines are running text (and keep the patterns' work bounded)
_LEADER = re.compile(r"(?:\.[ \t]?){3,}[ \t]*\d{1,4}[ \t]*$|…+[ \t]*\d{1,4}[ \t]*$|(?:[ \t]\.){3,}[ \t]*\d{1,4}$")
_NUMBERED = re.compile(
    r"[ \t]*(?:\d{1,2}(?:\.\d{1,2}){0,4}\.?|[IVXLC]{1,6}\.|[A-Z]\.)[ \t]+\S.{0,150}?[ \t]\d{1,4}[ \t]*"
)
_ANCHOR_LINK = re.compile(r"[ \t]*(?:[-*+]|\d{1,3}\.)[ \t]+\[[^\]\n]{1,150}\]\(#[^)\s]{1,150}\)[ \t]*")


def is_entry(line: str) -> bool:
    """Return whether one line reads like a table-of-contents entry."""
    if len(line) > MAX_LINE or not line.strip():
        return False
    # dot leaders need two dots at most one space or tab apart, or "…": a cheap test before the search
    leaders = ".." in line or ". ." in line or ".\t." in line or "…" in line
    return bool(leaders and _LEADER.search(line) or _NUMBERED.fullmatch(line) or _ANCHOR_LINK.fullmatch(line))


def is_table_of_contents(text: str) -> bool:
    """Return whether a chunk's text is (mostly) a table of contents."""
    lines = [line for line in text.split("\n") if line.strip()]
    entries = sum(is_entry(line) for line in lines)
    return entries >= MIN_ENTRIES and entries >= MIN_SHARE * len(lines)


def toc_flags(text: str, spans: list[tuple[int, int]]) -> list[bool]:
    """Return for each [start, end) span of text whether text[start:end] is a table of contents.

    The same as is_table_of_contents(text[start:end]) for each span. The whole lines of a span are counted
    from one pass over text; a span's first and last line may be cut (so they may or may not be entries),
    and only a span whose whole-line entries plus its cut lines reach MIN_ENTRIES is checked in full.
    """
    if not text or not spans:
        return [False] * len(spans)
    chars = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)  # one code point per offset
    starts, ends = _entry_lines(text, chars)
    bounds = np.array(spans, dtype=np.int64).reshape(-1, 2)
    first, last = bounds[:, 0], bounds[:, 1]
    whole = np.searchsorted(ends, last, "right") - np.searchsorted(starts, first, "left")
    # a first line is cut unless a line break (or the text's start) is before it, a last one unless one is after it
    cut = ((first > 0) & (chars[np.maximum(first - 1, 0)] != ord("\n"))).astype(np.int64)
    cut += (last < len(chars)) & (chars[np.minimum(last, len(chars) - 1)] != ord("\n"))
    flags = [False] * len(spans)
    for i in np.flatnonzero(np.maximum(whole, 0) + cut >= MIN_ENTRIES).tolist():
        start, end = spans[i]
        flags[i] = is_table_of_contents(text[start:end])
    return flags


def _entry_lines(text: str, chars: np.ndarray) -> tuple[list[int], list[int]]:
    """Return the starts and ends of text's lines that are entries, in order (end: the offset of its "\\n")."""
    breaks = np.flatnonzero(chars == ord("\n"))
    starts = np.concatenate(([0], breaks + 1))
    ends = np.append(breaks, len(chars))
    last = chars[np.maximum(ends - 1, 0)]
    # an entry ends in a digit (\d: any Unicode decimal digit, so also non-ASCII) or ")", then spaces or tabs
    maybe = (ends > starts) & (ends - starts <= MAX_LINE) & (
        ((last >= ord("0")) & (last <= ord("9"))) | np.isin(last, [ord(")"), ord(" "), ord("\t")]) | (last > 0x7F)
    )
    entry_starts, entry_ends = [], []
    for start, end in zip(starts[maybe].tolist(), ends[maybe].tolist(), strict=True):
        line = text[start:end]
        last = line.rstrip(" \t")[-1:]
        if (last == ")" or last.isdecimal()) and is_entry(line):
            entry_starts.append(start)
            entry_ends.append(end)
    return entry_starts, entry_ends
