"""What the Search page shows about hits: scores per source, the score threshold and what it removed, neighbours."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from rag.store.records import Hit


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
