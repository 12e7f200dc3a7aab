"""Tables of contents: chunks that list headings with page numbers, which match every question and answer none.

A line is a table-of-contents entry when it ends in a page number after dot leaders ("2.1 Methoden . . . . 9",
"Einleitung ...... 3", "Anhang … 41"), or is a numbered title followed by a page number ("1. Allgemeines 5"),
or is a Markdown link to an anchor ("- [Ziel](#ziel)"). A chunk is a table of contents when at least
MIN_ENTRIES of its lines are entries and they are at least MIN_SHARE of its lines.
"""

from __future__ import annotations

import re

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
    return bool(_LEADER.search(line) or _NUMBERED.fullmatch(line) or _ANCHOR_LINK.fullmatch(line))


def is_table_of_contents(text: str) -> bool:
    """Return whether a chunk's text is (mostly) a table of contents."""
    lines = [line for line in text.split("\n") if line.strip()]
    entries = sum(is_entry(line) for line in lines)
    return entries >= MIN_ENTRIES and entries >= MIN_SHARE * len(lines)
