"""The chunker as it was before issue 25's per-chunk work was cut (rag/chunking/chunker.py and TokenIndex of
commit 91eee64), copied verbatim: the reference whose chunks the new code must equal.

Only the module's head differs: Chunk, ChunkSettings, the strategies and the defaults are imported, not defined again; the
helpers that did not change (encode_array, the token byte lengths, count, encoding) come from
rag.chunking.tokens; and the table-of-contents flags come from test_toc's verbatim copy of the old rule.
Do not edit the code below to follow rag/chunking: it is the old behaviour, kept as the yardstick.
"""

# ruff: noqa
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from rag.chunking.chunker import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP, STRATEGIES, Chunk, ChunkSettings
from rag.chunking.tokens import MAX_SPACE_RUN, _token_byte_lengths, count, encode, encode_array, encoding
from rag.documents.model import Document
from rag.errors import InvalidSettingsError
from tests.chunking.test_toc import reference_is_table_of_contents

TOC = "toc"


class TokenIndex:
    """A text's cl100k tokens, encoded once, with each token's start as a character offset.

    `count(start, end)` is exact for any span, at the cost of two tiny encodes at the span's edges
    instead of encoding the span: cl100k's pre-tokenizer never puts a non-space character and a
    following space into one piece, so each such place is a piece boundary in the whole text and in
    any substring alike, and the tokens between two such places are the same in both. Nor does a piece
    go on from a line break to a non-space character after it (no piece but whitespace and punctuation
    ones holds a "\n", and those end at their last line break): a span starting there has no head to encode.
    """

    def __init__(self, text: str, threads: int | None = None):
        self.text = text
        self.ids = encode_array(text, threads)
        raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        continuation = np.zeros(len(raw) + 1, dtype=np.int32)  # continuation[p]: UTF-8 continuation bytes <= p
        np.cumsum((raw & 0xC0) == 0x80, dtype=np.int32, out=continuation[:-1])
        continuation[-1] = continuation[-2] if len(raw) else 0
        byte_starts = np.zeros(len(self.ids) + 1, dtype=np.int64)
        np.cumsum(_token_byte_lengths()[self.ids], out=byte_starts[1:])
        # the character holding byte p is p minus the continuation bytes up to p
        self.starts = byte_starts - continuation[byte_starts]  # starts[i]: char offset of token i
        self.size = len(self.ids)
        # bisect on a memoryview reads plain ints from the array's memory: as fast as on a list (and ~5x faster
        # than on the numpy array), without building a list of a million ints first
        self._starts = memoryview(np.ascontiguousarray(self.starts, dtype=np.int64))

    def index_at(self, offset: int) -> int:
        """Return the number of tokens that start before character offset."""
        return min(bisect.bisect_left(self._starts, offset), self.size)

    def offset_of(self, token_index: int) -> int:
        """Return the char offset where token token_index starts (len(text) at or past the end)."""
        return self._starts[min(max(token_index, 0), self.size)]

    def count(self, start: int, end: int) -> int:
        """Return the exact cl100k token count of text[start:end]."""
        text = self.text
        if end - start < 48:
            return _count_short(text[start:end])
        if start > 0 and text[start - 1] == "\n" and not text[start].isspace():
            x = start  # a line's first character (a chunk starting at a line): no head to encode
        else:
            x = _piece_boundary(text, start + 1, end, forward=True)
        if end < len(text) and text[end] == " " and not text[end - 1].isspace():
            y = end  # end is such a place itself (a chunk ending before a space): no tail to encode
        else:
            y = _piece_boundary(text, start + 1, end, forward=False)
        if x < 0 or y <= x:
            return count(text[start:end])
        middle = bisect.bisect_left(self._starts, y) - bisect.bisect_left(self._starts, x)  # index_at: x < y <= end
        return _count_short(text[start:x]) + middle + _count_short(text[y:end])


