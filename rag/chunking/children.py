"""Parent–child retrieval, the cutting half: each chunk (the parent) cut into children of about child_size tokens.

A child is a span of its parent's `content` (character offsets start, end: `parent.content[start:end]` is
the child's text), cut at paragraph or sentence ends; a sentence longer than child_size is cut at spaces. The
children of a parent cover all of its text (only whitespace between them is left out), in order. A chunk that
would be one child of its whole text (it fits in child_size) has none: the chunk itself competes in the search
(rag.store.children.WITH_PARENTS), so such a child would be the same text embedded and indexed twice. Search
compares the question with chunks and children and returns the chunks (rag.store.children). child_size 0 means
no children (the collection is searched as before).

A collection records the setting (metadata "child_size", like "chunk_headers"), so later ingests and sweeps
into it cut children the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import rag.chunking.headers as headers
import rag.chunking.tokens as tokens
from rag.chunking.chunker import Chunk
from rag.documents import Document
from rag.errors import InvalidSettingsError

META_KEY = "child_size"  # in the collection's RAG Lab metadata: tokens per child, 0 = no children
DEFAULT_CHILD_SIZE = 128  # measured: bench/children.py, docs/benchmarks.md "Parent–child retrieval"
MIN_CHILD_SIZE = 8
# a paragraph end (blank line), or a sentence end: . ! ? … (and closing quotes or brackets) then space
_BREAK = re.compile(r"\n\s*\n|(?<=[.!?…])[\"'»«“”„)\]]*\s+|\n")
_WORD = re.compile(r"\S+\s*")


@dataclass(frozen=True)
class Child:
    """One child of a parent chunk: where it is in the parent's content, and its text."""

    parent_index: int  # the parent's chunk_index
    child_index: int  # 0-based within the parent
    start: int  # character offsets in the parent's content
    end: int
    text: str  # == parent.content[start:end]


def check_child_size(value: int) -> int:
    """Return value if it is 0 (off) or at least MIN_CHILD_SIZE tokens; InvalidSettingsError otherwise."""
    if not isinstance(value, int) or isinstance(value, bool) or (value != 0 and value < MIN_CHILD_SIZE):
        raise InvalidSettingsError(
            f"Child size must be 0 (no children) or a whole number of tokens >= {MIN_CHILD_SIZE}, not {value!r}.")
    return value


def parse_child_size(text: str) -> int:
    """Return the child size of "64" (tokens) or "0"/"off"; InvalidSettingsError for anything else."""
    value = text.strip().lower()
    if value == "off":
        return 0
    if not value.isdigit():
        raise InvalidSettingsError(f"Child size must be a whole number of tokens (0 = off), not {text!r}.")
    return check_child_size(int(value))


def _pieces(text: str) -> list[tuple[int, int]]:
    """Return the spans of text between paragraph and sentence ends (each ends after its break), in order."""
    spans, start = [], 0
    for match in _BREAK.finditer(text):
        if match.end() > start:
            spans.append((start, match.end()))
            start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _fits(text: str, a: int, b: int, size: int, count: Callable[[str], int]) -> bool:
    """Return whether text[a:b], trimmed of the whitespace at its ends, is at most size tokens.

    Counted whole, not summed piece by piece: token counts do not add up across a join (a space or a newline
    can merge with the next word), so a sum can let a child grow past its size.
    """
    a, b = _trim(text, a, b)
    return count(text[a:b]) <= size


def _words(text: str, start: int, end: int, size: int, count: Callable[[str], int]) -> list[tuple[int, int]]:
    """Return spans of at most size tokens cut at spaces inside text[start:end] (a sentence too long); a single
    word longer than size is a span of its own."""
    spans, lo = [], start
    for match in _WORD.finditer(text, start, end):
        if lo < match.start() and not _fits(text, lo, match.end(), size, count):
            spans.append((lo, match.start()))
            lo = match.start()
    spans.append((lo, end))
    return spans


def cut(text: str, child_size: int, count: Callable[[str], int] = tokens.count) -> list[tuple[int, int]]:
    """Return the (start, end) spans of text's children: pieces packed up to child_size tokens, trimmed.

    Whitespace-only text gives one span over all of it, so that every parent has a child.
    """
    spans: list[tuple[int, int]] = []
    lo = None
    for a, b in _pieces(text):
        if not _fits(text, a, b, child_size, count):  # a sentence longer than a child: close the open child,
            if lo is not None:  # cut this one at spaces
                spans.append((lo, a))
            spans.extend(_words(text, a, b, child_size, count))
            lo = None
            continue
        if lo is not None and not _fits(text, lo, b, child_size, count):
            spans.append((lo, a))
            lo = None
        lo = a if lo is None else lo
    if lo is not None:
        spans.append((lo, len(text)))
    trimmed = [_trim(text, a, b) for a, b in spans]
    kept = [(a, b) for a, b in trimmed if b > a]
    return kept or [(0, len(text))]


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def children_of(chunks: Sequence[Chunk], child_size: int, count: Callable[[str], int] = tokens.count
                ) -> list[list[Child]]:
    """Return the children of each chunk (same order); [] for a chunk that fits in one child, and per chunk when
    child_size is 0."""
    check_child_size(child_size)
    if not child_size:
        return [[] for _ in chunks]
    return [_children(c, child_size, count) for c in chunks]


def _children(chunk: Chunk, child_size: int, count: Callable[[str], int]) -> list[Child]:
    spans = cut(chunk.content, child_size, count)
    if len(spans) == 1 and spans[0] == _trim(chunk.content, 0, len(chunk.content)):
        return []  # one child of the whole text: the chunk itself is searched
    return [Child(chunk.chunk_index, i, a, b, chunk.content[a:b]) for i, (a, b) in enumerate(spans)]


def indexed_texts(document: Document, chunks: Sequence[Chunk], kids: Sequence[Sequence[Child]], headed: bool
                  ) -> list[str]:
    """Return what each child is embedded and keyword-indexed as (in chunk, then child order): its text, with its
    parent's header when the collection has chunk headers (rag.chunking.headers)."""
    return [headers.indexed_text(k.text, document.title, c.heading_path, headed)
            for c, group in zip(chunks, kids, strict=True) for k in group]
