"""Score diagnostics: the scores of one query over a whole collection, and where each query's answer ranked.

`score_distribution` searches with a top_k as large as the collection (at most `cap`, default 5000 chunks)
and returns every score, best first, with the score at the top_k cut and what a threshold would keep, so a
threshold can be chosen by eye. Scores are on the mode's own scale (Hit.score_kind): cosine for dense,
BM25 for sparse (only chunks containing a query term get a score at all), the fused score for hybrid.
It is the table's ranking continued: its first top_k scores are the hits a search with that top_k returns.
For hybrid that means fusing at the table's candidate depth (candidate_limit(top_k)), so only the chunks
of the two candidate lists get a fused score.

`rank_rows` turns an Evaluation into one row per query: the rank and score of its first relevant chunk,
the top score and the gap between them, for a chart over all queries.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rag import pipeline
from rag.embeddings import Embedder
from rag.evaluation.metrics import Evaluation, collection_info
from rag.retrieval import DEFAULT_REQUEST, SearchRequest, candidate_limit
from rag.store import Store

SCORE_CAP = 5000  # chunks scored at most: one search with this top_k


@dataclass(frozen=True)
class ScoreStats:
    count: int
    minimum: float
    maximum: float
    mean: float
    median: float
    stdev: float  # population standard deviation; 0.0 for one score
    q1: float  # 25th percentile
    q3: float  # 75th percentile


@dataclass(frozen=True)
class ScoreDistribution:
    query: str
    collection: str
    mode: str  # "dense" | "sparse" | "hybrid"
    fusion: str | None  # None unless hybrid
    score_kind: str | None  # "cosine", "bm25", "rrf", "dbsf" (None when nothing was scored)
    scores: tuple[float, ...]  # best first: every chunk scored, up to cap
    total: int  # chunks that could be scored (the collection, or the chosen documents)
    cap: int
    capped: bool  # the collection holds more than cap chunks: scores are the best cap of them
    top_k: int
    kth_score: float | None  # the score at rank top_k: the lowest score top_k keeps; None with fewer scores
    threshold: float | None
    above_threshold: int | None  # scored chunks with score >= threshold; None without a threshold
    kept: int  # chunks a search with this top_k and threshold returns
    stats: ScoreStats | None  # None when nothing was scored
    notes: tuple[str, ...]  # what the figure does not show, in words (capped, unscored chunks)

    def rows(self) -> list[dict]:
        """Return one row per score for a chart: rank (from 1), score, in_top_k, above_threshold, kept."""
        rows = []
        for rank, score in enumerate(self.scores, 1):
            above = self.threshold is None or score >= self.threshold
            rows.append({"rank": rank, "score": score, "in_top_k": rank <= self.top_k, "above_threshold": above,
                         "kept": rank <= self.top_k and above})
        return rows


def score_stats(scores: Sequence[float]) -> ScoreStats | None:
    """Return count, min, max, mean, median, population stdev and quartiles of scores; None when empty."""
    if not scores:
        return None
    values = sorted(scores)
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else (values[0],) * 3
    return ScoreStats(len(values), values[0], values[-1], statistics.fmean(values), statistics.median(values),
                      statistics.pstdev(values), q1, q3)


def distribution_of(
    scores: Sequence[float], request: SearchRequest, total: int | None = None, cap: int = SCORE_CAP, *,
    query: str = "", collection: str = "", score_kind: str | None = None,
) -> ScoreDistribution:
    """Return the distribution of scores (best first) as cut by the request's top_k and score_threshold; total =
    chunks that exist; the request's depth: how deep hybrid search fused (a note on the chunks without a score)."""
    top_k, threshold, mode, depth = request.top_k, request.score_threshold, request.searched_mode, request.depth
    scores = tuple(sorted((float(s) for s in scores), reverse=True))
    total = len(scores) if total is None else total
    capped = total > cap
    above = None if threshold is None else sum(s >= threshold for s in scores)
    kept = min(top_k, len(scores) if above is None else above)
    notes = []
    if capped:
        notes.append(f"Showing the best {cap:,} of {total:,} chunks; the rest score lower.")
    unscored = min(total, cap) - len(scores)
    if unscored > 0 and mode == "sparse":
        notes.append(f"{unscored:,} of {min(total, cap):,} chunks contain no query term, so keyword search gives "
                     "them no score at all.")
    elif unscored > 0 and mode == "hybrid" and depth:
        notes.append(f"Hybrid search fuses the best {depth:,} chunks of each list (dense and keyword); the other "
                     f"{unscored:,} of {min(total, cap):,} chunks get no fused score.")
    elif unscored > 0:
        notes.append(f"{unscored:,} of {min(total, cap):,} chunks got no score in this search.")
    return ScoreDistribution(query, collection, mode, request.fusion if mode == "hybrid" else None, score_kind,
                             scores, total, cap, capped, top_k, scores[top_k - 1] if len(scores) >= top_k else None,
                             threshold, above, kept, score_stats(scores), tuple(notes))


