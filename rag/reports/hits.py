"""What the Search page shows about hits: scores per source, the score threshold and what it removed, which score
scale belongs to which search mode, and how a hit came to its place (its lists, the fusion, the query words)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from rag.rerank import SCORE_KIND as RERANK_SCORE
from rag.retrieval import RRF_K, Hit
from rag.store import Analyzer
from rag.words import counted


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
        notes.append(f"Only {counted(len(hits), 'chunk')} could be searched here, fewer than top_k = {top_k}.")
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


@dataclass(frozen=True)
class ThresholdScale:
    name: str
    default: float
    step: float
    maximum: float | None
    format: str
    help: str


SCALES = {
    "cosine": ThresholdScale("cosine", 0.3, 0.01, 1.0, "%.2f", "Cosine similarity, 0–1: a chunk scoring less is cut."),
    "bm25": ThresholdScale("BM25", 2.0, 0.5, None, "%.1f", "BM25 keyword score, 0 and up; it grows with the number "
                           "and rarity of the query words a chunk holds."),
    "convex": ThresholdScale("convex", 0.3, 0.01, 1.0, "%.2f", "Weighted sum of the normalised dense and keyword "
                             "scores, 0–1."),
    "rrf": ThresholdScale("RRF", 0.1, 0.01, 1.0, "%.3f", f"Reciprocal-rank score: 1/({RRF_K} + rank − 1) per list, "
                          f"summed; a first rank in one list scores {1 / RRF_K:.2f}, a tenth {1 / (RRF_K + 9):.3f}."),
    "dbsf": ThresholdScale("DBSF", 0.3, 0.01, None, "%.2f", "Sum of the scores normalised by their spread (about "
                           "0–1 per list)."),
}


def threshold_scale(mode: str, fusion_method: str) -> ThresholdScale:
    """Return the scale of the score the threshold applies to in mode (hybrid: the fusion's)."""
    return SCALES["bm25" if mode == "sparse" else "cosine" if mode == "dense" else fusion_method]


SCORE_NAMES = {"cosine": "cosine similarity", "bm25": "BM25 keyword score", "rrf": "fused rank score (RRF)",
               "dbsf": "fused normalised score (DBSF)", "convex": "weighted sum of normalised scores (convex)",
               RERANK_SCORE: "the reranker's own score"}
SCORE_SHORT = {"cosine": "cosine", "bm25": "BM25", "rrf": "RRF", "dbsf": "DBSF", "convex": "convex",
               RERANK_SCORE: "reranker"}


def score_kind(hits: list[Hit]) -> str:
    return next((h.score_kind for h in hits if getattr(h, "score_kind", None)), "cosine")


def score_name(hits: list[Hit]) -> str:
    kind = score_kind(hits)
    return SCORE_NAMES.get(kind, kind)


def keywords(query: str, hit: Hit, analyzer: Analyzer | None) -> str:
    """Return the query's words (as typed) whose keyword terms the chunk contains, comma-separated ("" if none):
    as the keyword search matched them, in the language the chunk was indexed in (stop words left out)."""
    if not analyzer or not query:
        return ""
    language = hit.payload.get("language")
    return ", ".join(analyzer.matching_words(query, hit.content, language if isinstance(language, str) else None))


def rrf_sum(hit: Hit) -> str:
    """Return how RRF added up this hit's score, e.g. "1/2 + 1/4" (Qdrant: 1 / (rank + 1) per list)."""
    parts = [f"1/{rank + 1}" for rank in (hit.dense_rank, hit.sparse_rank) if rank is not None]
    return " + ".join(parts)


def explanation(hit: Hit, query: str, depth: int, analyzer: Analyzer | None = None) -> str:
    """Return one line: how a reranker placed it; for hybrid where the hit stood in each list and how that fused;
    the query words it holds."""
    parts = rerank_explanation(hit) + child_explanation(hit)
    words = keywords(query, hit, analyzer)
    if hit.score_kind in ("rrf", "dbsf", "convex"):
        parts.append(f"dense list: cosine {hit.dense_score:.3f}, rank {hit.dense_rank}" if hit.dense_score is not None
                     else f"dense list: not in its top {depth}")
        absent = "no query word matches it" if analyzer and not words else f"not in its top {depth}"
        parts.append(f"keyword list: BM25 {hit.sparse_score:.2f}, rank {hit.sparse_rank}"
                     if hit.sparse_score is not None else f"keyword list: {absent}")
        how = {"rrf": f"{rrf_sum(hit)} = ", "convex": "w × dense + (1 − w) × keyword, each normalised = "}.get(
            hit.score_kind, "both normalised and added = ")
        parts.append(f"fused ({SCORE_SHORT[hit.score_kind]}): {how}{hit.score:.3f}")
    parts.append(f"query words in it: {words}" if words else "no query word in it")
    return " · ".join(parts)


def child_explanation(hit: Hit) -> list[str]:
    """Return where a parent–child hit got its score (its best child, rag.store.children); [] otherwise."""
    child = hit.child
    if child is None:
        return []
    score = "" if child.score is None else f" ({child.score:.3f})"
    if child.index is None:
        return [f"the chunk itself scored above each of its children{score}, rank {child.rank} among chunks and "
                "children"]
    return [f"score of its best child: child {child.index}, characters {child.start}–{child.end} of this chunk"
            f"{score}, rank {child.rank} among chunks and children"]


def rerank_explanation(hit: Hit) -> list[str]:
    """Return how a reranked hit got its place (its reranker score, where the search had it); [] otherwise."""
    if hit.score_kind != RERANK_SCORE:
        return []
    parts = ["below the rerank depth: not reranked, kept in the search's order" if hit.score is None else
             f"reranker score {hit.score:.3f}"]
    if hit.retrieved_rank is not None:
        score = "" if hit.retrieved_score is None else f", score {hit.retrieved_score:.3f}"
        parts.append(f"the search placed it #{hit.retrieved_rank}{score}")
    return parts
