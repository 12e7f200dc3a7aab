"""Retrieval metrics judged by character spans (query sets: rag.evaluation.querysets.queries).

Relevance survives any re-chunking because it is judged on spans, never on chunk ids. A hit is relevant
when it comes from a relevant document and
  - with `answer_start`: its [start, end) overlaps [answer_start, answer_start + len(answer)),
  - with `answer` only: its content contains the answer (whitespace-normalised),
  - with a document only: always (any chunk of it).

Every query has *relevant units*: one per relevant document (a span label has exactly one). A unit is
covered by the first relevant hit that comes from its document. For the top k hits of a query:
  hit@k        1 if any of them is relevant, else 0
  recall@k     covered units / units (span label: same as hit@k)
  precision@k  relevant hits / k
  mrr@k        1 / rank of the first relevant hit, 0 if it is below k
  ndcg@k       one gain per newly covered unit, over the ideal gains of the best min(k, units) units; a
               chunking is not rewarded for cutting one answer into more chunks
  judged@k     the share of the top k hits that carry a judgment (a label that marks it relevant, or a
               judgment of any grade that applies to it); 1.0 when nothing was retrieved
  hole@k       1 - judged@k (BEIR's term): how much of the top k no one has judged
Judged questions ("judgments", rag.evaluation.querysets.judgments) add a unit per judgment of grade 1 or 2, with its
grade as gain (a document label's gain is 2); a hit covers the applying unit of the highest gain. A hit is
relevant when it covers a unit (grade 1 or 2); a judgment of grade 0 only makes it judged.
The set's metrics are the means over its queries. Search once with the largest k, then cut.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from rag.errors import InvalidSettingsError
from rag.evaluation.metrics.intervals import bootstrap_intervals
from rag.evaluation.querysets import Query, hit_grade, judged_at_k, squeezed
from rag.retrieval import Hit

DEFAULT_KS = (1, 3, 5, 10)
METRICS = ("hit", "recall", "precision", "mrr", "ndcg")
COVERAGE = ("judged", "hole")  # beside the metrics: how much of the top k is judged; not a quality
MOSTLY_UNJUDGED = 0.5  # hole@k above this: precision and nDCG say more about the judgments than the configuration
EVERY_HIT = ("precision", "ndcg")  # the metrics that score every hit of the top k (an unjudged one as not relevant)


def unjudged_note(metric: str | None = None) -> str:
    """Return what a mostly unjudged top k (hole@k above MOSTLY_UNJUDGED) means for metric ("mrr@10"; None: for
    every metric), in words: it says more about the judgments than the configuration only for the metrics that
    score every hit of the top k (EVERY_HIT); hit and MRR need only the first relevant chunk, recall the known ones."""
    name = metric.split("@")[0] if metric else None
    if name in EVERY_HIT:
        return "mostly unjudged: the score says more about the judgments than the configuration"
    rest = ("mostly unjudged: precision and nDCG, which score every hit of the top k, say more about the judgments "
            "than the configuration; ")
    if name is None:
        return rest + "hit and MRR need only the first relevant chunk, recall the relevant chunks known"
    needs = "needs only the first relevant chunk" if name in ("hit", "mrr") else "counts only the relevant chunks known"
    return rest + f"{metric} {needs}"


@dataclass(frozen=True)
class QueryOutcome:
    query: Query
    hits: tuple[Hit, ...]  # the top max(k) hits, best first
    covers: tuple[int | None, ...]  # per hit: the index of the unit it covers, or None when not relevant
    rank: int | None  # 1-based rank of the first relevant hit; None if none in the hits
    score: float | None  # score of that hit
    top_score: float | None
    grades: tuple[int | None, ...] = ()  # per hit: its grade (2 for a label's relevant hit), None when unjudged

    def coverage(self, ks: Sequence[int]) -> dict[str, float]:
        """Return judged@k and hole@k of this query at each k."""
        grades = self.grades or tuple(2 if c is not None else None for c in self.covers)
        values = {}
        for k in ks:
            values[f"judged@{k}"] = judged_at_k(grades, k)
            values[f"hole@{k}"] = 1.0 - values[f"judged@{k}"]
        return values

    def to_json(self, ks: Sequence[int] = ()) -> dict:
        """Return the per-query entry of `python -m rag eval --json`."""
        grades = self.grades or (None,) * len(self.hits)
        return {
            "query": self.query.text,
            "documents": list(self.query.documents),
            "answer": self.query.answer,
            "judgments": len(self.query.judgments),
            "rank": self.rank,
            "score": self.score,
            "top_score": self.top_score,
            **self.coverage(ks),
            "retrieved": [
                {"document_title": h.document_title, "chunk_id": h.chunk_id, "chunk_index": h.chunk_index,
                 "start": h.start, "end": h.end, "score": h.score, "relevant": c is not None, "grade": g}
                for h, c, g in zip(self.hits, self.covers, grades, strict=True)
            ],
        }


@dataclass(frozen=True)
class Evaluation:
    ks: tuple[int, ...]
    metrics: dict[str, float]  # "hit@5", "mrr@10", ...: means over the queries
    per_query: tuple[QueryOutcome, ...] = field(default=())

    def failures(self, k: int) -> list[QueryOutcome]:
        """Return the outcomes whose first relevant hit is not in the top k (worst first: unfound, then by rank)."""
        missed = [o for o in self.per_query if o.rank is None or o.rank > k]
        return sorted(missed, key=lambda o: (o.rank is not None, -(o.rank or 0)))

    @functools.cached_property
    def _values(self) -> np.ndarray:
        names = list(self.metrics)
        rows = [outcome_metrics(o, self.ks) for o in self.per_query]
        return np.array([[row[name] for name in names] for row in rows], dtype=np.float64).reshape(-1, len(names))

    def per_query_values(self) -> np.ndarray:
        """Return one row per query of its metric values, in the order of `metrics`."""
        return self._values.copy()

    def values(self, metric: str) -> np.ndarray:
        """Return one metric's value per query, in query order (for paired tests: rag.evaluation.metrics.paired)."""
        if metric not in self.metrics:
            raise KeyError(f"no metric {metric!r}; measured: {', '.join(self.metrics)}")
        return self._values[:, list(self.metrics).index(metric)].copy()

    @functools.cached_property
    def intervals(self) -> dict[str, tuple[float, float]]:
        """Return each metric's 95 % bootstrap interval over the queries (rag.evaluation.metrics.intervals)."""
        return bootstrap_intervals(self._values, list(self.metrics))

    def to_json(self) -> dict:
        """Return {"queries", "metrics", "intervals", "per_query"} as `python -m rag eval --json` prints it."""
        return {"queries": len(self.per_query), "ks": list(self.ks), "metrics": dict(self.metrics),
                "intervals": {k: list(v) for k, v in self.intervals.items()},
                "per_query": [o.to_json(self.ks) for o in self.per_query]}

    def mostly_unjudged(self, k: int) -> bool:
        """Return whether most of the top k hits carry no judgment (hole@k above MOSTLY_UNJUDGED)."""
        return self.metrics.get(f"hole@{k}", 0.0) > MOSTLY_UNJUDGED


