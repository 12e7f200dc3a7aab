"""A PDF page's raw text -> clean text: glyph names, control characters, blanks, soft and hard hyphenation, the page
number left at its foot (clean_pdf_text). The steps run on a rag.documents.textmap.Text; on a MappedText the map from
each clean character back to the raw text follows every step (clean_mapped: a page's words keep their rectangles).
"""

from __future__ import annotations

import re

from rag.documents.text import BLANK_LINES, CONTROL_CHARS, INVISIBLE_IN_WORDS, SURROGATES
from rag.documents.textmap import MappedText, Text

_CONTROL = re.compile("[" + "".join(re.escape(chr(c)) for c, to in CONTROL_CHARS.items() if to is None) + "]")
_CONTROL_BREAK = re.compile("[" + "".join(re.escape(chr(c)) for c, to in CONTROL_CHARS.items() if to) + "]")
_INVISIBLE = re.compile("[" + "".join(chr(c) for c in INVISIBLE_IN_WORDS) + "]")  # = .translate(INVISIBLE_IN_WORDS)
_GLYPH_NAMES = re.compile(r"/(f_f_[il]|f_[bfhijklt]|t_t|s_t|c_t|T_h)")  # unmapped ligature glyphs
_SPACES = re.compile(r"[ \t][ \t]+|\t")  # runs of blanks to one space (a single space is left alone: faster)
_LINE_EDGE_SPACE = re.compile(r" \n ?|\n ")  # a space at a line's edge (not every line break: 3x faster)
_SOFT_HYPHEN_BREAK = re.compile("\u00ad\n")
_HYPHEN_BREAK = re.compile(r"[-\u2010](?<=[^\W\d_][-\u2010])\n(?=([^\W_]+))")  # hyphen first: scans fast
_SUSPENDED = frozenset({"und", "oder", "bzw", "sowie", "bis", "als", "and", "or", "nor", "to"})


def clean_pdf_text(raw: str, page_number: int = 0) -> str:
    """Return a PDF page's text as a reader expects it: ligatures, hyphenation and whitespace fixed.

    Line breaks inside paragraphs stay; a trailing line that is just the page number goes.
    """
    text = Text(raw)
    clean(text, page_number)
    return text.text


def clean_mapped(raw: str, page_number: int = 0) -> MappedText:
    """Return clean_pdf_text's text of raw with, for each of its characters, the index in raw it came from."""
    text = MappedText(raw)
    clean(text, page_number)
    return text


def clean(text: Text, page_number: int = 0) -> None:
    """Clean a page's text in place (clean_pdf_text); on a MappedText the map follows every step."""
    text.sub(SURROGATES, "")
    text.nfkc()
    text.sub(_GLYPH_NAMES, _glyph_letters)
    text.replace("\r\n", "\n")
    text.replace("\r", "\n")
    text.sub(_CONTROL, "")
    text.same_length_sub(_CONTROL_BREAK, "\n")  # = .translate(CONTROL_CHARS), 10x faster on German
    if "\t" in text.text or "  " in text.text:  # most pages have no run of blanks: the pattern's scan is saved
        text.sub(_SPACES, " ")
    text.sub(_LINE_EDGE_SPACE, "\n")
    text.sub(_SOFT_HYPHEN_BREAK, "")
    text.sub(_INVISIBLE, "")
    text.sub(_HYPHEN_BREAK, _join_hyphenated)
    text.sub(BLANK_LINES, "\n\n")
    stripped = text.text.lstrip()
    start = len(text.text) - len(stripped)
    text.cut(start, start + len(stripped.rstrip()))
    last_break = text.text.rfind("\n")
    if page_number and text.text[last_break + 1 :] == str(page_number):
        text.cut(0, len(text.text[:last_break].rstrip()) if last_break >= 0 else 0)


def _glyph_letters(match: re.Match[str]) -> str:
    return match.group(1).replace("_", "")


def _join_hyphenated(match: re.Match[str]) -> str:
    """Return what replaces a hyphen + line break: nothing (soft break), "-" (compound) or itself."""
    word = match.group(1)
    if word.lower() in _SUSPENDED:  # "Ein-\nund Ausgang": a suspended compound, not a word split
        return match.group(0)
    return "" if word[0].islower() else "-"
