"""Fit hybrid search's fusion weight on a labelled query set, with cross-validation so the figure is honest.

For every query the dense and the keyword candidate lists are fetched once (candidate_limit of the
deepest k each, as hybrid search fetches them); each weight of the grid fuses them here with the convex
combination (rag.retrieval.fusion) and is scored. The weight reported is the best on all queries; the
cross-validated metric is what choosing a weight this way earns on queries it was not chosen on: the
queries are shuffled (seeded) into folds, each fold's weight is picked on the other folds and scored on
it, and those scores are averaged. A large gap between the two says the set is too small to tune on.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from rag.embeddings import Embedder, EmbeddingCache
from rag.errors import QuerySetError
from rag.evaluation.metrics import DEFAULT_KS, SearchMode, covered_unit, parse_ks, query_metrics, require_keywords
from rag.evaluation.querysets import Query
from rag.evaluation.sweeps.sweep import resolve_in_collection
from rag.retrieval import Fusion, Hit, SearchRequest, candidate_limit, convex
from rag.store import Store

WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))  # 0.0 = keywords only ... 1.0 = dense only
DEFAULT_FOLDS = 5
SEED = 0  # the queries' shuffle into folds: the same tuning twice gives the same folds


@dataclass(frozen=True)
class FusionTuning:
    metric: str  # what was maximised, e.g. "mrr@10"
    weights: tuple[float, ...]
    by_weight: dict[float, float]  # the metric on all queries, per weight
    best: Fusion  # the best weight on all queries, as a convex fusion
    cv_metric: float  # mean held-out metric of the weights chosen fold by fold
    cv_weights: tuple[float, ...]  # the weight chosen on each fold
    queries: int
    folds: int

    def to_json(self) -> dict:
        return {"metric": self.metric, "best": self.best.spec, "best_weight": self.best.weight,
                "best_metric": self.by_weight[self.best.weight],
                "by_weight": {f"{w:g}": round(v, 4) for w, v in self.by_weight.items()},
                "cross_validated": {"metric": round(self.cv_metric, 4), "folds": self.folds,
                                    "weights": list(self.cv_weights)},
                "queries": self.queries}


def tune_fusion(
    queries: Sequence[Query],
    collection: str,
    embedder: Embedder,
    *,
    store: Store,
    cache: EmbeddingCache | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    metric: str | None = None,
) -> FusionTuning:
    """Return the convex fusion weight of WEIGHTS that retrieves best on queries, and its metric cross-validated
    over DEFAULT_FOLDS folds (the queries shuffled by SEED)."""
    folds, weights = DEFAULT_FOLDS, WEIGHTS
    ks = parse_ks(ks)
    metric = metric or f"mrr@{ks[-1]}"
    require_keywords(store, collection, [SearchMode("hybrid")])
    queries = resolve_in_collection(queries, store, collection)
    if len(queries) < folds:
        raise QuerySetError(f"Tuning the fusion needs at least {folds} queries ({len(queries)} given).")
    cache = cache if cache is not None else EmbeddingCache()
    vectors = cache.embed([q.text for q in queries], embedder, query=True)
    depth = candidate_limit(ks[-1])
    texts = [q.text for q in queries]
    dense, keyword = store.search_many(collection, [SearchRequest(mode="dense", top_k=depth),
                                                    SearchRequest(mode="sparse", top_k=depth)], vectors, embedder,
                                       query_texts=texts)
    per_query = {w: [_score(q, d, k, w, ks, metric) for q, d, k in zip(queries, dense, keyword, strict=True)]
                 for w in weights}
    by_weight = {w: statistics.fmean(values) for w, values in per_query.items()}
    order = list(range(len(queries)))
    random.Random(SEED).shuffle(order)
    chosen, held_out = [], []
    for fold in range(folds):
        test = set(order[fold::folds])
        train = [i for i in order if i not in test]
        best = max(weights, key=lambda w: (statistics.fmean(per_query[w][i] for i in train), -abs(w - 0.5)))
        chosen.append(best)
        held_out.extend(per_query[best][i] for i in test)
    top = max(weights, key=lambda w: (by_weight[w], -abs(w - 0.5)))  # ties: the more balanced weight
    return FusionTuning(metric, tuple(weights), by_weight, Fusion("convex", top), statistics.fmean(held_out),
                        tuple(chosen), len(queries), folds)


def _score(query: Query, dense: Sequence[Hit], keyword: Sequence[Hit], weight: float, ks: Sequence[int],
           metric: str) -> float:
    """Return one query's metric when its two candidate lists are fused with weight."""
    by_id = {h.chunk_id: h for h in (*keyword, *dense)}
    order = {i: (h.document_id, h.chunk_index or 0) for i, h in by_id.items()}  # ties as search breaks them
    fused = convex([(h.chunk_id, h.score or 0.0) for h in dense], [(h.chunk_id, h.score or 0.0) for h in keyword],
                   weight, order)
    hits = [by_id[i] for i, _ in fused[: ks[-1]]]
    covers = [covered_unit(query, h) for h in hits]
    return query_metrics(covers, query.units, ks, gains=query.gains)[metric]
