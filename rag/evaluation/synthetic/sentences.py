"""The sentences of a document that can stand as a synthetic query's source, each with its span and passage.

A document's text is cut into blocks (paragraphs, list items, Markdown table cells) at blank lines, headings,
list markers and table rows; code blocks are left out. A block is split into sentences at `.`, `!`, `?` and `…`
(not after an abbreviation, an initial or a small ordinal such as "3."). A sentence is usable when it is a full
sentence (capital or digit at its start, punctuation at its end) of 40-350 characters and at least six words,
mostly letters, without code, markup or links, not boilerplate, and not repeated anywhere in the documents:
a sentence that occurs twice has two places a retriever may rightly find, and its span names only one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rag.documents import Document

MIN_CHARS, MAX_CHARS = 40, 350
MIN_WORDS = 6
MIN_LETTER_SHARE = 0.8  # letters among the sentence's non-space characters
MAX_MIXED_WORDS = 3  # words of letters and digits at once ("11pt"): a garbled line, a table, an identifier list
PASSAGE_CHARS = 600  # a passage grows around its sentence to about this many characters, within its block
MAX_PASSAGE_CHARS = 1200

_MIXED = re.compile(r"\b(?=\w*\d)(?=\w*[^\W\d_])\w+")  # "12pt", "v2": margin notes run into a PDF's text
_END = re.compile(r"[.!?…][\"'»«“”„)\]]*(?=\s|$)")
_WORD = re.compile(r"[^\W\d_]+")
_LIST_MARKER = re.compile(r"(?:[•◦▪‣∙·*+-]|\d{1,3}[.)]|[a-z][.)])\s+")
_CODE = re.compile(r"[\\{}<>|=`@^~]|https?:|www\.|\]\(")
_FOOTNOTE = re.compile(r"\d{1,2}\s+[^\W\d_]")  # "1 Vielen Dank an …": a footnote's number, then its text
_BOILERPLATE = re.compile(
    r"©|\(c\)\s*\d{4}|all rights reserved|alle rechte vorbehalten|\bpage \d+ of \d+|\bseite \d+ von \d+|"
    r"\bcopyright\b|\bimpressum\b|\bconfidential\b|\bvertraulich\b",
    re.IGNORECASE,
)
# First words that point back ("Dies zu ändern ist ein wichtiger Punkt."): out of its passage such a sentence
# says nothing a question could ask for. Not "Das", "Es", "Sie": they start as many sentences that stand alone.
_FIRST_WORD = re.compile(r"[^\W\d_]+")
_ANAPHORA = frozenset(
    "dies dieses diese dieser dadurch dazu daher damit dabei darin darauf davon deshalb deswegen "
    "this that these those it they such thus hence therefore".split()
)
# Words after which a full stop does not end a sentence (German and English abbreviations).
_ABBREVIATIONS = frozenset(
    "abb abs art aufl bd bsp bspw bzw ca cf dr etc evtl ff fig ggf hrsg inkl insb jh max min mio mr mrs ms nr "
    "prof rn sog st str tel usw vgl vs z.b d.h u.a i.d.r e.g i.e u.u z.t o.ä s.o s.u".split()
)


@dataclass(frozen=True)
class Sentence:
    """A sentence of a document: its span in Document.text and the passage (its neighbours in its block)."""

    start: int
    end: int
    passage_start: int
    passage_end: int


@dataclass(frozen=True)
class SentencePool:
    """The usable sentences of one document, in text order, and why the others were left out (reason -> count)."""

    usable: tuple[Sentence, ...]
    rejected: dict[str, int]


def sentence_pools(documents: Sequence[Document]) -> list[SentencePool]:
    """Return each document's usable sentences; a sentence that occurs twice in the documents is not usable."""
    split = [[(block, list(_sentences(d.text, *block))) for block in _blocks(d)] for d in documents]
    seen = Counter(_key(d.text[s:e]) for d, blocks in zip(documents, split, strict=True)
                   for _, spans in blocks for s, e in spans)
    pools = []
    for document, blocks in zip(documents, split, strict=True):
        usable, rejected = [], Counter()
        for _, spans in blocks:
            for index, (start, end) in enumerate(spans):
                reason = rejection(document.text[start:end]) or ("repeated" if seen[_key(document.text[start:end])]
                                                                  > 1 else None)
                if reason:
                    rejected[reason] += 1
                    continue
                usable.append(_with_passage(spans, index))
        pools.append(SentencePool(tuple(usable), dict(rejected)))
    return pools


