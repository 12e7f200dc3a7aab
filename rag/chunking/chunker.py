"""Document -> list[Chunk]: token budget, overlap, heading path, offsets and pages."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

import rag.chunking.tokens as tokens
from rag.chunking.tables import Tables
from rag.chunking.toc import toc_flags
from rag.documents import Box, Document
from rag.errors import InvalidSettingsError

STRATEGIES = ("structure", "tokens")
# Fit the default model (multilingual-e5-small reads 512 of its tokens at once, about as many as cl100k on
# German): at 350 / 50, 0.4 % of the chunks of 22 German manuals are longer, at 400 2.4 %, at 600 28 %
# (bench/defaults.py). The original pipeline's 500-800 tokens suit models with 8k inputs.
DEFAULT_CHUNK_SIZE = 350
DEFAULT_OVERLAP = 50


@dataclass(frozen=True)
class ChunkSettings:
    chunk_size: int = DEFAULT_CHUNK_SIZE
    overlap: int = DEFAULT_OVERLAP
    strategy: str = "structure"


@dataclass(frozen=True)
class Chunk:
    document_id: str
    chunk_index: int  # 0-based
    content: str  # == document.text[start:end]
    token_count: int  # exact cl100k count of content
    heading_path: tuple[str, ...]  # heading titles from the top level down
    page_start: int | None  # 1-based; None for text and Markdown, which have no pages
    page_end: int | None
    start: int
    end: int
    flags: tuple[str, ...] = ()  # "toc": a table of contents (rag.chunking.toc), kept visible, left out of searches
    table_header: str = ""  # Markdown: the header rows of the table the chunk continues (rag.chunking.tables)
    # a PDF read with boxes: where the content is on its pages, one Box per line fragment (rag.documents.boxes)
    boxes: tuple[Box, ...] = field(default=(), compare=False)

    @property
    def model_text(self) -> str:
        """Return what the embedder, the keyword index and the LLM read: table_header (if any), then content."""
        return f"{self.table_header}\n{self.content}" if self.table_header else self.content


TOC = "toc"
_TOC_FLAGS = (TOC,)
MIN_CHUNK_SIZE = 4  # one character can take 4 byte tokens; below that a chunk could not hold it
_SENTENCE_END = re.compile(r"[.!?…][\"'»«“”„)\]]*(?=\s)")
_SPACE = re.compile(r"\s+")
_NON_SPACE = re.compile(r"\S")
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
    if not document.text or document.text.isspace():
        return []
    index = tokens.TokenIndex(document.text)
    tables = Tables(document.text) if document.kind == "markdown" and strategy != "tokens" else None
    if strategy == "tokens":
        spans = _token_windows(index, chunk_size, overlap)
    else:
        spans = []
        for start, end in _sections(document):
            spans.extend(_split_section(index, start, end, chunk_size, overlap, tables or None))
    return _chunks(document, spans, tables or None)


def _chunks(document: Document, spans: list[Span], tables: Tables | None = None) -> list[Chunk]:
    """Return the Chunks of spans: content, heading path, pages and flags, each looked up once per chunk."""
    text, document_id = document.text, document.id
    paths = _heading_paths(document)
    path_starts = [start for start, _ in paths]
    heading_starts = set(path_starts)
    paged = document.kind == "pdf" or len(document.pages) > 1  # text and Markdown: one "page", no page numbers
    page_starts, numbers = document.page_starts, [page.number for page in document.pages]
    tables_of_contents = toc_flags(text, [(a, b) for a, b, _ in spans])
    boxes = document.span_boxes([(a, b) for a, b, _ in spans]) if document.has_boxes else None
    chunks = []
    for i, (a, b, n) in enumerate(spans):
        anchor = _path_anchor(text, a, b, heading_starts) if a in heading_starts else a
        k = bisect.bisect_right(path_starts, anchor) - 1
        if paged:  # Document.page_at, inlined
            first, last = bisect.bisect_right(page_starts, a) - 1, bisect.bisect_right(page_starts, b - 1) - 1
            page_start, page_end = numbers[max(first, 0)], numbers[max(last, 0)]
        else:
            page_start = page_end = None
        chunk = _new(Chunk)  # Chunk(...) without its __init__: see below
        chunk.__dict__.update(document_id=document_id, chunk_index=i, content=text[a:b], token_count=n,
                              heading_path=paths[k][1] if k >= 0 else (), page_start=page_start, page_end=page_end,
                              start=a, end=b, flags=_TOC_FLAGS if tables_of_contents[i] else (),
                              table_header=tables.header_at(a) if tables else "",
                              boxes=tuple(boxes[i]) if boxes else ())  # fmt: skip
        chunks.append(chunk)
    return chunks


# A frozen dataclass's __init__ sets each field through object.__setattr__: 3 µs a chunk, more than all the rest of
# its assembly. The chunks above get the same fields directly (tests/chunking/test_chunking.py checks that they
# equal Chunk(...) and that every field is set).
_new = object.__new__


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
    sections = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if _NON_SPACE.search(text, a, b)]
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
    if start not in heading_starts:
        return False
    first, last = _skip_space(text, start, end), _trim_end(text, start, end)  # text[first:last]: the body, stripped
    return last - first <= HEADING_ONLY_MAX_CHARS and text.find("\n", first, last) < 0


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


def _split_section(index: tokens.TokenIndex, start: int, end: int, chunk_size: int, overlap: int,
                   tables: Tables | None = None) -> list[Span]:
    """Return the chunk spans of text[start:end], split at the best boundary that fits (between table rows)."""
    text = index.text
    a, end = _skip_space(text, start, end), _trim_end(text, start, end)
    end_index = index.index_at(end)
    spans: list[Span] = []
    while a < end:
        first = index.index_at(a)
        b, n = _chunk_end(index, a, first, end, end_index, chunk_size)
        if tables:
            b, n = tables.fit_end(index, a, b, n, end, chunk_size)
        if spans and b <= spans[-1][1]:  # the overlap left no room to move on: restart without it
            a = _skip_space(text, spans[-1][1], end)
            first = index.index_at(a)
            b, n = _chunk_end(index, a, first, end, end_index, chunk_size)
            if tables:
                b, n = tables.fit_end(index, a, b, n, end, chunk_size)
        spans.append((a, b, n))
        if b >= end:
            break
        a = _next_start(index, a, first, b, end, overlap)
        if tables:
            a = tables.fit_start(a, b, end)
    return spans


def _chunk_end(index: tokens.TokenIndex, a: int, first: int, end: int, end_index: int, chunk_size: int
               ) -> tuple[int, int]:  # fmt: skip
    """Return (end, token count) of the chunk that starts at a (token first): as far as fits, at the best boundary."""
    if end_index - first <= chunk_size + 2:
        n = index.count(a, end)
        if n <= chunk_size:
            return end, n
    text = index.text
    hi = index.offset_of(first + chunk_size)
    hi = hi if hi < end else end  # (conditionals, not min and max: this runs for every chunk)
    if a < hi < end and not (text[hi].isspace() or text[hi - 1].isspace()):  # mid-word: the word may fit whole
        space = _SPACE.search(text, hi, hi + WORD_LOOKAHEAD if hi + WORD_LOOKAHEAD < end else end)
        word_end = space.start() if space else end if end - hi <= WORD_LOOKAHEAD else -1
        if word_end > 0 and index.count(a, word_end) <= chunk_size:
            hi = word_end
    lo = index.offset_of(first + int(chunk_size * MIN_FILL))
    while True:
        b = _best_boundary(text, a, lo if lo < hi else hi, hi)
        n = index.count(a, b)
        if n <= chunk_size:
            return b, n
        hi = b - 1  # the estimate was a token or two generous: look for an earlier boundary


def _best_boundary(text: str, a: int, lo: int, hi: int) -> int:
    """Return the end of a chunk starting at a: the last paragraph, sentence, line or word end <= hi."""
    lo = lo if lo > a else a + 1
    pos = text.rfind("\n\n", lo, hi)  # the last paragraph end
    if pos > a and (b := _trim_end(text, a, pos)) > a:
        return b
    pos = _last_sentence_end(text, lo, hi)
    if pos > a and (b := _trim_end(text, a, pos)) > a:
        return b
    pos = text.rfind("\n", lo, hi)  # the last line end
    if pos > a and (b := _trim_end(text, a, pos)) > a:
        return b
    space = max(text.rfind(" ", a + 1, hi), text.rfind("\n", a + 1, hi), text.rfind("\t", a + 1, hi))
    b = _trim_end(text, a, space) if space > a else a
    return b if b > a else max(hi, a + 1)  # one word longer than the chunk: cut it between tokens


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


def _next_start(index: tokens.TokenIndex, a: int, first: int, b: int, end: int, overlap: int) -> int:
    """Return where the chunk after [a, b) (a at token first) starts: at a word, sharing at most overlap tokens."""
    text = index.text
    if overlap:
        back = index.index_at(b) - overlap
        target = index.offset_of(back if back > first else first + 1)
        start = _word_start(text, target if target > a else a + 1, b)
        while start < b:
            if index.count(start, b) <= overlap:
                return start
            start = _word_start(text, start + 1, b)
    return _skip_space(text, b, end)


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
