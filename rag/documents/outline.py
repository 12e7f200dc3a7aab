"""PDF bookmarks -> headings: each bookmark located at the line of the text where its title begins."""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence

from rag.documents.model import Heading

OutlineEntry = tuple[str, int, int]  # (title, level 1 = top, 1-based page number)

_NUMBER_PREFIX = re.compile(
    r"(?:(?:§|Kapitel|Chapter|Teil|Part|Anhang|Appendix|Abschnitt|Section)[ \t]*)?"
    r"(?:\d{1,3}(?:\.\d{1,3})*|[IVXLC]{1,7}|[A-Z])[.):]?[ \t]+",
    re.IGNORECASE,
)


def locate_outline(text: str, outline: Sequence[OutlineEntry], page_starts: Mapping[int, int]) -> list[Heading]:
    """Return the outline entries located in `text`, each at the line where its title begins.

    A title is searched on its bookmark's page, then on the next one; case and whitespace do not matter and a
    leading number ("2.1") may or may not be printed. When at least half of the outline is found so, the
    outline is trusted and each entry still missing is looked for approximately (see _approximate), between
    its neighbours, so no chunk gets the previous section's path; entries found nowhere are left out.
    """
    numbers = sorted(page_starts)
    starts = [page_starts[number] for number in numbers]
    ends = [start - 2 for start in starts[1:]] + [len(text)]  # a page ends before the "\n\n" separator

    def windows(page: int) -> list[tuple[int, int]]:
        index = bisect.bisect_left(numbers, page)
        return [(starts[i], ends[i]) for i in range(index, min(index + 2, len(numbers)))]

    placed: list[int | None] = []
    used: set[int] = set()
    cursor = 0  # entries come in reading order: search after the previous one first
    for title, _level, page in outline:
        patterns = _title_patterns(title)
        start = _search(text, patterns, windows(page), cursor, used)
        if start is None:
            start = _search(text, patterns, windows(page), 0, used)
        if start is not None:
            used.add(start)
            line_end = text.find("\n", start)
            cursor = len(text) if line_end < 0 else line_end
        placed.append(start)
    if 2 * sum(p is not None for p in placed) >= len(outline):
        for i, (title, _level, page) in enumerate(outline):
            if placed[i] is None:
                low = max((p for p in placed[:i] if p is not None), default=-1) + 1
                high = min((p for p in placed[i + 1 :] if p is not None), default=len(text))
                placed[i] = _approximate(text, title, windows(page), low, high, used)
                if placed[i] is not None:
                    used.add(placed[i])
    return [Heading(title, level, start, "outline")
            for (title, level, _page), start in zip(outline, placed, strict=True) if start is not None]


_FOOTNOTE_MARK = r"[\d*†‡]{1,3}"
_TITLE_WORD = re.compile(r"[^\W\d_]{3,}")
MIN_OVERLAP = 0.5  # share of a bookmark's words a line must hold to be taken for its heading


def _approximate(text: str, title: str, windows: list[tuple[int, int]], low: int, high: int, used: set[int]
                 ) -> int | None:
    """Return where a bookmark not printed verbatim begins, within [low, high) on its page (or the next).

    In order: the title followed by a footnote mark ("Symbole³" extracted as "Symbole3"); the short line
    holding most of the title's words ("3.9.3. Linksbündig, rechtsbündig, zentriert (flushleft, ...)" for
    the bookmark "Flattersatz (flushleft, flushright, center)"). None when neither is there.
    """
    spans = [(max(a, low), min(b, high)) for a, b in windows if max(a, low) < min(b, high)]
    if not spans:
        return None
    marked = _title_patterns(title, _FOOTNOTE_MARK + r"[ \t]*$")[0]
    for a, b in spans:
        for match in marked.finditer(text, a, b):
            if match.start() not in used:
                return match.start()
    wanted = {w.casefold() for w in _TITLE_WORD.findall(title)}
    best, best_share = None, MIN_OVERLAP
    for a, b in spans:
        line_start = a if a == 0 or text[a - 1] == "\n" else text.find("\n", a, b) + 1
        while 0 < line_start < b or line_start == a == 0:
            line_end = text.find("\n", line_start, b)
            line_end = b if line_end < 0 else line_end
            line = text[line_start:line_end]
            if wanted and len(line) <= 150 and line_start not in used:
                share = len(wanted & {w.casefold() for w in _TITLE_WORD.findall(line)}) / len(wanted)
                if share > best_share:
                    best, best_share = line_start, share
            if line_end >= b:
                break
            line_start = line_end + 1
        if best is not None:
            return best
    return None  # a bookmark with no trace on its page (a figure, a ghost) is left out, not guessed


def _title_patterns(title: str, end: str = r"[ \t]*$") -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Return (whole-line, line-start) patterns for a bookmark title, tolerant of case and whitespace."""
    numbered = _NUMBER_PREFIX.match(title)
    core = title[numbered.end() :] if numbered and numbered.end() < len(title) else title
    words = r"\s+".join(re.escape(word) for word in core.split())
    prefix = f"^[ \\t]*(?:{_NUMBER_PREFIX.pattern})?{words}"
    flags = re.IGNORECASE | re.MULTILINE
    return re.compile(prefix + end, flags), re.compile(prefix + r"(?!\w)", flags)


def _search(
    text: str, patterns: Sequence[re.Pattern[str]], windows: list[tuple[int, int]], cursor: int, used: set[int]
) -> int | None:
    """Return where the first pattern matches a line in the first window that has a match, or None."""
    for low, high in windows:
        if cursor > high:
            continue
        for pattern in patterns:
            for match in pattern.finditer(text, max(low, cursor), high):
                if match.start() not in used:
                    return match.start()
    return None
