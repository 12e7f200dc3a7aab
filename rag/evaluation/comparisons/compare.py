"""A/B comparison: the hits of one query, or the evaluations of one query set, under two settings.

"The same text" across two hit lists (two collections, chunkings, embedders or modes): two hits hold the
same text when they come from the same document and their character spans [start, end) overlap by at least
half of the shorter span (MIN_SHARED). Half, not "any overlap": within one chunking, neighbouring chunks
share their overlap tokens, and a chunk must not count as found because its neighbour was. A 200-token
chunk inside a 400-token chunk of another chunking is the same text; a chunk straddling two larger ones is
the same text as the one holding most of it (or both, if both hold half). Hits without offsets (foreign
collections) are the same text when their chunk ids match or their whitespace-normalised contents do.

Rank shifts are always "rank in B minus rank in A": negative = B ranks that text higher (better). A hit's
counterpart is the best-ranked hit of the other list holding the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rag import pipeline
from rag.embeddings import Embedder, EmbeddingCache
from rag.errors import InvalidSettingsError, QuerySetError
from rag.evaluation.metrics import (
    ALPHA,
    MODE_NAMES,
    Evaluation,
    PairedDifference,
    QueryOutcome,
    SearchMode,
    outcome_metrics,
    paired_difference,
    parse_mode,
    quality,
)
from rag.evaluation.querysets import Query
from rag.retrieval import DEFAULT_FUSION, Hit
from rag.store import Store
from rag.words import counted, plural

MIN_SHARED = 0.5  # share of the shorter span two hits must have in common to hold "the same text"


def same_text(a: Hit, b: Hit, min_shared: float = MIN_SHARED) -> bool:
    """Return whether two hits hold the same text (see the module docstring)."""
    if a.chunk_id and a.chunk_id == b.chunk_id:
        return True
    if a.document_id != b.document_id:
        return False
    if None in (a.start, a.end, b.start, b.end):
        return bool(a.content.strip()) and " ".join(a.content.split()) == " ".join(b.content.split())
    common = min(a.end, b.end) - max(a.start, b.start)
    shorter = min(a.end - a.start, b.end - b.start)
    return common > 0 and common >= min_shared * shorter


@dataclass(frozen=True)
class HitRow:
    rank: int  # 1-based, in its own list
    hit: Hit
    other_ranks: tuple[int, ...]  # ranks of the hits of the other list that hold the same text
    shift: int | None  # rank in B minus rank in A (negative: B ranks the text higher); None when not shared

    @property
    def other_rank(self) -> int | None:
        """Return the best rank of the same text in the other list, or None when it is not there."""
        return self.other_ranks[0] if self.other_ranks else None

    @property
    def shared(self) -> bool:
        return bool(self.other_ranks)


@dataclass(frozen=True)
class HitComparison:
    a: tuple[HitRow, ...]
    b: tuple[HitRow, ...]

    @property
    def shared_a(self) -> list[HitRow]:
        """Return A's hits whose text B also found."""
        return [r for r in self.a if r.shared]

    @property
    def only_a(self) -> list[HitRow]:
        return [r for r in self.a if not r.shared]

    @property
    def only_b(self) -> list[HitRow]:
        return [r for r in self.b if not r.shared]

    def summary(self) -> str:
        """Return the comparison in words: shared hits, moves, hits only one side found."""
        shared = self.shared_a
        up = sum(r.shift < 0 for r in shared)
        down = sum(r.shift > 0 for r in shared)
        return (f"{len(shared)} of A's {counted(len(self.a), 'hit')} {plural(len(shared), 'is', 'are')} also among "
                f"B's {len(self.b)} "
                f"({up} ranked higher in B, {down} lower, {len(shared) - up - down} at the same rank); "
                f"{len(self.only_a)} only in A, {len(self.only_b)} only in B.")


