"""hits -> the LLM context under an exact cl100k token budget, with numbered sources.

Each included chunk is one block: a one-line header `[Quelle N: title — heading › path — S. 3–4]`, a
newline, then the chunk text as it is (the text is data: nothing in it is interpreted); a Markdown chunk that
continues a table gets the table's header rows first (rag.chunking.tables). Blocks are joined
by `separator`. The whole string is counted with rag.chunking.tokens, never the sum of its parts, because BPE
merges across the joins.

When a block does not fit, `overflow` decides (as the original pipeline: "truncate if needed"):
  truncate  (default) the block is cut at the last sentence end that fits, marked with TRUNCATION_MARK,
            and the context ends there. A cut keeps at least one sentence of the chunk's text: a sentence end
            counts only when the text since the one before (or since the chunk's start) holds a letter, so the
            dot of a heading number such as `1.1.2.` ends no sentence and "1.1.2. …" is never a source. A chunk
            with sentences none of which fits is dropped with the reason NO_SENTENCE; a chunk without any
            sentence end (a list, a table row) is cut at the last word end after its first letter instead;
  skip      the block is left out and the next, smaller one may still fit (greedy fill);
  stop      the context ends before the block.
Every chunk left out is listed in `dropped` with its reason; a cut chunk in `truncated`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rag.chunking import tokens
from rag.errors import InvalidSettingsError

if TYPE_CHECKING:
    from rag.retrieval.records import Hit

CHAT_MAX_TOKENS = 3000
GENERATION_MAX_TOKENS = 5000
OVERFLOWS = ("truncate", "skip", "stop")
DEFAULT_OVERFLOW = "truncate"
TRUNCATION_MARK = " …"
_SENTENCE_END = re.compile(r"[.!?…:;][\"'»«“”)\]]*(?=\s)")
_LETTER = re.compile(r"[^\W\d_]")
NO_SENTENCE = "a cut would keep no sentence"  # the reason a chunk is dropped instead of cut to its heading number
MIN_REMAINDER_CHARS = 30  # a trimmed overlap remainder this long is worth keeping ...
MIN_REMAINDER_SHARE = 0.2  # ... or one this large a share of its chunk


@dataclass(frozen=True)
class Source:
    number: int
    document_title: str
    document_id: str
    heading_path: tuple[str, ...]
    page_start: int | None
    page_end: int | None
    score: float | None
    chunk_index: int | None
    truncated: bool = False  # the block holds only the start of the chunk (overflow "truncate")


@dataclass(frozen=True)
class Dropped:
    hit: Hit
    reason: str  # "over budget" | "budget full" | "duplicate" | "overlaps source N" | NO_SENTENCE | for a cut
    # chunk: how much was kept


@dataclass(frozen=True)
class Context:
    text: str
    token_count: int  # == tokens.count(text) <= max_tokens
    max_tokens: int
    sources: list[Source]  # sources[i].number == i + 1, the N in the block headers
    included: list[Hit]  # in context order; a chunk trimmed for overlap or cut carries the content it has here
    dropped: list[Dropped]
    truncated: list[Dropped] = field(default_factory=list)  # chunks cut to fit, with what was kept
    overflow: str = DEFAULT_OVERFLOW
    table_headers: list[str] = field(default_factory=list)  # per included block: the table header rows it repeats
    # before the chunk's text ("" for none), as they stand in text

    def to_dict(self) -> dict[str, Any]:
        """Return the context as JSON-ready data: text, counts, sources, included and dropped hits."""
        return {
            "text": self.text,
            "token_count": self.token_count,
            "max_tokens": self.max_tokens,
            "sources": [_jsonable(asdict(s)) for s in self.sources],
            "included": [_hit_dict(h) for h in self.included],
            "dropped": [{"reason": d.reason, "hit": _hit_dict(d.hit)} for d in self.dropped],
            "truncated": [{"reason": d.reason, "hit": _hit_dict(d.hit)} for d in self.truncated],
            "overflow": self.overflow,
        }


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}


def _hit_dict(hit: Hit) -> dict[str, Any]:
    return _jsonable(asdict(hit))


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def header(number: int, hit: Hit, label: str = "Quelle") -> str:
    """Return the one-line block header: `[Quelle N: title — heading › path — S. 3–4]`."""
    parts = [_one_line(hit.document_title or hit.document_id) or "?"]
    if hit.heading_path:
        parts.append(" › ".join(_one_line(h) for h in hit.heading_path))
    if hit.page_start is not None:
        end = hit.page_end if hit.page_end is not None else hit.page_start
        parts.append(f"S. {hit.page_start}" if end == hit.page_start else f"S. {hit.page_start}–{end}")
    return f"[{label} {number}: {' — '.join(parts)}]"


def _table_lead(piece: Hit, hit: Hit) -> str:
    """Return the header rows of the table the chunk continues and a line break (none for a cut-off piece)."""
    lead = hit.payload.get("table_header") if piece.start == hit.start else None
    return f"{lead}\n" if isinstance(lead, str) and lead else ""


def _has_span(hit: Hit) -> bool:
    return hit.start is not None and hit.end is not None and hit.end - hit.start == len(hit.content)


def _span(hit: Hit) -> tuple[str, int, int] | None:
    """Return (document id, start, end) when the hit's offsets locate its content, else None."""
    return (hit.document_id, hit.start, hit.end) if _has_span(hit) else None


