"""Document -> list[Chunk]: token budget, overlap, heading path, offsets and pages."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from rag import tokens
from rag.documents import Document

STRATEGIES = ("structure", "tokens")


@dataclass(frozen=True)
class ChunkSettings:
    chunk_size: int = 600
    overlap: int = 80
    strategy: str = "structure"


@dataclass(frozen=True)
class Chunk:
    document_id: str
    chunk_index: int  # 0-based
    content: str  # == document.text[start:end]
    token_count: int  # exact cl100k count of content
    heading_path: tuple[str, ...]  # heading titles from the top level down
    page_start: int  # 1-based
    page_end: int
    start: int
    end: int


MIN_CHUNK_SIZE = 4  # one character can take 4 byte tokens; below that a chunk could not hold it
_SENTENCE_END = re.compile(r"[.!?…][\"'»«“”„)\]]*(?=\s)")
_SPACE = re.compile(r"\s+")
# Words after which a full stop does not end a sentence (German and English abbreviations).
_ABBREVIATIONS = frozenset(
    "abs art aufl bd bspw bzw ca dr etc evtl ff ggf hrsg inkl jh max min mio mr mrs nr prof rn s sog str tel usw "
    "vgl vs z.b d.h u.a i.d.r e.g i.e u.u z.t".split()
)
MIN_FILL = 0.5  # a paragraph/sentence/line boundary is used only if the chunk gets at least this full


def chunk_document(
    document: Document, chunk_size: int = 600, overlap: int = 80, strategy: str = "structure"
) -> list[Chunk]:
    """Return the chunks of document, each within chunk_size cl100k tokens, in document order."""
    validate_settings(ChunkSettings(chunk_size, overlap, strategy))
    if not document.text.strip():
        return []
    index = tokens.TokenIndex(document.text)
    if strategy == "tokens":
        spans = _token_windows(index, chunk_size, overlap)
    else:
        spans = []
        for start, end in _sections(document):
            spans.extend(_split_section(index, start, end, chunk_size, overlap))
    paths = _heading_paths(document)
    path_starts = [start for start, _ in paths]
    return [
        Chunk(
            document_id=document.id,
            chunk_index=i,
            content=document.text[a:b],
            token_count=n,
            heading_path=paths[k][1] if (k := bisect.bisect_right(path_starts, a) - 1) >= 0 else (),
            page_start=document.page_at(a),
            page_end=document.page_at(b - 1),
            start=a,
            end=b,
        )
        for i, (a, b, n) in enumerate(spans)
    ]


def validate_settings(settings: ChunkSettings) -> ChunkSettings:
    """Return settings unchanged, or raise ValueError saying which value is out of range."""
    if settings.strategy not in STRATEGIES:
        raise ValueError(f"Unknown chunking strategy {settings.strategy!r}; use one of {', '.join(STRATEGIES)}.")
    if settings.chunk_size < MIN_CHUNK_SIZE:
        raise ValueError(f"chunk_size must be at least {MIN_CHUNK_SIZE} tokens (got {settings.chunk_size}).")
    if not 0 <= settings.overlap < settings.chunk_size:
        raise ValueError(
            f"overlap must be between 0 and chunk_size - 1 ({settings.chunk_size - 1}); got {settings.overlap}."
        )
    return settings


def _sections(document: Document) -> list[tuple[int, int]]:
    """Return the [start, end) spans between headings (text before the first heading is one too)."""
    cuts = sorted({0, *(h.start for h in document.headings), len(document.text)})
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if document.text[a:b].strip()]


def _heading_paths(document: Document) -> list[tuple[int, tuple[str, ...]]]:
    """Return (start, heading path) for each heading, in document order."""
    stack: list[tuple[int, str]] = []
    paths = []
    for heading in sorted(document.headings, key=lambda h: h.start):
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.title))
        paths.append((heading.start, tuple(title for _, title in stack)))
    return paths


Span = tuple[int, int, int]  # start, end, exact token count


def _split_section(index: tokens.TokenIndex, start: int, end: int, chunk_size: int, overlap: int) -> list[Span]:
    """Return the chunk spans of text[start:end], split at the best boundary that fits."""
    text = index.text
    a, end = _skip_space(text, start, end), _trim_end(text, start, end)
    spans: list[Span] = []
    while a < end:
        b, n = _chunk_end(index, a, end, chunk_size)
        if spans and b <= spans[-1][1]:  # the overlap left no room to move on: restart without it
            a = _skip_space(text, spans[-1][1], end)
            b, n = _chunk_end(index, a, end, chunk_size)
        spans.append((a, b, n))
        if b >= end:
            break
        a = _next_start(index, a, b, end, overlap)
    return spans


def _chunk_end(index: tokens.TokenIndex, a: int, end: int, chunk_size: int) -> tuple[int, int]:
    """Return (end, token count) of the chunk that starts at a: as far as fits, at the best boundary."""
    first = index.index_at(a)
    if index.index_at(end) - first <= chunk_size + 2:
        n = index.count(a, end)
        if n <= chunk_size:
            return end, n
    hi = min(index.offset_of(first + chunk_size), end)
    lo = index.offset_of(first + int(chunk_size * MIN_FILL))
    while True:
        b = _best_boundary(index.text, a, min(lo, hi), hi)
        n = index.count(a, b)
        if n <= chunk_size:
            return b, n
        hi = b - 1  # the estimate was a token or two generous: look for an earlier boundary


def _best_boundary(text: str, a: int, lo: int, hi: int) -> int:
    """Return the end of a chunk starting at a: the last paragraph, sentence, line or word end <= hi."""
    lo = max(lo, a + 1)
    for find in (_last_paragraph_end, _last_sentence_end, _last_line_end):
        pos = find(text, lo, hi)
        b = _trim_end(text, a, pos) if pos > a else a
        if b > a:
            return b
    space = max(text.rfind(" ", a + 1, hi), text.rfind("\n", a + 1, hi), text.rfind("\t", a + 1, hi))
    b = _trim_end(text, a, space) if space > a else a
    return b if b > a else max(hi, a + 1)  # one word longer than the chunk: cut it between tokens


def _last_paragraph_end(text: str, lo: int, hi: int) -> int:
    return text.rfind("\n\n", lo, hi)


def _last_line_end(text: str, lo: int, hi: int) -> int:
    return text.rfind("\n", lo, hi)


def _last_sentence_end(text: str, lo: int, hi: int) -> int:
    """Return the offset just after the last sentence end in text[lo:hi], or -1."""
    best = -1
    for match in _SENTENCE_END.finditer(text, lo, hi):
        word = text[max(match.start() - 12, 0) : match.start()].split()
        word = word[-1].lower().lstrip("(„\"'") if word else ""
        if word in _ABBREVIATIONS or len(word) == 1 or (word.isdigit() and len(word) <= 2):
            continue
        best = match.end()
    return best


def _next_start(index: tokens.TokenIndex, a: int, b: int, end: int, overlap: int) -> int:
    """Return where the chunk after [a, b) starts: at a word, sharing at most overlap tokens."""
    text = index.text
    fresh = _skip_space(text, b, end)
    if overlap == 0:
        return fresh
    target = index.offset_of(max(index.index_at(b) - overlap, index.index_at(a) + 1))
    start = _word_start(text, max(target, a + 1), b)
    while start < b:
        if index.count(start, b) <= overlap:
            return start
        start = _word_start(text, start + 1, b)
    return fresh


def _word_start(text: str, pos: int, limit: int) -> int:
    """Return the first offset >= pos where a word begins (limit if none before it)."""
    if pos < limit and not text[pos].isspace() and text[pos - 1].isspace():
        return pos
    match = _SPACE.search(text, pos, limit)
    return match.end() if match and match.end() < limit else limit


def _token_windows(index: tokens.TokenIndex, chunk_size: int, overlap: int) -> list[Span]:
    """Return plain token windows of chunk_size, overlap tokens apart (the usual baseline)."""
    text, spans, i = index.text, [], 0
    while i < index.size:
        j = min(i + chunk_size, index.size)
        a = _skip_space(text, index.offset_of(i), index.offset_of(j))
        b = _trim_end(text, a, index.offset_of(j))
        n = index.count(a, b) if b > a else 0
        while n > chunk_size:  # re-encoding a cut word can take more tokens than the window had
            j -= 1
            b = _trim_end(text, a, index.offset_of(j))
            n = index.count(a, b)
        if b > a:
            spans.append((a, b, n))
        if j >= index.size:
            break
        i = max(min(i + chunk_size - overlap, j), i + 1)
    return spans


def _skip_space(text: str, pos: int, end: int) -> int:
    match = _SPACE.match(text, pos, end)
    return match.end() if match else pos


def _trim_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end
