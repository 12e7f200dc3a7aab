"""Document text -> headings: Markdown `#` lines, PDF bookmarks located in the text, numbered heading lines."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from rag.documents.model import Heading
from rag.documents.outline import OutlineEntry, locate_outline


def find_headings(
    text: str,
    kind: str,
    outline: Sequence[OutlineEntry] | None = None,
    page_starts: Mapping[int, int] | None = None,
) -> tuple[Heading, ...]:
    """Return the headings of a document's text, sorted by start.

    Markdown: `#` headings (and `===`/`---` underlined ones) outside code fences. PDF: the outline's
    titles located in the text; without an outline, or when none of it is found, numbered heading lines
    ("2.1 Methoden", "Kapitel 3", "§ 5 Kündigung"), as for text files. `page_starts` maps a page number
    to the offset where that page begins in `text` (pages without text left out).
    """
    if kind == "markdown":
        headings = markdown_headings(text)
    else:
        headings = locate_outline(text, outline, page_starts or {1: 0}) if outline else []
        headings = headings or numbered_headings(text)
    return tuple(sorted(headings, key=lambda heading: heading.start))


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield (offset, line) for every line of `text`."""
    offset = 0
    for line in text.split("\n"):
        yield offset, line
        offset += len(line) + 1


# ---- Markdown ----------------------------------------------------------------------------------------------

_ATX_OPEN = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_NOT_PARAGRAPH = re.compile(r" {0,3}(?:[-*+>|]|\d{1,9}[.)][ \t]|#)|    |\t")  # list, quote, table, code


def markdown_headings(text: str) -> list[Heading]:
    """Return the ATX (`## Title`) and setext (underlined) headings outside fenced code and front matter."""
    headings: list[Heading] = []
    fence = ""  # the opening fence while inside a code block
    front_matter = text.startswith("---\n")
    before = previous = ""  # the two lines above, for setext headings
    previous_start = 0
    for number, (start, line) in enumerate(_lines(text)):
        if front_matter:
            front_matter = number == 0 or line.rstrip() not in ("---", "...")
            line = ""
        elif fence:
            if line.strip().startswith(fence) and set(line.strip()) == {fence[0]}:
                fence = ""
            line = ""
        elif fenced := _FENCE.fullmatch(line):
            if not (fenced.group(1)[0] == "`" and "`" in fenced.group(2)):
                fence, line = fenced.group(1), ""
        elif atx := _ATX_OPEN.match(line):
            if title := _atx_title(line[atx.end() :]):
                headings.append(Heading(title, len(atx.group(1)), start, "markdown"))
            line = ""  # a heading line is no paragraph for a setext underline below it
        elif (setext := _SETEXT.fullmatch(line)) and _setext_title(previous, before):
            level = 1 if setext.group(1)[0] == "=" else 2
            headings.append(Heading(previous.strip(), level, previous_start, "markdown"))
            line = ""
        before, previous, previous_start = previous, line, start
    return headings


def _atx_title(rest: str) -> str:
    """Return the title after an ATX opening (`## `), without an optional closing run of `#`.

    Plain string operations, not one regex: a lazy title with an optional closing sequence backtracks over
    every space of a long run (quadratic on a line of a million spaces).
    """
    title = rest.strip(" \t")
    closed = title.rstrip("#")
    if closed != title and (not closed or closed[-1] in " \t"):  # "Usage ##" closes; "C#" does not
        title = closed.rstrip(" \t")
    return title.strip()


def _setext_title(line: str, above: str) -> bool:
    """Return whether `line` can be underlined into a heading: a one-line paragraph (blank line above)."""
    return bool(line.strip()) and not above.strip() and not _NOT_PARAGRAPH.match(line) and len(line) <= 120


# ---- numbered heading lines --------------------------------------------------------------------------------

