"""What the Chunks page shows about a document's chunks: statistics, flags, overlaps, the heading tree.

Pure functions over rag's dataclasses (Chunk from rag.chunking, Hit from rag.store); no Streamlit. A chunk
read back from the store is a Hit with score None, so every function here takes either.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from rag.chunking import MIN_CHUNK_SIZE, Chunk, tokens
from rag.embeddings import CUT_OFF as CUT_OFF  # the embedder's rule for a chunk over its limit, shown here
from rag.embeddings import WINDOWED as WINDOWED
from rag.embeddings import overflow_flag as overflow_flag
from rag.store import ChunkLike, Hit, walk_sections

TINY_SHARE = 0.05  # a chunk under 5 % of chunk_size is "tiny": a stray heading or a page footer
TINY_MIN_TOKENS = 10
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
    cut_tokens: int  # model tokens beyond the embedder's input limit: never embedded (or, windowed, in extra windows)
    heading_path: tuple[str, ...]
    page_start: int | None
    page_end: int | None
    content: str
    flags: tuple[str, ...]  # "cut off" or "windowed", "tiny", "no heading", "toc"
    table_header: str = ""  # Markdown: the header rows of the table the chunk continues, read before content

    @property
    def cut_share(self) -> float:
        """Return the share of the chunk's model tokens that the embedder never reads (0.0 - 1.0)."""
        return self.cut_tokens / self.model_tokens if self.model_tokens else 0.0


@dataclass(frozen=True)
class FlagSummary:
    chunks: int
    cut: int  # searched chunks longer than the embedder's input limit (tables of contents are not searched)
    cut_share: float  # mean share of those chunks' model tokens that is never embedded
    tiny: int
    no_heading: int
    suggested_chunk_size: int | None  # a smaller chunk_size (cl100k) whose chunks would fit; None: all fit, or none
    toc_cut: int = 0  # tables of contents over the limit: not searched, so they need no smaller chunk_size

    @property
    def over_limit(self) -> int:
        """Return every chunk over the embedder's limit, as the chunk table flags them (tables of contents too)."""
        return self.cut + self.toc_cut


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


def token_count(chunk: ChunkLike) -> int:
    """Return a chunk's cl100k token count: stored with it when known, else counted now."""
    if isinstance(chunk, Chunk):
        return chunk.token_count
    stored = chunk.payload.get("token_count")
    return stored if isinstance(stored, int) and not isinstance(stored, bool) else tokens.count(chunk.content)


def table_header(chunk: ChunkLike | ChunkReport) -> str:
    """Return the header rows of the Markdown table a chunk continues (rag.chunking.tables), "" when it continues none:
    the embedder, the keyword index and the LLM read them before the chunk's text."""
    header = chunk.payload.get("table_header") if isinstance(chunk, Hit) else chunk.table_header
    return header if isinstance(header, str) else ""


def model_text(chunk: ChunkLike | ChunkReport) -> str:
    """Return what the embedder reads of a chunk: its table header rows (if any), a line break, then its text."""
    header = table_header(chunk)
    return f"{header}\n{chunk.content}" if header else chunk.content


def table_header_source(chunks: Sequence[ChunkLike | ChunkReport], chunk_index: int) -> int | None:
    """Return the index of the chunk that holds the header rows chunk chunk_index repeats: the nearest chunk before it
    whose text contains them (the table starts there); None when it repeats none or no chunk before holds them."""
    ordered = sorted((c for c in chunks if c.chunk_index is not None), key=lambda c: c.chunk_index)
    position = next((i for i, c in enumerate(ordered) if c.chunk_index == chunk_index), None)
    header = table_header(ordered[position]) if position is not None else ""
    if not header:
        return None
    # backwards from the chunk: the table's start is close before it, so a long document is not searched whole
    return next((c.chunk_index for c in reversed(ordered[:position]) if header in c.content), None)


def stored_flags(chunk: ChunkLike) -> tuple[str, ...]:
    """Return the flags the chunker gave a chunk (e.g. "toc"), from the Chunk or its stored payload."""
    flags = chunk.flags if isinstance(chunk, Chunk) else chunk.payload.get("flags")
    return tuple(str(f) for f in flags) if isinstance(flags, list | tuple) else ()


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