def score_distribution(
    query: str,
    collection: str,
    request: SearchRequest = DEFAULT_REQUEST,
    *,
    store: Store,
    embedder: Embedder | None = None,
    cap: int = SCORE_CAP,
    query_vector: np.ndarray | None = None,
) -> ScoreDistribution:
    """Return the scores of query over every chunk of collection (at most cap), with the request's top_k and
    threshold cuts (a mode or fusion None: dense, DEFAULT_FUSION, as a Store searches).

    One search with top_k = min(chunks, cap) and no threshold, in the request's mode and documents, hybrid fused
    at the depth a search with top_k uses, so the first top_k scores are that search's; errors as pipeline.search
    (empty query, unknown mode, a keyword mode on a collection without keyword vectors, ...). query_vector: the
    query's embedding when the caller has it (pipeline.search).
    """
    request = request.as_searched().replace(depth=candidate_limit(request.top_k))
    if request.document_ids:
        wanted = set(request.document_ids)
        total = sum(d.chunks for d in store.documents(collection) if d.document_id in wanted)
    else:
        total = collection_info(store, collection).points
    every = request.replace(top_k=max(1, min(total, cap)), score_threshold=None)
    hits = pipeline.search(query, collection, every, store=store, embedder=embedder, query_vector=query_vector)
    scores = [h.score for h in hits if h.score is not None]
    kind = next((h.score_kind for h in hits if h.score_kind), None)
    return distribution_of(scores, request, total, cap, query=query, collection=collection, score_kind=kind)


@dataclass(frozen=True)
class RankRow:
    query: str
    line: int  # the query's line in its query set
    rank: int | None  # rank of the first relevant chunk; None when it was not within the deepest k
    score: float | None  # that chunk's score
    top_score: float | None  # the best score of the query's hits
    gap: float | None  # top_score - score: 0.0 at rank 1, None when not found
    above_threshold: bool | None  # score >= threshold; None without a threshold or when not found

    def to_json(self) -> dict:
        return {"query": self.query, "line": self.line, "rank": self.rank, "score": self.score,
                "top_score": self.top_score, "gap": self.gap, "above_threshold": self.above_threshold}


def rank_rows(evaluation: Evaluation, threshold: float | None = None) -> list[RankRow]:
    """Return one row per query of evaluation (in its order): rank, score, top score and gap of the answer chunk."""
    rows = []
    for outcome in evaluation.per_query:
        found = outcome.rank is not None and outcome.score is not None
        gap = outcome.top_score - outcome.score if found and outcome.top_score is not None else None
        above = outcome.score >= threshold if found and threshold is not None else None
        rows.append(RankRow(outcome.query.text, outcome.query.line, outcome.rank, outcome.score, outcome.top_score,
                            gap, above))
    return rows
