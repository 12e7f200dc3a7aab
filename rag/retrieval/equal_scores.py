"""Scores that count as equal, and their order: runs of scores within a tolerance of each run's first (relative,
at least absolute for scores below 1), each run ordered by a key such as (document, chunk).

Keyword scores of one chunk differ in their last float32 digit between two collections of the same chunks, and
fusions carry that on; ordering such near-equal scores by a key that does not change between ingests (point ids
do) ranks the same chunks alike every time. Used by the embedded engine's searches (rag.store.edge.ties) and by
the fusions computed here (rag.retrieval.fusion).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


def close(score: float, anchor: float, tolerance: float) -> bool:
    """Return whether score is within tolerance of anchor (relative, at least absolute below 1)."""
    return abs(score - anchor) <= tolerance * max(abs(anchor), 1.0)


def in_order(ranked: Iterable[T], score: Callable[[T], float], key: Callable[[T], Any], tolerance: float) -> list[T]:
    """Return ranked (best first, as a search or a fusion ranks: for a distance the smallest score) with the items
    of each run of close scores ordered by key."""
    runs: list[list[T]] = []
    for item in ranked:
        if runs and close(score(item), score(runs[-1][0]), tolerance):
            runs[-1].append(item)
        else:
            runs.append([item])
    return [item for run in runs for item in sorted(run, key=key)]