# ---- query sets -----------------------------------------------------------------------------------------


def parse_ks(text: str | Iterable[int]) -> tuple[int, ...]:
    """Return the sorted distinct cut-offs of "1,3,5,10" (or of ints); ValueError when one is not >= 1."""
    items = text.split(",") if isinstance(text, str) else list(text)
    values = set()
    for item in items:
        try:
            value = int(str(item).strip())
        except ValueError:
            raise InvalidSettingsError(f"k must be whole numbers like 1,3,5,10; got {str(item).strip()!r}") from None
        if value < 1:
            raise InvalidSettingsError(f"k must be at least 1; got {value}")
        values.add(value)
    if not values:
        raise InvalidSettingsError("give at least one k, e.g. 1,3,5,10")
    return tuple(sorted(values))


def _from(hit: Hit, query: Query, unit: int) -> bool:
    if query.document_ids:
        return hit.document_id in query.document_ids[unit]
    label = query.documents[unit]
    return label in (hit.document_title, hit.document_id)


def covered_unit(query: Query, hit: Hit) -> int | None:
    """Return the index of the relevant unit that hit covers (a label document, else the applying relevant
    judgment of the highest grade, numbered after the labels), or None if it is not relevant."""
    unit = _label_unit(query, hit)
    if unit is not None or not query.judgments:
        return unit
    applying = [(j.grade, -i) for i, j in enumerate(query.relevant_judgments) if j.applies_to(hit)]
    return len(query.documents) - max(applying)[1] if applying else None


def grade_of(query: Query, hit: Hit, unit: int | None) -> int | None:
    """Return hit's grade: 2 when a document label covers it, else the judgments' (None: unjudged)."""
    if unit is not None and unit < len(query.documents):
        return 2
    return hit_grade(query.counted, hit) if query.judgments else None