@lru_cache(maxsize=1 << 16)
def _count_short(text: str) -> int:
    """Return count(text), memoised: span edges are single words, and words repeat."""
    if len(text) < MAX_SPACE_RUN:  # no long whitespace run to cut (see _parts): straight to tiktoken
        return len(encoding().encode_ordinary(text))
    return len(encode(text))

def _piece_boundary(text: str, lo: int, hi: int, forward: bool) -> int:
    """Return the first (or last) space in text[lo:hi] that follows a non-space, or -1."""
    for _ in range(64):
        pos = text.find(" ", lo, hi) if forward else text.rfind(" ", lo, hi)
        if pos < 0:
            return -1
        if not text[pos - 1].isspace():
            return pos
        if forward:
            lo = pos + 1
        else:
            hi = pos
    return -1


MIN_CHUNK_SIZE = 4  # one character can take 4 byte tokens; below that a chunk could not hold it
_SENTENCE_END = re.compile(r"[.!?…][\"'»«“”„)\]]*(?=\s)")
_SPACE = re.compile(r"\s+")
# Words after which a full stop does not end a sentence (German and English abbreviations).
_ABBREVIATIONS = frozenset(
    "abs art aufl bd bspw bzw ca dr etc evtl ff ggf hrsg inkl jh max min mio mr mrs nr prof rn s sog str tel usw "
    "vgl vs z.b d.h u.a i.d.r e.g i.e u.u z.t".split()
)
MIN_FILL = 0.5  # a paragraph/sentence/line boundary is used only if the chunk gets at least this full
HEADING_ONLY_MAX_CHARS = 200  # a one-line section at most this long is a heading without text of its own
WORD_LOOKAHEAD = 64  # characters looked ahead for the end of a word cut by the token estimate


def chunk_document(
    document: Document, chunk_size: int = DEFAULT_CHUNK_SIZE, overlap: int = DEFAULT_OVERLAP,
    strategy: str = "structure"
) -> list[Chunk]:
    """Return the chunks of document, each within chunk_size cl100k tokens, in document order."""
    validate_settings(ChunkSettings(chunk_size, overlap, strategy))
    if not document.text.strip():
        return []
    index = TokenIndex(document.text)
    if strategy == "tokens":
        spans = _token_windows(index, chunk_size, overlap)
    else:
        spans = []
        for start, end in _sections(document):
            spans.extend(_split_section(index, start, end, chunk_size, overlap))
    paths = _heading_paths(document)
    paged = document.kind == "pdf" or len(document.pages) > 1  # text and Markdown: one "page", no page numbers
    path_starts = [start for start, _ in paths]
    heading_starts = set(path_starts)
    tables_of_contents = [reference_is_table_of_contents(document.text[a:b]) for a, b, _ in spans]
    return [
        Chunk(
            document_id=document.id,
            chunk_index=i,
            content=document.text[a:b],
            token_count=n,
            heading_path=paths[k][1]
            if (k := bisect.bisect_right(path_starts, _path_anchor(document.text, a, b, heading_starts)) - 1) >= 0
            else (),
            page_start=document.page_at(a) if paged else None,
            page_end=document.page_at(b - 1) if paged else None,
            start=a,
            end=b,
            flags=(TOC,) if tables_of_contents[i] else (),
        )
        for i, (a, b, n) in enumerate(spans)
    ]


def _path_anchor(text: str, start: int, end: int, heading_starts: set[int]) -> int:
    """Return where a chunk's heading path is read: after the headings it opens with ("2 Methoden" right above
    "2.1 Daten" gives the chunk the path of 2.1, which its text belongs to)."""
    anchor, pos = start, start
    while pos < end:
        line_end = text.find("\n", pos, end)
        if line_end < 0:
            break
        pos = line_end + 1
        while pos < end and text[pos] == "\n":
            pos += 1
        if pos not in heading_starts:
            break
        anchor = pos
    return anchor if start in heading_starts else start