_DECIMAL = re.compile(r"(\d{1,2}(?:\.\d{1,2}){0,4})(\.?)[ \t]+(\S.*)")
_ROMAN = re.compile(r"([IVXLC]{1,7})\.[ \t]+(\S.*)")
_LETTER = re.compile(r"([A-Z])\.[ \t]+(\S.*)")
_CHAPTER = re.compile(
    r"(Kapitel|Chapter|Teil|Part|Abschnitt|Section|Anhang|Appendix|Anlage)[ \t]+(\d{1,2}|[IVXLC]{1,7}|[A-Z])\b"
    r"\.?(?:[ \t]*[:.\-–—][ \t]*|[ \t]+|$)(.*)",
    re.IGNORECASE,
)
_PARAGRAPH = re.compile(r"§[ \t]*(\d{1,4})[a-z]?(?:[ \t]+(\S.*))?")
_PART_WORDS = ("teil", "part")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}
_SENTENCE_END = re.compile(r"[.!?][\"'”“»«)\]]*\d{0,3}$")
_NOT_IN_TITLE = re.compile(r"[{}\[\]<>\\|=@#$%^*_~+]|\.\s?\.\s?\.|…|(?:^|\s)\d[\d.,]*$")
_SENTENCE_INSIDE = re.compile(r"[^\W\d_]{4,}\.\s+[A-Z]")  # "Term. The term of ..." is running text
_CITATION = re.compile(r"\b(?:Abs|Satz|Nr|Alt|Art|lit)\b\.?\s*\d")
_TRAILING_WORDS = frozenset(  # a title does not end in these: the line was wrapped mid-sentence
    "the a an of to in for and or with on at by from as is are not be this that where which any "
    "der die das den dem des ein eine einer eines einem und oder zu zur zum mit von im in auf für an bei aus "
    "ist sind nicht wie als dass sich".split()
)
_MONTHS = frozenset(
    "januar jänner februar märz april mai juni juli august september oktober november dezember january "
    "february march may june july october december".split()
)


@dataclass(frozen=True)
class _Candidate:
    start: int
    line: str
    family: str  # "part" | "chapter" | "letter" | "roman" | "decimal" | "paragraph"
    numbers: tuple[int, ...]


def numbered_headings(text: str) -> list[Heading]:
    """Return the numbered heading lines of plain text ("2.1 Methoden", "Kapitel 3", "§ 5 Kündigung").

    A line counts when it looks like a title and stands alone: a blank line, a sentence end or another
    heading above it, or a blank line below; or, failing that, when its number continues the numbering of
    the headings around it. Numbered lists (1. then 2. on the next line) do not count.
    """
    lines = list(_lines(text))
    parsed = [_parse_numbered(line, start) for start, line in lines]
    accepted: dict[int, _Candidate] = {}
    doubtful: list[int] = []
    for i, candidate in enumerate(parsed):
        if candidate is None or _in_list(parsed, i):
            continue
        above = lines[i - 1][1] if i else ""
        below = lines[i + 1][1] if i + 1 < len(lines) else ""
        if not above.strip() or _SENTENCE_END.search(above) or (i - 1) in accepted or not below.strip():
            accepted[i] = candidate
        else:
            doubtful.append(i)
    _accept_continuations(accepted, doubtful, parsed)
    found = _drop_lonely_families([accepted[i] for i in sorted(accepted)])
    seen: set[str] = set()
    unique = []
    for candidate in found:  # a running header repeats on every page: keep its first line only
        if candidate.line not in seen:
            seen.add(candidate.line)
            unique.append(candidate)
    return _with_levels(unique)


def _parse_numbered(line: str, start: int) -> _Candidate | None:
    """Return the line as a numbered heading candidate, or None when it does not look like one."""
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    line = " ".join(line.split())
    if not line or len(line) > 80 or "\t" in indent or len(indent) >= 4:  # indented: a list item or code
        return None
    if match := _CHAPTER.fullmatch(line):
        word, number, title = match.groups()
        family = "part" if word.lower() in _PART_WORDS else "chapter"
        if word[0].isupper() and (not title or _plausible_title(title)):
            return _candidate(start, line, family, (_number_value(number),))
        return None
    if match := _PARAGRAPH.fullmatch(line):
        number, title = match.groups()
        if not title or (_plausible_title(title) and not _CITATION.search(title)):
            return _candidate(start, line, "paragraph", (int(number),), limit=9999)
        return None
    if match := _DECIMAL.fullmatch(line):
        numbers, _dot, title = match.groups()
        parts = numbers.split(".")
        values = tuple(int(n) for n in parts)
        date_like = any(len(n) > 1 and n[0] == "0" for n in parts)  # "12.03. Sitzung"
        if not date_like and _plausible_title(title) and title.split()[0].lower().rstrip(".") not in _MONTHS:
            return _candidate(start, line, "decimal", values)
        return None
    for family, pattern in (("roman", _ROMAN), ("letter", _LETTER)):
        match = pattern.fullmatch(line)
        if match and _plausible_title(match.group(2)):
            candidate = _candidate(start, line, family, (_number_value(match.group(1)),))
            if candidate is not None:  # "C." is 100 as a Roman number: try it as a letter next
                return candidate
    return None


