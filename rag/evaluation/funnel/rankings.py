"""The rankings a question's chunks pass through, as search ranks them: the dense and keyword candidate lists, the
fused ranking, and a reranker's order when one is given (rag.evaluation.funnel.stages reads the stages from them).

A reranker is any callable (query text, hits best first) -> the reranked order, as (chunk_id, score) pairs or as
Hits carrying the reranker's score; it sees the top `rerank_depth` of the mode's ranking (fused for hybrid).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from rag.embeddings import Embedder
from rag.evaluation.metrics import SearchMode, covered_unit
from rag.evaluation.querysets import Query
from rag.retrieval import CANDIDATES, ChildMatch, Hit, requests_for
from rag.store import Store

Reranker = Callable[[str, Sequence[Hit]], Sequence["tuple[str, float] | Hit"]]


@dataclass(frozen=True)
class Placed:
    rank: int  # from 1
    score: float
    child: ChildMatch | None = None  # parent–child search: the child that placed the chunk

    def to_json(self) -> dict:
        return {"rank": self.rank, "score": self.score} | ({"child": self.child.to_json()} if self.child else {})

    @property
    def child_words(self) -> str:
        """Return "via child 2 (rank 5 among chunks and children)" in a parent–child collection, else ""."""
        if self.child is None:
            return ""
        if self.child.index is None:
            return f"the chunk itself, above its children (rank {self.child.rank} among chunks and children)"
        return f"via child {self.child.index} (rank {self.child.rank} among chunks and children)"


@dataclass(frozen=True)
class Rankings:
    """One query's rankings as searched: the two candidate lists, the fused one, the reranked one."""

    mode: str  # "dense" | "sparse" | "hybrid"
    dense: tuple[Hit, ...] = ()
    keyword: tuple[Hit, ...] = ()
    fused: tuple[Hit, ...] = ()
    reranked: tuple[Hit, ...] | None = None  # None: no reranker

    @property
    def final(self) -> tuple[Hit, ...]:
        """Return the ranking the context is built from."""
        if self.reranked is not None:
            return self.reranked
        return {"dense": self.dense, "sparse": self.keyword}.get(self.mode, self.fused)

    def placed(self, stage: str, chunk_id: str) -> Placed | None:
        ranking = self.reranked if stage == "reranked" else getattr(self, stage)
        for rank, hit in enumerate(ranking or (), 1):
            if hit.chunk_id == chunk_id:
                return Placed(rank, float(hit.score if hit.score is not None else 0.0), hit.child)
        return None


def search_rankings(store: Store, collection: str, texts: Sequence[str], vectors: np.ndarray | None,
                    embedder: Embedder | None, mode: SearchMode, reranker: Reranker | None = None,
                    rerank_depth: int = CANDIDATES, every_mode: str | None = None) -> list[Rankings]:
    """Return each query's rankings, CANDIDATES deep, in one round trip (as rag.retrieval.search searches them).

    The lists mode searches; with every_mode (a fusion spec), every list the collection can give (dense with
    vectors, keyword with keyword vectors, fused with that fusion when both), so one chunk's ranks across modes.
    """
    keywords = mode.needs_keywords or bool(every_mode and store.has_keywords(collection))
    names = [("dense", "rrf")] if vectors is not None and (mode.needs_vectors or every_mode) else []
    names += [("sparse", "rrf")] if keywords else []
    if mode.mode == "hybrid" or (every_mode and keywords and vectors is not None):
        names.append(("hybrid", mode.fusion if mode.mode == "hybrid" else every_mode))
    found = store.search_many(collection, requests_for(names, CANDIDATES), vectors, embedder, query_texts=list(texts))
    lists = {name: rows for (name, _), rows in zip(names, found, strict=True)}
    rankings = []
    for i, text in enumerate(texts):
        ranking = Rankings(mode.mode, *(tuple(lists[name][i]) if name in lists else () for name in
                                        ("dense", "sparse", "hybrid")))
        if reranker is not None:
            ranking = Rankings(ranking.mode, ranking.dense, ranking.keyword, ranking.fused,
                               rerank(reranker, text, ranking.final[: max(int(rerank_depth), 1)]))
        rankings.append(ranking)
    return rankings


def rerank(reranker: Reranker, text: str, hits: Sequence[Hit]) -> tuple[Hit, ...]:
    """Return hits in the reranker's order, each carrying the reranker's score (ids it does not know are dropped)."""
    by_id = {h.chunk_id: h for h in hits}
    ranked = []
    for item in reranker(text, list(hits)):
        chunk_id, score = (item.chunk_id, item.score) if isinstance(item, Hit) else (str(item[0]), item[1])
        if chunk_id in by_id:
            ranked.append(_rescored(by_id.pop(chunk_id), float(score)))
    return tuple(ranked)


def _rescored(hit: Hit, score: float) -> Hit:
    return replace(hit, score=score, score_kind="rerank")


def relevant_chunks(store: Store, collection: str, query: Query) -> list[Hit]:
    """Return the chunks of collection that are relevant to a resolved query, in document order."""
    found = []
    for ids in query.document_ids:
        for document_id in sorted(ids):
            chunks = store.document_chunks(collection, document_id)
            found.extend(h for h in chunks if covered_unit(query, h) is not None)
    return found