def _remainder(hit: Hit, spans: list[tuple[int, int]]) -> tuple[int, int]:
    """Return the longest part of hit's span that no span covers (end <= start when none)."""
    best, cursor = (0, 0), hit.start
    for start, end in sorted(spans) + [(hit.end, hit.end)]:
        if start > cursor and min(start, hit.end) - cursor > best[1] - best[0]:
            best = (cursor, min(start, hit.end))
        cursor = max(cursor, end)
        if cursor >= hit.end:
            break
    return best


def _trim(hit: Hit, start: int, end: int) -> Hit | None:
    """Return hit cut to [start, end) at whitespace, or None when too little is left to be worth it."""
    text = hit.content[start - hit.start : end - hit.start]
    if start > hit.start and not hit.content[start - hit.start - 1].isspace():
        cut = re.search(r"\s", text)  # starts mid-word: skip to the next word
        text, start = (text[cut.end() :], start + cut.end()) if cut else ("", end)
    if end < hit.end and not hit.content[end - hit.start].isspace():
        cut = re.search(r"\s\S*$", text)  # ends mid-word: back off to the previous word
        text, end = (text[: cut.start()], start + cut.start()) if cut else ("", start)
    lead = len(text) - len(text.lstrip())
    text = text.strip()
    start += lead
    if not text or len(text) < min(MIN_REMAINDER_CHARS, MIN_REMAINDER_SHARE * len(hit.content)):
        return None
    return replace(hit, content=text, start=start, end=start + len(text))


def _deduplicate(hit: Hit, included: list[Hit], originals: list[Hit]) -> tuple[Hit | None, str]:
    """Return the part of hit not yet in the context (hit itself if all new), or None and why not."""
    span, content = _span(hit), hit.content.strip()
    for other in originals:
        if (span and span == _span(other)) or (content and content == other.content.strip()):
            return None, "duplicate"
    if not _has_span(hit):
        return hit, ""
    overlapping = [
        (number, other)
        for number, other in enumerate(included, 1)
        if other.document_id == hit.document_id and _has_span(other) and other.start < hit.end and hit.start < other.end
    ]
    if not overlapping:
        return hit, ""
    start, end = _remainder(hit, [(other.start, other.end) for _, other in overlapping])
    piece = _trim(hit, start, end) if end > start else None
    return piece, "" if piece else f"overlaps source {overlapping[0][0]}"


