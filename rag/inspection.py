"""What the RAG Lab pages show about chunks and hits: statistics, flags, overlaps, heading tree, scores per source.

Pure functions over rag's dataclasses (Chunk from rag.chunking, Hit from rag.store); no Streamlit. A chunk
read back from the store is a Hit with score None, so every function here takes either.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag import tokens
from rag.chunking import MIN_CHUNK_SIZE, Chunk
from rag.documents import PAGE_SEPARATOR, Document, Heading, Page
from rag.pipeline import SourceFile
from rag.store import Hit

ChunkLike = Chunk | Hit
TINY_SHARE = 0.05  # a chunk under 5 % of chunk_size is "tiny": a stray heading or a page footer
TINY_MIN_TOKENS = 10
SAMPLE_SUFFIXES = (".pdf", ".md", ".txt")
NO_HEADING = "(before the first heading)"


@dataclass(frozen=True)
class ChunkStats:
    count: int
    total: int
    mean: float
    median: float
    smallest: int
    largest: int
    over_size: int  # chunks with more tokens than chunk_size (0 when chunk_size is unknown)


@dataclass(frozen=True)
class ChunkReport:
    chunk_index: int
    tokens: int  # cl100k, the unit of chunk_size
    model_tokens: int | None  # in the embedder's own tokenizer; None when not counted
    cut_tokens: int  # model tokens beyond the embedder's input limit: never embedded
    heading_path: tuple[str, ...]
    page_start: int | None
    page_end: int | None
    content: str
    flags: tuple[str, ...]  # "cut off", "tiny", "no heading"

    @property
    def cut_share(self) -> float:
        """Return the share of the chunk's model tokens that the embedder never reads (0.0 - 1.0)."""
        return self.cut_tokens / self.model_tokens if self.model_tokens else 0.0


@dataclass(frozen=True)
class FlagSummary:
    chunks: int
    cut: int  # chunks longer than the embedder's input limit
    cut_share: float  # mean share of those chunks' model tokens that is never embedded
    tiny: int
    no_heading: int
    suggested_chunk_size: int | None  # a chunk_size (cl100k) whose chunks would fit the embedder; None if all fit


@dataclass(frozen=True)
class Segment:
    start: int
    end: int
    chunks: tuple[int, ...]  # indexes of the chunks covering text[start:end]; () between chunks


@dataclass(frozen=True)
class HeadingNode:
    path: tuple[str, ...]
    chunks: tuple[int, ...]  # indexes of the chunks in this section and its subsections
    tokens: int
    page_start: int | None
    page_end: int | None

    @property
    def title(self) -> str:
        return self.path[-1] if self.path else NO_HEADING

    @property
    def depth(self) -> int:
        return max(len(self.path) - 1, 0)


@dataclass(frozen=True)
class SourceScore:
    document_id: str
    title: str
    hits: int
    best: float
    mean: float
    ranks: tuple[int, ...]  # 1-based ranks of this document's hits


@dataclass(frozen=True)
class SearchOutcome:
    hits: list[Hit]  # what is left after the threshold
    removed: list[Hit]  # what the threshold removed
    notes: tuple[str, ...]  # plain-language remarks: threshold removed everything, fewer than top_k ...


def token_count(chunk: ChunkLike) -> int:
    """Return a chunk's cl100k token count: stored with it when known, else counted now."""
    if isinstance(chunk, Chunk):
        return chunk.token_count
    stored = chunk.payload.get("token_count")
    return stored if isinstance(stored, int) and not isinstance(stored, bool) else tokens.count(chunk.content)


def chunk_stats(token_counts: Sequence[int], chunk_size: int | None = None) -> ChunkStats:
    """Return count, total, mean, median, smallest, largest and how many exceed chunk_size."""
    if not token_counts:
        return ChunkStats(0, 0, 0.0, 0.0, 0, 0, 0)
    over = sum(n > chunk_size for n in token_counts) if chunk_size else 0
    return ChunkStats(
        len(token_counts),
        sum(token_counts),
        statistics.fmean(token_counts),
        float(statistics.median(token_counts)),
        min(token_counts),
        max(token_counts),
        over,
    )