def _candidate(start: int, line: str, family: str, numbers: tuple[int, ...], limit: int = 50) -> _Candidate | None:
    """Return a candidate when its numbers are plausible for a heading (0..limit at every level)."""
    return _Candidate(start, line, family, numbers) if all(0 <= n <= limit for n in numbers) else None


def _number_value(number: str) -> int:
    """Return the value of "3", "IV" or "B" (letters count from A = 1)."""
    if number.isdigit():
        return int(number)
    if len(number) == 1 and number.upper() not in "IVX":
        return ord(number.upper()) - ord("A") + 1
    values = [_ROMAN_VALUES.get(c, 0) for c in number.upper()]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


def _plausible_title(title: str) -> bool:
    """Return whether the text after a number reads like a heading title, not a sentence or table row."""
    words = title.split()
    letters = sum(c.isalpha() for c in title)
    return (
        title[:1].isupper()
        and len(words) <= 12
        and letters >= 2
        and letters * 2 >= len(title.replace(" ", ""))
        and not title.endswith((".", ",", ";", ":", "-"))
        and not _NOT_IN_TITLE.search(title)
        and not _SENTENCE_INSIDE.search(title)
        and title.count("(") == title.count(")")
        and words[-1] not in _TRAILING_WORDS
    )


def _in_list(parsed: list[_Candidate | None], i: int) -> bool:
    """Return whether candidate i has a sibling right above or below it: an enumeration, not a heading."""
    this = parsed[i]
    for j, step in ((i - 1, -1), (i + 1, 1)):
        other = parsed[j] if 0 <= j < len(parsed) else None
        if (
            this is not None
            and other is not None
            and other.family == this.family
            and other.numbers[:-1] == this.numbers[:-1]
            and other.numbers[-1] == this.numbers[-1] + step
        ):
            return True
    return False


def _accept_continuations(
    accepted: dict[int, _Candidate], doubtful: list[int], parsed: list[_Candidate | None]
) -> None:
    """Accept doubtful decimal lines whose number follows the accepted heading above or leads to the one below."""
    for i in doubtful:
        candidate = parsed[i]
        order = sorted(accepted)
        k = bisect.bisect_left(order, i)
        above = accepted[order[k - 1]] if k else None
        below = accepted[order[k]] if k < len(order) else None
        if candidate.family == "decimal" and (
            (above is not None and above.family == "decimal" and _follows(above.numbers, candidate.numbers))
            or (below is not None and below.family == "decimal" and _follows(candidate.numbers, below.numbers))
        ):
            accepted[i] = candidate


def _follows(first: tuple[int, ...], second: tuple[int, ...]) -> bool:
    """Return whether numbering `second` comes right after `first` (2.1 -> 2.2, 2.2 -> 3, 2 -> 2.1)."""
    if second == (*first, 1):
        return True
    return any(second == (*first[:k], first[k] + 1) for k in range(len(first)))


def _drop_lonely_families(candidates: list[_Candidate]) -> list[_Candidate]:
    """Return the candidates without letter/roman lines that lack an A./I. and a B./II. (initials, not headings)."""
    keep = {"letter", "roman"} & {c.family for c in candidates}
    for family in list(keep):
        values = {c.numbers[0] for c in candidates if c.family == family}
        if not {1, 2} <= values:
            keep.discard(family)
    return [c for c in candidates if c.family not in ("letter", "roman") or c.family in keep]


def _with_levels(candidates: list[_Candidate]) -> list[Heading]:
    """Return headings with levels nested by family: Teil > Kapitel > A. > I. > 1 > 1.1; § below the rest."""
    present = {c.family for c in candidates}
    level, base = {}, 1
    for family in ("part", "chapter", "letter", "roman"):
        level[family] = base
        base += family in present
    level["decimal"] = base - ("chapter" in present and "decimal" in present)  # "3.1" under "Kapitel 3"
    level["paragraph"] = base
    return [
        Heading(c.line, level[c.family] + (len(c.numbers) - 1 if c.family == "decimal" else 0), c.start, "numbered")
        for c in candidates
    ]