def _label_unit(query: Query, hit: Hit) -> int | None:
    for unit in range(len(query.documents)):
        if not _from(hit, query, unit):
            continue
        if query.answer_end is not None and hit.start is not None and hit.end is not None:
            if hit.start < query.answer_end and hit.end > query.answer_start:
                return unit
        elif query.answer is not None:
            if squeezed(query.answer) in squeezed(hit.content):
                return unit
        else:
            return unit
    return None


def first_rank(covers: Sequence[int | None]) -> int | None:
    """Return the 1-based rank of the first relevant hit, or None."""
    return next((i for i, c in enumerate(covers, 1) if c is not None), None)


def hit_at_k(covers: Sequence[int | None], k: int) -> float:
    """Return 1.0 if a relevant hit is among the top k, else 0.0."""
    return float(any(c is not None for c in covers[:k]))


def recall_at_k(covers: Sequence[int | None], units: int, k: int) -> float:
    """Return the fraction of the query's relevant units covered by the top k hits."""
    return len({c for c in covers[:k] if c is not None}) / units if units else 0.0


def precision_at_k(covers: Sequence[int | None], k: int) -> float:
    """Return relevant hits in the top k divided by k (missing hits count as not relevant)."""
    return sum(c is not None for c in covers[:k]) / k


def mrr_at_k(covers: Sequence[int | None], k: int) -> float:
    """Return 1 / rank of the first relevant hit if it is in the top k, else 0.0."""
    rank = first_rank(covers[:k])
    return 1.0 / rank if rank else 0.0


def ndcg_at_k(covers: Sequence[int | None], units: int, k: int, gains: Sequence[float] | None = None) -> float:
    """Return nDCG@k with the unit's gain (default 1) for each hit that covers a unit not covered above it."""
    gains = list(gains) if gains is not None else [1.0] * units
    seen: set[int] = set()
    dcg = 0.0
    for i, unit in enumerate(covers[:k]):
        if unit is not None and unit not in seen:
            seen.add(unit)
            dcg += gains[unit] / math.log2(i + 2)
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(gains, reverse=True)[:k]))
    return dcg / ideal if ideal else 0.0


def outcome_metrics(outcome: QueryOutcome, ks: Sequence[int]) -> dict[str, float]:
    """Return every metric of one query's outcome, with its gains, and judged@k and hole@k, at every k."""
    return query_metrics(outcome.covers, outcome.query.units, ks, gains=outcome.query.gains) | outcome.coverage(ks)


def query_metrics(covers: Sequence[int | None], units: int, ks: Sequence[int],
                  gains: Sequence[float] | None = None) -> dict[str, float]:
    """Return every metric of one query at every k, keyed "hit@5", "mrr@10", ... (gains: per unit, for nDCG)."""
    values: dict[str, float] = {}
    for k in ks:
        values[f"hit@{k}"] = hit_at_k(covers, k)
        values[f"recall@{k}"] = recall_at_k(covers, units, k)
        values[f"precision@{k}"] = precision_at_k(covers, k)
        values[f"mrr@{k}"] = mrr_at_k(covers, k)
        values[f"ndcg@{k}"] = ndcg_at_k(covers, units, k, gains)
    return values


def quality(values: dict[str, float]) -> dict[str, float]:
    """Return values without judged@k and hole@k: the metrics of retrieval quality only."""
    return {name: v for name, v in values.items() if name.split("@")[0] not in COVERAGE}


def metric_names(ks: Sequence[int]) -> list[str]:
    """Return the metric keys in display order: each metric at each k, then judged@k and hole@k."""
    return [f"{m}@{k}" for m in METRICS + COVERAGE for k in ks]


def evaluate(queries: Sequence[Query], results: Sequence[Sequence[Hit]], ks: Sequence[int] = DEFAULT_KS) -> Evaluation:
    """Return the metrics of the hits retrieved for each query (results[i] belongs to queries[i])."""
    if len(queries) != len(results):
        raise ValueError(f"{len(queries)} queries but {len(results)} result lists")
    ks = parse_ks(ks)
    outcomes, totals = [], dict.fromkeys(metric_names(ks), 0.0)
    for query, hits in zip(queries, results, strict=True):
        hits = tuple(hits[: ks[-1]])
        covers = tuple(covered_unit(query, h) for h in hits)
        rank = first_rank(covers)
        outcome = QueryOutcome(query, hits, covers, rank, hits[rank - 1].score if rank else None,
                               hits[0].score if hits else None,
                               tuple(grade_of(query, h, c) for h, c in zip(hits, covers, strict=True)))
        for key, value in outcome_metrics(outcome, ks).items():
            totals[key] += value
        outcomes.append(outcome)
    count = max(len(queries), 1)
    return Evaluation(ks, {key: total / count for key, total in totals.items()}, tuple(outcomes))