def compare_hits(a: Sequence[Hit], b: Sequence[Hit], min_shared: float = MIN_SHARED) -> HitComparison:
    """Return both hit lists, each hit with the ranks of the same text in the other list (shared, unique, shifts)."""
    pairs = {(i, j) for i, x in enumerate(a, 1) for j, y in enumerate(b, 1) if same_text(x, y, min_shared)}
    rows_a, rows_b = [], []
    for i, hit in enumerate(a, 1):
        ranks = tuple(sorted(j for x, j in pairs if x == i))
        rows_a.append(HitRow(i, hit, ranks, ranks[0] - i if ranks else None))
    for j, hit in enumerate(b, 1):
        ranks = tuple(sorted(i for i, y in pairs if y == j))
        rows_b.append(HitRow(j, hit, ranks, j - ranks[0] if ranks else None))
    return HitComparison(tuple(rows_a), tuple(rows_b))


@dataclass(frozen=True)
class QueryDelta:
    query: str
    line: int
    rank_a: int | None  # rank of the first relevant chunk; None when not within the deepest k
    rank_b: int | None
    score_a: float | None  # that chunk's score
    score_b: float | None
    score_change: float | None  # score_b - score_a; None unless both found with the same score kind
    change: str  # "better", "worse" or "same" (by rank; found beats not found)
    deltas: dict[str, float]  # B minus A of this query's metrics at the deepest common k

    @property
    def rank_change(self) -> int | None:
        """Return rank_b - rank_a when both found the answer (negative: B ranks it higher), else None."""
        return None if self.rank_a is None or self.rank_b is None else self.rank_b - self.rank_a

    def to_json(self) -> dict:
        return {"query": self.query, "line": self.line, "rank_a": self.rank_a, "rank_b": self.rank_b,
                "rank_change": self.rank_change, "score_a": self.score_a, "score_b": self.score_b,
                "score_change": self.score_change, "change": self.change, "deltas": self.deltas}


@dataclass(frozen=True)
class EvaluationComparison:
    ks: tuple[int, ...]  # the cut-offs both evaluations measured
    metrics_a: dict[str, float]
    metrics_b: dict[str, float]
    deltas: dict[str, float]  # B minus A of every common metric
    per_query: tuple[QueryDelta, ...] = field(default=())
    paired: dict[str, PairedDifference] = field(default_factory=dict)  # B minus A per metric, paired over queries

    @property
    def main_metric(self) -> str:
        """Return the metric the verdict is about: MRR at the deepest common k."""
        return f"mrr@{self.ks[-1]}"

    def verdict(self, metric: str | None = None) -> str:
        """Return the paired difference on metric in words, and whether the query set can tell A and B apart."""
        metric = metric or self.main_metric
        test = self.paired[metric]
        if test.too_few_differ:
            return (f"B - A: {test.words(metric)}. {test.few_words().capitalize()} whether A or B is better (a paired "
                    f"test needs 6 or more differing questions at the {ALPHA:.0%} level).")
        if test.tied:
            return (f"B - A: {test.words(metric)}. On these {test.queries} queries A and B are indistinguishable "
                    f"(paired test, {ALPHA:.0%} level).")
        better = "B" if test.difference > 0 else "A"
        return (f"B - A: {test.words(metric)}. {better} is better on these {test.queries} queries; a difference this "
                f"large is unlikely to be chance (paired test, {ALPHA:.0%} level).")

    def count(self, change: str) -> int:
        """Return how many queries changed that way ("better", "worse", "same")."""
        return sum(q.change == change for q in self.per_query)

    def to_json(self) -> dict:
        return {"queries": len(self.per_query), "ks": list(self.ks), "metrics_a": self.metrics_a,
                "metrics_b": self.metrics_b, "deltas": self.deltas,
                "changes": {c: self.count(c) for c in ("better", "worse", "same")},
                "paired": {key: test.to_json() for key, test in self.paired.items()},
                "verdict": self.verdict() if self.paired else None,
                "per_query": [q.to_json() for q in self.per_query]}


def _rank_order(rank: int | None) -> float:
    return float("inf") if rank is None else rank


def _score_kind(outcome: QueryOutcome) -> str | None:
    return outcome.hits[outcome.rank - 1].score_kind if outcome.rank else None


def _query_delta(a: QueryOutcome, b: QueryOutcome, k: int) -> QueryDelta:
    before, after = (quality(outcome_metrics(o, [k])) for o in (a, b))
    change = "same" if a.rank == b.rank else "better" if _rank_order(b.rank) < _rank_order(a.rank) else "worse"
    comparable = a.score is not None and b.score is not None and _score_kind(a) == _score_kind(b)
    return QueryDelta(a.query.text, a.query.line, a.rank, b.rank, a.score, b.score,
                      b.score - a.score if comparable else None, change,
                      {key: after[key] - before[key] for key in before})