def tiny_limit(chunk_size: int | None) -> int:
    """Return the token count under which a chunk counts as tiny for a given chunk_size."""
    return max(TINY_MIN_TOKENS, round((chunk_size or 0) * TINY_SHARE))


def chunk_reports(
    chunks: Sequence[ChunkLike],
    model_tokens: Sequence[int] | None = None,
    max_input_tokens: int | None = None,
    chunk_size: int | None = None,
) -> list[ChunkReport]:
    """Return one report per chunk: token counts, how much the embedder cuts off, and flags."""
    tiny = tiny_limit(chunk_size)
    reports = []
    for position, chunk in enumerate(chunks):
        n = token_count(chunk)
        model = model_tokens[position] if model_tokens is not None else None
        cut = max(model - max_input_tokens, 0) if model is not None and max_input_tokens else 0
        flags = [name for name, on in (("cut off", cut > 0), ("tiny", n < tiny), ("no heading", not chunk.heading_path))
                 if on]
        index = chunk.chunk_index if chunk.chunk_index is not None else position
        reports.append(
            ChunkReport(index, n, model, cut, chunk.heading_path, chunk.page_start, chunk.page_end, chunk.content,
                        tuple(flags))
        )
    return reports


def flag_summary(reports: Sequence[ChunkReport], max_input_tokens: int | None) -> FlagSummary:
    """Return how many chunks carry each flag, and a chunk_size that would fit the embedder's input limit.

    The suggestion converts the limit from the embedder's tokens to cl100k with the median ratio seen in
    these chunks (German text takes more wordpieces than cl100k tokens), with 10 % to spare.
    """
    cut = [r for r in reports if r.cut_tokens]
    suggestion = None
    ratios = [r.model_tokens / r.tokens for r in reports if r.model_tokens and r.tokens]
    if cut and ratios and max_input_tokens:
        fitting = max_input_tokens / statistics.median(ratios) * 0.9
        suggestion = max(MIN_CHUNK_SIZE, int(fitting // 10 * 10))
    return FlagSummary(
        len(reports),
        len(cut),
        statistics.fmean(r.cut_share for r in cut) if cut else 0.0,
        sum("tiny" in r.flags for r in reports),
        sum("no heading" in r.flags for r in reports),
        suggestion,
    )


def segments(length: int, spans: Sequence[tuple[int, int, int]]) -> list[Segment]:
    """Return text[0:length] cut at every chunk boundary; spans are (chunk index, start, end).

    A segment covered by two or more chunks is overlap; one covered by none lies between chunks.
    """
    clamped = [(index, max(0, min(a, length)), max(0, min(b, length))) for index, a, b in spans]
    cuts = sorted({0, length, *(x for _, a, b in clamped for x in (a, b))})
    starting: dict[int, list[int]] = {}
    ending: dict[int, list[int]] = {}
    for index, a, b in clamped:
        if b > a:
            starting.setdefault(a, []).append(index)
            ending.setdefault(b, []).append(index)
    active: set[int] = set()
    result = []
    for a, b in zip(cuts, cuts[1:], strict=False):  # one sweep: chunks enter and leave at the cuts
        active.difference_update(ending.get(a, ()))
        active.update(starting.get(a, ()))
        result.append(Segment(a, b, tuple(sorted(active))))
    return result


def overlap_spans(spans: Sequence[tuple[int, int, int]], length: int) -> list[tuple[int, int]]:
    """Return the merged [start, end) ranges that two or more chunks share."""
    merged: list[list[int]] = []
    for segment in segments(length, spans):
        if len(segment.chunks) < 2:
            continue
        if merged and merged[-1][1] == segment.start:
            merged[-1][1] = segment.end
        else:
            merged.append([segment.start, segment.end])
    return [(a, b) for a, b in merged]


def heading_tree(chunks: Sequence[ChunkLike]) -> list[HeadingNode]:
    """Return the document's sections in order (each heading, parents first) with the chunks under them.

    A section holds its own chunks and those of its subsections; chunks before the first heading form a
    section with the empty path.
    """
    sections: list[tuple[tuple[str, ...], list[ChunkLike]]] = []
    open_sections: list[list[ChunkLike]] = []
    for chunk, path, first_new in _walk_sections(chunks):
        del open_sections[first_new:]
        for depth in range(first_new, max(len(path), 1)):
            sections.append((path[: depth + 1], []))
            open_sections.append(sections[-1][1])
        for members in open_sections:
            members.append(chunk)
    nodes = []
    for path, group in sections:
        pages = [p for c in group for p in (c.page_start, c.page_end) if p is not None]
        indexes = tuple(c.chunk_index for c in group if c.chunk_index is not None)
        tokens_ = sum(token_count(c) for c in group)
        nodes.append(HeadingNode(path, indexes, tokens_, min(pages, default=None), max(pages, default=None)))
    return nodes


def _walk_sections(chunks: Sequence[ChunkLike]):
    """Yield (chunk, heading path, depth of the first heading that begins at this chunk) in order.

    The depth equals the path length when no new heading begins (the chunk continues the section before).
    A path equal to the one before continues it; a path that is a prefix of the one before means the
    heading at its last level appeared again.
    """
    previous: tuple[str, ...] | None = None
    for chunk in sorted(chunks, key=lambda c: (c.chunk_index is None, c.chunk_index or 0)):
        path = tuple(chunk.heading_path)
        if path == previous:
            first_new = max(len(path), 1)
        else:
            common = 0
            while previous and common < min(len(path), len(previous)) and path[common] == previous[common]:
                common += 1
            first_new = min(common, max(len(path) - 1, 0))
        previous = path
        yield chunk, path, first_new


def source_scores(hits: Sequence[Hit]) -> list[SourceScore]:
    """Return hits grouped per document: count, best and mean score, ranks; most hits first."""
    groups: dict[str, list[tuple[int, Hit]]] = {}
    for rank, hit in enumerate(hits, 1):
        groups.setdefault(hit.document_id, []).append((rank, hit))
    scores = []
    for document_id, ranked in groups.items():
        values = [hit.score for _, hit in ranked if hit.score is not None] or [0.0]
        title = ranked[0][1].document_title or document_id
        scores.append(
            SourceScore(document_id, title, len(ranked), max(values), statistics.fmean(values),
                        tuple(r for r, _ in ranked))
        )
    return sorted(scores, key=lambda s: (-s.hits, -s.best, s.title))


def apply_threshold(hits: Sequence[Hit], top_k: int, threshold: float | None) -> SearchOutcome:
    """Return the hits scoring at least threshold (Qdrant's rule) and notes on what is missing and why."""
    kept = [h for h in hits if threshold is None or (h.score is not None and h.score >= threshold)]
    removed = [h for h in hits if h not in kept]
    notes = []
    if len(hits) < top_k:
        notes.append(f"Only {len(hits)} chunk(s) could be searched here, fewer than top_k = {top_k}.")
    if removed and not kept:
        best = max(h.score or 0.0 for h in removed)
        notes.append(f"The score threshold {threshold:.2f} removed all {len(removed)} hits; the best score was "
                     f"{best:.3f}. Lower the threshold to see them.")
    elif removed:
        notes.append(f"The score threshold {threshold:.2f} removed {len(removed)} of {len(hits)} hits.")
    return SearchOutcome(kept, removed, tuple(notes))


def neighbours(chunks: Sequence[Hit], chunk_index: int, radius: int = 1) -> tuple[list[Hit], list[Hit]]:
    """Return the chunks just before and just after chunk_index in a document's chunk list."""
    before = [c for c in chunks if c.chunk_index is not None and chunk_index - radius <= c.chunk_index < chunk_index]
    after = [c for c in chunks if c.chunk_index is not None and chunk_index < c.chunk_index <= chunk_index + radius]
    return before, after


def document_from_chunks(document_id: str, title: str, chunks: Sequence[ChunkLike], kind: str = "text") -> Document:
    """Return the document rebuilt from its stored chunks, so it can be re-chunked without the file.

    Chunk text lands at its offsets; what lies between chunks (only whitespace, which the chunker skips)
    becomes newlines. Chunks without offsets (foreign collections) are joined with blank lines. Headings
    come from the heading paths, pages from the chunks' page numbers (a page break inside a chunk is
    placed at its last paragraph break).
    """
    ordered = sorted(chunks, key=lambda c: (c.chunk_index is None, c.chunk_index or 0))
    spans = _spans(ordered)
    chars = ["\n"] * max((b for _, b in spans), default=0)
    for chunk, (a, b) in zip(ordered, spans, strict=True):
        chars[a:b] = chunk.content
    text = "".join(chars)
    starts = _page_starts(ordered, spans, text)
    numbers = sorted(starts)
    edges = [starts[n] for n in numbers] + [len(text) + len(PAGE_SEPARATOR)]
    cut = len(PAGE_SEPARATOR)
    pages = tuple(Page(n, text[a : b - cut]) for n, a, b in zip(numbers, edges, edges[1:], strict=False))
    headings = _headings(ordered, spans)
    return Document(document_id, title, kind, pages or (Page(1, text),), text, headings)


def _spans(chunks: Sequence[ChunkLike]) -> list[tuple[int, int]]:
    """Return each chunk's [start, end): its own offsets when all have them, else laid end to end."""
    if all(c.start is not None and c.end is not None and c.end - c.start == len(c.content) for c in chunks):
        return [(c.start, c.end) for c in chunks]
    spans, offset = [], 0
    for chunk in chunks:
        spans.append((offset, offset + len(chunk.content)))
        offset += len(chunk.content) + len(PAGE_SEPARATOR)
    return spans


def _page_starts(chunks: Sequence[ChunkLike], spans: list[tuple[int, int]], text: str) -> dict[int, int]:
    """Return page number -> offset where the page begins, from the pages the chunks were found on."""
    starts: dict[int, int] = {}
    for chunk, (a, b) in zip(chunks, spans, strict=True):
        if chunk.page_start is not None and chunk.page_start not in starts:
            starts[chunk.page_start] = 0 if not starts else a
        if chunk.page_end is not None and chunk.page_end not in starts and chunk.page_end != chunk.page_start:
            cut = text.rfind(PAGE_SEPARATOR, a, b)  # the page break is a blank line inside this chunk
            starts[chunk.page_end] = cut + len(PAGE_SEPARATOR) if cut > a else b
    ordered, last = {}, -len(PAGE_SEPARATOR)
    for number in sorted(starts):  # pages must begin in order and at least one separator apart
        if starts[number] >= last + len(PAGE_SEPARATOR) or not ordered:
            ordered[number] = last = max(starts[number], 0)
    return ordered


def _headings(chunks: Sequence[ChunkLike], spans: list[tuple[int, int]]) -> tuple[Heading, ...]:
    """Return the headings implied by the chunks' heading paths, each starting where its first chunk starts."""
    found = []
    starts = {id(chunk): a for chunk, (a, _) in zip(chunks, spans, strict=True)}
    for chunk, path, first_new in _walk_sections(chunks):
        for depth in range(first_new, len(path)):
            found.append(Heading(path[depth], depth + 1, starts[id(chunk)], "stored"))
    return tuple(sorted(found, key=lambda h: h.start))


def sample_paths(folder: str | Path) -> list[Path]:
    """Return the PDF, Markdown and text files under folder (recursively, LICENSE files skipped), by path."""
    return sorted(
        p for p in Path(folder).rglob("*")
        if p.is_file() and p.suffix.lower() in SAMPLE_SUFFIXES and not p.name.upper().startswith("LICENSE")
    )


def sample_files(folder: str | Path) -> list[SourceFile]:
    """Return the sample files under folder, read, ready to ingest."""
    return [SourceFile(p.name, p.read_bytes()) for p in sample_paths(folder)]