def validate_settings(settings: ChunkSettings) -> ChunkSettings:
    """Return settings unchanged, or raise InvalidSettingsError saying which value is out of range."""
    if settings.strategy not in STRATEGIES:
        raise InvalidSettingsError(
            f"Unknown chunking strategy {settings.strategy!r}; use one of {', '.join(STRATEGIES)}.")
    if settings.chunk_size < MIN_CHUNK_SIZE:
        raise InvalidSettingsError(f"chunk_size must be at least {MIN_CHUNK_SIZE} tokens (got {settings.chunk_size}).")
    if not 0 <= settings.overlap < settings.chunk_size:
        raise InvalidSettingsError(
            f"overlap must be between 0 and chunk_size - 1 ({settings.chunk_size - 1}); got {settings.overlap}."
        )
    return settings


def _sections(document: Document) -> list[tuple[int, int]]:
    """Return the [start, end) spans between headings (text before the first heading is one too).

    A heading with no text of its own before the next heading ("2 Methoden" right above "2.1 Daten") joins
    the section after it: a chunk is never only a heading, which ranks first for questions it cannot answer.
    """
    text = document.text
    starts = {h.start for h in document.headings}
    cuts = sorted({0, *starts, len(text)})
    sections = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if text[a:b].strip()]
    merged: list[tuple[int, int]] = []
    joins = False  # the section before was a heading alone: this one continues it
    for a, b in sections:
        if joins:
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
        joins = _heading_only(text, a, b, starts)
    if joins and len(merged) > 1 and merged[-1] == sections[-1]:  # a heading at the very end: the one before
        last = merged.pop()
        merged[-1] = (merged[-1][0], last[1])
    return merged


def _heading_only(text: str, start: int, end: int, heading_starts: set[int]) -> bool:
    """Return whether text[start:end] is a heading's section holding only its one line."""
    body = text[start:end].strip()
    return start in heading_starts and "\n" not in body and len(body) <= HEADING_ONLY_MAX_CHARS


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


def _split_section(index: TokenIndex, start: int, end: int, chunk_size: int, overlap: int) -> list[Span]:
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


def _chunk_end(index: TokenIndex, a: int, end: int, chunk_size: int) -> tuple[int, int]:
    """Return (end, token count) of the chunk that starts at a: as far as fits, at the best boundary."""
    first = index.index_at(a)
    if index.index_at(end) - first <= chunk_size + 2:
        n = index.count(a, end)
        if n <= chunk_size:
            return end, n
    hi = min(index.offset_of(first + chunk_size), end)
    if a < hi < end and not text_at_space(index.text, hi):  # mid-word: the word may fit whole on its own tokens
        space = _SPACE.search(index.text, hi, min(end, hi + WORD_LOOKAHEAD))
        word_end = space.start() if space else end if end - hi <= WORD_LOOKAHEAD else -1
        if word_end > 0 and index.count(a, word_end) <= chunk_size:
            hi = word_end
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


def text_at_space(text: str, pos: int) -> bool:
    """Return whether pos is at a word's edge: a space at pos, or a space just before it."""
    return text[pos].isspace() or text[pos - 1].isspace()


def _last_sentence_end(text: str, lo: int, hi: int) -> int:
    """Return the offset just after the last sentence end in text[lo:hi], or -1."""
    best = -1
    for match in _SENTENCE_END.finditer(text, lo, min(hi + 1, len(text))):  # + 1: the space after may be at hi
        if match.end() > hi:
            break
        word = text[max(match.start() - 12, 0) : match.start()].split()
        word = word[-1].lower().lstrip("(„\"'") if word else ""
        if word in _ABBREVIATIONS or len(word) == 1 or (word.isdigit() and len(word) <= 2):
            continue
        best = match.end()
    return best


def _next_start(index: TokenIndex, a: int, b: int, end: int, overlap: int) -> int:
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


def _token_windows(index: TokenIndex, chunk_size: int, overlap: int) -> list[Span]:
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