SMALLEST_ADVICE = 50  # cl100k tokens: a smaller chunk holds hardly a sentence, so no chunk_size below is advised


def chunk_reports(
    chunks: Sequence[ChunkLike],
    model_tokens: Sequence[int] | None = None,
    max_input_tokens: int | None = None,
    chunk_size: int | None = None,
    overflow: str = CUT_OFF,
) -> list[ChunkReport]:
    """Return one report per chunk: token counts, how much is over the embedder's limit, and flags.

    overflow names the flag of a chunk over the limit: "cut off" (never embedded) or "windowed".
    """
    tiny = tiny_limit(chunk_size)
    reports = []
    for position, chunk in enumerate(chunks):
        n = token_count(chunk)
        model = model_tokens[position] if model_tokens is not None else None
        cut = max(model - max_input_tokens, 0) if model is not None and max_input_tokens else 0
        flags = [name for name, on in ((overflow, cut > 0), ("tiny", n < tiny), ("no heading", not chunk.heading_path))
                 if on] + list(stored_flags(chunk))
        index = chunk.chunk_index if chunk.chunk_index is not None else position
        reports.append(
            ChunkReport(index, n, model, cut, chunk.heading_path, chunk.page_start, chunk.page_end, chunk.content,
                        tuple(flags), table_header(chunk))
        )
    return reports


def flag_summary(reports: Sequence[ChunkReport], max_input_tokens: int | None) -> FlagSummary:
    """Return how many chunks carry each flag, and a chunk_size that would fit the embedder's input limit.

    Tables of contents ("toc") are not searched: they are counted apart (toc_cut) and ask for no other
    chunk_size. The suggestion converts the limit from the embedder's tokens to cl100k with the highest
    ratio seen in the searched chunks (tiny ones aside: a few tokens give no ratio to trust; German text and
    tables take more wordpieces than cl100k tokens), with 10 % to spare, so every searched chunk would fit.
    It is made only when it is smaller than every chunk over the limit (a chunk_size that does not split them
    cannot help) and not below SMALLEST_ADVICE; otherwise there is no advice to give.
    """
    searched = [r for r in reports if "toc" not in r.flags]
    cut = [r for r in searched if r.cut_tokens]
    suggestion = None
    ratios = [r.model_tokens / r.tokens for r in searched if r.model_tokens and r.tokens and "tiny" not in r.flags]
    ratios = ratios or [r.model_tokens / r.tokens for r in cut if r.model_tokens and r.tokens]
    if cut and ratios and max_input_tokens:
        fitting = int(max_input_tokens / max(ratios) * 0.9 // 10 * 10)
        if max(MIN_CHUNK_SIZE, SMALLEST_ADVICE) <= fitting < min(r.tokens for r in cut):
            suggestion = fitting
    return FlagSummary(
        len(reports),
        len(cut),
        statistics.fmean(r.cut_share for r in cut) if cut else 0.0,
        sum("tiny" in r.flags for r in reports),
        sum("no heading" in r.flags for r in reports),
        suggestion,
        sum(bool(r.cut_tokens) for r in reports if "toc" in r.flags),
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
    for chunk, path, first_new in walk_sections(chunks):
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


def unread_start(text: str, embedder: object) -> int | None:
    """Return where in text the model stops reading (a character offset at a word start), or None when it reads
    all of it (or reads long chunks in windows). Found by bisection over word starts with the model's count."""
    limit = getattr(embedder, "max_input_tokens", None)
    if limit is None or getattr(embedder, "windowed", False) or embedder.count_tokens(text) <= limit:
        return None
    starts = [m.start() for m in re.finditer(r"(?<=\s)\S", text)]
    low, high, best = 0, len(starts) - 1, 0
    while low <= high:
        middle = (low + high) // 2
        if embedder.count_tokens(text[: starts[middle]].rstrip()) <= limit:
            best, low = starts[middle], middle + 1
        else:
            high = middle - 1
    return best