def build_context(
    hits: list[Hit],
    max_tokens: int = CHAT_MAX_TOKENS,
    label: str = "Quelle",
    separator: str = "\n\n---\n\n",
    overflow: str = DEFAULT_OVERFLOW,
) -> Context:
    """Return the context: hits by score, each under a numbered header, never over max_tokens.

    Every hit in score order (hits without score keep their order, after scored ones) is tried once.
    Overlapping chunks of one document are cut to their new part or dropped; duplicates dropped. A block
    that does not fit is handled by `overflow` (see the module's docstring).
    """
    if overflow not in OVERFLOWS:
        raise InvalidSettingsError(f"Unknown overflow policy '{overflow}'. Use one of: {', '.join(OVERFLOWS)}.")
    ordered = sorted(hits, key=lambda h: (h.score is None, -(h.score or 0.0)))
    text, count = "", 0
    included: list[Hit] = []
    originals: list[Hit] = []
    dropped: list[Dropped] = []
    truncated: list[Dropped] = []
    leads: list[str] = []
    full = False
    for hit in ordered:
        if full:
            dropped.append(Dropped(hit, "budget full"))
            continue
        piece, reason = _deduplicate(hit, included, originals)
        if piece is None:
            dropped.append(Dropped(hit, reason))
            continue
        lead = _table_lead(piece, hit)
        head = header(len(included) + 1, piece, label) + "\n" + lead
        joint = separator if text else ""
        fits = _fits(text, count, joint + head + piece.content, max_tokens)
        why = "over budget"
        if fits is None and overflow == "truncate":
            cut = _truncate(text, count, joint + head, piece, max_tokens)
            if isinstance(cut, tuple):
                piece, fits = cut
                truncated.append(Dropped(hit, f"cut to fit: {len(piece.content) - len(TRUNCATION_MARK)} of "
                                              f"{len(hit.content)} characters kept"))
            else:
                why = cut
        if fits is None:
            dropped.append(Dropped(hit, why))
            full = overflow != "skip"
            continue
        text, count = text + joint + head + piece.content, fits
        included.append(piece)
        originals.append(hit)
        leads.append(lead.removesuffix("\n"))
        full = bool(truncated) and truncated[-1].hit is hit
    sources = [_source(number, piece, truncated=any(d.hit is hit for d in truncated))
               for number, (piece, hit) in enumerate(zip(included, originals, strict=True), 1)]
    return Context(text, count, max_tokens, sources, included, dropped, truncated, overflow, leads)


def _source(number: int, piece: Hit, truncated: bool) -> Source:
    return Source(number, piece.document_title, piece.document_id, piece.heading_path, piece.page_start,
                  piece.page_end, piece.score, piece.chunk_index, truncated)


def _fits(text: str, count: int, addition: str, max_tokens: int) -> int | None:
    """Return the token count of text + addition if it is within max_tokens, else None."""
    # counted from the text so far plus the addition: a budget of many chunks is not re-encoded per chunk
    total = tokens.count_joined(text, count, addition) if text else tokens.count(addition)
    return total if total <= max_tokens else None


def _truncate(text: str, count: int, lead: str, piece: Hit, max_tokens: int) -> tuple[Hit, int] | str:
    """Return (piece cut to its longest start that fits, marked, and the new count), or why there is no such cut:
    NO_SENTENCE (the chunk has sentences, not one fits, a word would) or "over budget" (not one word fits).

    The cut lies at a sentence end (_sentence_ends); only a chunk without one is cut at a word end after its first
    letter.
    Found by bisection over those ends.
    """
    content = piece.content
    sentences = _sentence_ends(content)
    first = _LETTER.search(content)
    words = [m.start() for m in re.finditer(r"(?<=\S)\s", content) if first and m.start() > first.start()]
    ends = sentences or words
    best, low, high = None, 0, len(ends) - 1
    while low <= high:
        middle = (low + high) // 2
        kept = content[: ends[middle]].rstrip() + TRUNCATION_MARK
        total = _fits(text, count, lead + kept, max_tokens)
        if total is None:
            high = middle - 1
        else:
            best, low = (kept, total), middle + 1
    if best is None:
        word = words and _fits(text, count, lead + content[: words[0]] + TRUNCATION_MARK, max_tokens) is not None
        return NO_SENTENCE if sentences and word else "over budget"
    kept, total = best
    end = None if piece.start is None else piece.start + len(kept) - len(TRUNCATION_MARK)
    return replace(piece, content=kept, end=end), total


def _sentence_ends(content: str) -> list[int]:
    """Return the ends of content's sentences: the sentence ends with a letter since the one before (the dots of
    `1.1.2.` or of a date end no sentence)."""
    ends, since = [], 0
    for match in _SENTENCE_END.finditer(content):
        if _LETTER.search(content, since, match.start()):
            ends.append(match.end())
            since = match.end()
    return ends
