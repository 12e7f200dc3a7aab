"""Parent–child retrieval, the search half: a ranking of children (and their parents) folded back into parents.

A collection with children (metadata "child_size" > 0; rag.store.children writes them) is searched over its
chunks and their children together (rag.store.children.WITH_PARENTS); each chunk is returned once, at the best
score of itself and its children (max), in the order that best point reached. Measured against max over the
children alone, the sum of the top 2 children and the mean of the top 3 (bench/children_aggregation.py,
docs/benchmarks.md "Parent–child retrieval"): the parent competing with its children ranked best. The max keeps a
control a cut: the chunks' order is the order in which they first appear in one ranking, so a larger top_k only
reads further down it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag.retrieval.records import ChildMatch, payload_int

KEYS = ["document_id", "chunk_index", "parent_id", "child_index", "child_start", "child_end", "start", "end"]


def parents(points: Sequence[Any], limit: int) -> tuple[list[Any], dict[str, ChildMatch]]:
    """Return the first limit distinct parents of a ranking of children (and parents: WITH_PARENTS), each a copy
    of its best point with the parent's id and that score, and, per parent id, the point that ranked it (a parent
    that ranked itself: index None, its whole text as the span)."""
    found: list[Any] = []
    matches: dict[str, ChildMatch] = {}
    for rank, point in enumerate(points, 1):
        p = point.payload or {}
        parent = str(p.get("parent_id") or point.id)
        if parent in matches:
            continue
        if len(found) == limit:
            break
        if p.get("parent_id"):
            matches[parent] = ChildMatch(payload_int(p.get("child_index")) or 0,
                                         payload_int(p.get("child_start")) or 0, payload_int(p.get("child_end")) or 0,
                                         point.score, rank)
        else:  # the chunk itself scored above its children
            length = (payload_int(p.get("end")) or 0) - (payload_int(p.get("start")) or 0)
            matches[parent] = ChildMatch(None, 0, max(length, 0), point.score, rank)
        found.append(point.model_copy(update={"id": parent}))
    return found, matches