def compare_evaluations(a: Evaluation, b: Evaluation) -> EvaluationComparison:
    """Return B minus A: metric deltas overall and per query, rank and score changes; RagError if the queries differ."""
    texts_a = [o.query.text for o in a.per_query]
    if texts_a != [o.query.text for o in b.per_query]:
        raise QuerySetError(f"The two evaluations ran different query sets ({len(texts_a)} and {len(b.per_query)} "
                       "queries, or other texts); compare evaluations of the same query set.")
    ks = tuple(k for k in a.ks if k in b.ks)
    if not ks:
        raise QuerySetError(
            f"The two evaluations share no k (A: {list(a.ks)}, B: {list(b.ks)}); measure both at one k.")
    keys = [key for key in a.metrics if key in b.metrics and int(key.split("@")[1]) in ks]
    per_query = tuple(_query_delta(x, y, ks[-1]) for x, y in zip(a.per_query, b.per_query, strict=True))
    return EvaluationComparison(ks, {k: a.metrics[k] for k in keys}, {k: b.metrics[k] for k in keys},
                                {k: b.metrics[k] - a.metrics[k] for k in keys}, per_query,
                                {k: paired_difference(a.values(k), b.values(k)) for k in keys})


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a collection searched in one mode."""

    collection: str
    mode: SearchMode = field(default_factory=SearchMode)


def parse_side(text: str, fusion: str = DEFAULT_FUSION) -> Side:
    """Return the Side of "COLLECTION[:MODE]"; a suffix that is no mode name belongs to the collection name."""
    name, _, suffix = text.rpartition(":")
    if name and suffix.strip().lower() in MODE_NAMES:
        return Side(name, parse_mode(suffix, fusion))
    if not text.strip():
        raise InvalidSettingsError("A side of the comparison needs a collection name, e.g. docs or docs:hybrid.")
    return Side(text, SearchMode())


def document_difference(store: Store, a: str, b: str, shown: int = 3) -> str:
    """Return a warning in words when collections a and b hold different documents; "" when they hold the same.

    Documents are the same when their ids are (an id is drawn from the file's content), so two versions
    of one file count as different documents.
    """
    if a == b:
        return ""
    documents = [{d.document_id: d.title for d in store.documents(name)} for name in (a, b)]
    if set(documents[0]) == set(documents[1]):
        return ""

    def listed(only: dict[str, str], name: str) -> str:
        titles = sorted(only.values())
        more = f" and {len(titles) - shown} more" if len(titles) > shown else ""
        return f"{counted(len(titles), 'document')} only in '{name}' ({', '.join(titles[:shown])}{more})"

    parts = [listed({i: t for i, t in docs.items() if i not in other}, name)
             for docs, other, name in ((documents[0], documents[1], a), (documents[1], documents[0], b))
             if set(docs) - set(other)]
    return (f"'{a}' and '{b}' hold different documents: {'; '.join(parts)}. A chunk only one side finds may not "
            "exist on the other, so this compares the collections' contents as much as their chunking or search.")


def compare_query(
    query: str, sides: Sequence[Side], top_k: int, *, store: Store, embedders: Sequence[Embedder | None]
) -> HitComparison:
    """Return the top_k hits of query on both sides, compared (embedders: each side's, None for keyword search)."""
    results = [pipeline.search(query, side.collection, side.mode.request(top_k), store=store, embedder=embedder)
               for side, embedder in zip(sides, embedders, strict=True)]
    return compare_hits(*results)


def compare_query_set(
    queries: Sequence[Query], sides: Sequence[Side], ks: Sequence[int], *, store: Store,
    embedders: Sequence[Embedder | None], cache: EmbeddingCache | None = None,
) -> EvaluationComparison:
    """Return both sides' evaluations of queries, compared (RagError when a label or span does not fit)."""
    from rag.evaluation.sweeps import evaluate_collection

    evaluations = [evaluate_collection(queries, side.collection, embedder, side.mode.request(max(ks)), store=store,
                                       cache=cache, ks=ks) for side, embedder in zip(sides, embedders, strict=True)]
    return compare_evaluations(*evaluations)