def rejection(sentence: str) -> str | None:
    """Return why a sentence cannot be a query's source ("too short", "markup", ...), or None when it can."""
    flat = " ".join(sentence.split())
    if len(flat) < MIN_CHARS or len(_WORD.findall(flat)) < MIN_WORDS:
        return "too short"
    if len(flat) > MAX_CHARS:
        return "too long"
    first = next((c for c in flat if c.isalnum()), "")
    if not (first.isupper() or first.isdigit()) or not _END.search(flat[-4:] + " "):
        return "not a full sentence"
    if _CODE.search(flat):
        return "code, markup or a link"
    visible = [c for c in flat if not c.isspace()]
    if (sum(c.isalpha() for c in visible) < MIN_LETTER_SHARE * len(visible)
            or len(_MIXED.findall(flat)) >= MAX_MIXED_WORDS):
        return "few letters, or garbled"
    if _BOILERPLATE.search(flat) or _FOOTNOTE.match(flat):
        return "boilerplate or a footnote"
    if _FIRST_WORD.search(flat).group(0).casefold() in _ANAPHORA:  # a word: MIN_WORDS were found above
        return "refers to a sentence before it"
    return None


def _key(sentence: str) -> str:
    return " ".join(sentence.split()).casefold()


def _with_passage(spans: Sequence[tuple[int, int]], index: int) -> Sentence:
    """Return sentence index of its block with the passage grown around it, a neighbour at a time."""
    low = high = index
    while spans[high][1] - spans[low][0] < PASSAGE_CHARS and (low > 0 or high < len(spans) - 1):
        grow_low = low > 0 and (high == len(spans) - 1 or index - low <= high - index)
        new_low, new_high = (low - 1, high) if grow_low else (low, high + 1)
        if spans[new_high][1] - spans[new_low][0] > MAX_PASSAGE_CHARS:
            break
        low, high = new_low, new_high
    start, end = spans[index]
    return Sentence(start, end, spans[low][0], spans[high][1])


def _blocks(document: Document) -> Iterator[tuple[int, int]]:
    """Yield the (start, end) of each block of text: paragraphs, list items, table cells; no headings or code."""
    text, headings = document.text, {h.start for h in document.headings}
    block: list[int] | None = None
    in_code, offset = False, 0
    for line in text.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        body = line.strip()
        lead = start + len(line) - len(line.lstrip())
        end = lead + len(body)
        fence = body.startswith(("```", "~~~"))
        if fence or in_code or not body or start in headings or body.startswith("#") or body.startswith("|"):
            if block:
                yield tuple(block)
            block = None
            in_code ^= fence
            if body.startswith("|") and not in_code and not fence:
                yield from _cells(text, lead, end)
            continue
        marker = _LIST_MARKER.match(body)
        if marker and block:
            yield tuple(block)
            block = None
        if block is None:
            block = [lead + (marker.end() if marker else 0), end]
        block[1] = end
    if block:
        yield tuple(block)


def _cells(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Yield the spans of a Markdown table row's cells, without their padding."""
    for match in re.finditer(r"[^|]+", text[start:end]):
        cell = match.group()
        if cell.strip():
            lead = len(cell) - len(cell.lstrip())
            yield start + match.start() + lead, start + match.start() + len(cell.rstrip())


def _sentences(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Yield the (start, end) of each sentence of text[start:end]; the rest after the last end is one more."""
    begin = start
    for match in _END.finditer(text, start, end):
        before = text[max(match.start() - 12, begin) : match.start()].split()
        word = before[-1].lower().lstrip("(„\"'»«“") if before else ""
        if word in _ABBREVIATIONS or len(word) == 1 or (word.isdigit() and len(word) <= 2):
            continue
        yield begin, match.end()
        begin = match.end()
        while begin < end and text[begin].isspace():
            begin += 1
    if begin < end:
        yield begin, end
