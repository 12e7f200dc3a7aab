"""Control codes pdfium returns for unnamed glyphs -> the letters pypdf reads there ("er\\x1bndet" -> "erfindet").

A TeX font without a ToUnicode table names its ligatures "f_i", "f_f_i", "T_h" ...; pdfium does not map
such names and returns the glyph's code, which differs from font to font (\\x1b is "fi" in one, \\x1c "ft" in
another). pypdf reads the names (rag.documents.pdf turns "/f_i" into "fi"), so the code's letters are learned
from pypdf's text of the same page: each word with a code, its code replaced by one to three letters, is
looked for there: a word found so takes its letters (one code can be two fonts' glyphs: "le\x1c" is "left"
and "O\x1cce" is "Office" on one page), any other word with the code the letters found most often for it.
Only pages with MIN_WORDS such words pay for pypdf.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

CODES = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0/C1 controls but tab, line feed, carriage return
_CODE = re.compile(f"[{CODES}]")
_CODED_WORD = re.compile(rf"[^\W\d_]*(?:[{CODES}][^\W\d_]*)+")
MIN_WORDS = 2  # fewer coded words on a page are stray symbols (a math table), not a font's ligatures


def coded_words(text: str) -> set[str]:
    """Return the words of text that hold a control code next to a letter."""
    if not _CODE.search(text):  # most pages: no code at all, and the word pattern is slow to fail everywhere
        return set()
    return {word for word in _CODED_WORD.findall(text) if _CODE.sub("", word)}


def repair(text: str, reference: Callable[[], str | None]) -> str:
    """Return text with the control codes inside words replaced by the letters reference() has there.

    reference gives the same page's text from another reader (None when it cannot): it is asked only when
    the page has MIN_WORDS coded words. Codes it does not explain stay (text cleaning drops them).
    """
    words = coded_words(text)
    if len(words) < MIN_WORDS:
        return text
    other = reference()
    if not other:
        return text
    votes: dict[str, Counter[str]] = {}  # code -> letters found for it, over all words
    resolved: dict[str, str] = {}  # word -> itself as the reference has it (one code can be two fonts' glyphs)
    for word in sorted(words):
        codes = set(_CODE.findall(word))
        if len(codes) != 1:
            continue
        (code,) = codes
        parts = [re.escape(part) for part in word.split(code)]
        pattern = r"(?<![^\W\d_])" + r"([^\W\d_]{1,3})".join(parts) + r"(?![^\W\d_])"
        found = Counter(m.group(1) for m in re.finditer(pattern, other) if len(set(m.groups())) == 1)
        if found:
            letters = max(sorted(found), key=found.get)
            resolved[word] = word.replace(code, letters)
            votes.setdefault(code, Counter()).update(found)
    table = {ord(code): max(sorted(counts), key=counts.get) for code, counts in votes.items()}
    return _CODED_WORD.sub(lambda m: resolved.get(m.group(0)) or m.group(0).translate(table), text)
