"""Text that remembers where each of its characters came from: a PDF page's clean text -> pdfium's characters.

A page's text is cleaned in steps (rag.documents.pdf_clean.clean_pdf_text: ligatures, hyphenation, whitespace), each a
regular-expression substitution or a normalization. clean_pdf_text runs its steps on a Text, which only changes
the string; MappedText runs the same steps and also keeps, for each character of the result, the index of the
character of the first string it came from (a numpy int32 array). The map is built from the substitutions' spans
with numpy (np.repeat of per-character counts), never with a loop over characters, so a page costs about what its
substitutions cost. One procedure over both carriers: the text of a read with boxes is the text of one without.

Where one character became several ("ﬁ" -> "fi", a hyphen -> "-\\n"), each maps to the one; where several became
one ("a" + combining diaeresis -> "ä"), it maps to the first; a removed character leaves no trace.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

import numpy as np

Replacement = str | Callable[[re.Match[str]], str]
# each character beyond ASCII with the one before (it may compose with it); a whole run where that is not enough
_NON_ASCII = re.compile(r".?[^\x00-\x7f]", re.DOTALL)
_NON_ASCII_RUN = re.compile(r".?[^\x00-\x7f]+", re.DOTALL)


class Text:
    """A string cleaned in steps; MappedText keeps where each character came from as well."""

    def __init__(self, text: str):
        self.text = text

    def sub(self, pattern: re.Pattern[str], replacement: Replacement) -> None:
        """Replace pattern's matches with replacement (a string without group references, or a function)."""
        self.text = pattern.sub(replacement, self.text)

    def same_length_sub(self, pattern: re.Pattern[str], replacement: str) -> None:
        """Replace each match, one character long, with replacement, one character long (no map change)."""
        self.text = pattern.sub(replacement, self.text)

    def replace(self, old: str, new: str) -> None:
        self.text = self.text.replace(old, new)

    def nfkc(self) -> None:
        """Normalize the text to NFKC (compatibility characters such as ligatures become their letters)."""
        self.text = unicodedata.normalize("NFKC", self.text)

    def cut(self, start: int, end: int) -> None:
        """Keep text[start:end]."""
        self.text = self.text[start:end]

    def edit(self, edits: list[tuple[int, str]]) -> None:
        """Replace the character at each position with its letters (positions ascending, distinct)."""
        if edits:
            chars = list(self.text)
            for at, letters in edits:
                chars[at] = letters
            self.text = "".join(chars)


class MappedText(Text):
    """A Text whose map[i] is the index in the first string of the character at index i now."""

    def __init__(self, text: str):
        super().__init__(text)
        self.map = np.arange(len(text), dtype=np.int32)

    def sub(self, pattern: re.Pattern[str], replacement: Replacement) -> None:
        starts, ends, pieces, last = [], [], [], 0
        text = self.text
        for match in pattern.finditer(text):
            new = replacement if isinstance(replacement, str) else replacement(match)
            starts.append(match.start())
            ends.append(match.end())
            pieces += (text[last:match.start()], new)
            last = match.end()
        if starts:
            pieces.append(text[last:])
            self._apply(starts, ends, pieces[1::2])
            self.text = "".join(pieces)

    def replace(self, old: str, new: str) -> None:
        if old in self.text:
            self.sub(re.compile(re.escape(old)), new)

    def nfkc(self) -> None:
        if unicodedata.is_normalized("NFKC", self.text):  # most pages: nothing to do, checked in C
            return
        text, mapping = self.text, self.map
        self.sub(_NON_ASCII, _normalized)
        if self.text != (whole := unicodedata.normalize("NFKC", text)):  # a composition of three or more characters
            self.text, self.map = text, mapping
            self.sub(_NON_ASCII_RUN, _normalized)
            if self.text != whole:  # not known to happen: the text is right, the map proportional
                at = np.linspace(0, max(len(mapping) - 1, 0), num=len(whole)).astype(np.int64)
                self.text, self.map = whole, mapping[at] if len(mapping) else np.zeros(len(whole), np.int32)

    def cut(self, start: int, end: int) -> None:
        super().cut(start, end)
        self.map = self.map[start:end]

    def edit(self, edits: list[tuple[int, str]]) -> None:
        if edits:
            ats = [at for at, _ in edits]
            self._apply(ats, [at + 1 for at in ats], [letters for _, letters in edits])
            super().edit(edits)

    def _apply(self, starts: list[int], ends: list[int], new: list[str]) -> None:
        """Update the map for replacing text[starts[i]:ends[i]] with new[i] (spans ascending, not overlapping):
        the first characters of a replacement map to those of its match, the rest to its match's last."""
        n = len(self.text)
        a, b = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
        lengths = np.fromiter(map(len, new), dtype=np.int64, count=len(new))
        kept = np.minimum(lengths, b - a)
        delta = np.zeros(n + 1, dtype=np.int64)
        np.add.at(delta, a, -1)  # every character of a match counts 0 ...
        np.add.at(delta, b, 1)
        np.add.at(delta, a, 1)  # ... but its first `kept`, which count 1
        np.add.at(delta, a + kept, -1)
        counts = 1 + np.cumsum(delta[:n])
        extra = lengths - kept
        longer = (extra > 0) & (b > a)
        np.add.at(counts, a[longer] + kept[longer] - 1, extra[longer])
        empty = (extra > 0) & (b == a) & (n > 0)  # an insertion at a position: it maps to the character there
        np.add.at(counts, np.minimum(a[empty], n - 1), extra[empty])
        self.map = np.repeat(self.map, counts)


def _normalized(match: re.Match[str]) -> str:
    return unicodedata.normalize("NFKC", match.group(0))
