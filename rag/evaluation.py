"""Query sets (what each query should find) and retrieval metrics judged by character spans.

A query set is JSONL or CSV, one query per line:

    {"query": "...", "document": "<title>", "answer": "<text>", "answer_start": <offset in the document's text>}

`answer` and `answer_start` are optional; `"documents": [...]` names several relevant documents (CSV: one
cell, titles separated by "|"). A label names a document by its title (the file name) or its id.

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
  ndcg@k       binary gains, one per newly covered unit, over the ideal min(k, units) gains; a chunking
               is not rewarded for cutting one answer into more chunks
The set's metrics are the means over its queries. Search once with the largest k, then cut.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath

from rag.errors import QuerySetError
from rag.store import Hit

DEFAULT_KS = (1, 3, 5, 10)
METRICS = ("hit", "recall", "precision", "mrr", "ndcg")
CSV_LIST_SEPARATOR = "|"


@dataclass(frozen=True)
class Query:
    text: str
    documents: tuple[str, ...]  # labels: titles or ids, as written in the query set
    answer: str | None = None
    answer_start: int | None = None
    line: int = 0  # 1-based line of the query set (CSV: counting the header)
    document_ids: tuple[frozenset[str], ...] = ()  # per label, the ids it names (after resolve_labels)

    @property
    def answer_end(self) -> int | None:
        """Return the offset just after the answer span, or None without a span."""
        if self.answer_start is None or self.answer is None:
            return None
        return self.answer_start + len(self.answer)


@dataclass(frozen=True)
class QueryOutcome:
    query: Query
    hits: tuple[Hit, ...]  # the top max(k) hits, best first
    covers: tuple[int | None, ...]  # per hit: the index of the unit it covers, or None when not relevant
    rank: int | None  # 1-based rank of the first relevant hit; None if none in the hits
    score: float | None  # score of that hit
    top_score: float | None

    def to_json(self) -> dict:
        """Return the per-query entry of `python -m rag eval --json`."""
        return {
            "query": self.query.text,
            "documents": list(self.query.documents),
            "answer": self.query.answer,
            "rank": self.rank,
            "score": self.score,
            "top_score": self.top_score,
            "retrieved": [
                {"document_title": h.document_title, "chunk_index": h.chunk_index, "score": h.score,
                 "relevant": c is not None}
                for h, c in zip(self.hits, self.covers, strict=True)
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

    def to_json(self) -> dict:
        """Return {"queries", "metrics", "per_query"} as `python -m rag eval --json` prints it."""
        return {"queries": len(self.per_query), "ks": list(self.ks), "metrics": dict(self.metrics),
                "per_query": [o.to_json() for o in self.per_query]}


# ---- query sets -----------------------------------------------------------------------------------------


def parse_ks(text: str | Iterable[int]) -> tuple[int, ...]:
    """Return the sorted distinct cut-offs of "1,3,5,10" (or of ints); ValueError when one is not >= 1."""
    items = text.split(",") if isinstance(text, str) else list(text)
    values = set()
    for item in items:
        try:
            value = int(str(item).strip())
        except ValueError:
            raise ValueError(f"k must be whole numbers like 1,3,5,10; got {str(item).strip()!r}") from None
        if value < 1:
            raise ValueError(f"k must be at least 1; got {value}")
        values.add(value)
    if not values:
        raise ValueError("give at least one k, e.g. 1,3,5,10")
    return tuple(sorted(values))


def load_query_set(data: bytes | str, filename: str = "queries.jsonl") -> list[Query]:
    """Return the queries of a JSONL or CSV query set; QuerySetError names the line and what is wrong."""
    name = PurePath(filename).name or "queries"
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise QuerySetError(f"{name} is not UTF-8 text (byte {error.start}). Save it as UTF-8.") from None
    if name.lower().endswith(".csv"):
        queries = [_query(row, name, line) for line, row in _csv_rows(data, name)]
    else:
        queries = [_query(_json_object(text, name, line), name, line)
                   for line, text in enumerate(data.splitlines(), 1) if text.strip()]
    if not queries:
        raise QuerySetError(f"{name} holds no queries. Write one JSON object per line, e.g. "
                            '{"query": "...", "document": "report.pdf"}.')
    return queries


def _json_object(text: str, name: str, line: int) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise QuerySetError(f"{name} line {line}: not valid JSON ({error.msg} at column {error.colno}). "
                            "Each line must be one JSON object.") from None
    if not isinstance(value, dict):
        raise QuerySetError(f"{name} line {line}: expected a JSON object {{...}}, got {type(value).__name__}.")
    return value


def _csv_rows(text: str, name: str) -> list[tuple[int, dict]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "query" not in [f.strip() for f in reader.fieldnames]:
        raise QuerySetError(f"{name}: the first line must be a header with a 'query' column "
                            "(and document, answer, answer_start or documents).")
    rows = []
    for row in reader:
        clean = {k.strip(): (v or "").strip() for k, v in row.items() if k and isinstance(v, str | None)}
        if not any(clean.values()):
            continue
        if clean.get("documents"):
            clean["documents"] = [d.strip() for d in clean["documents"].split(CSV_LIST_SEPARATOR) if d.strip()]
        rows.append((reader.line_num, {k: v for k, v in clean.items() if v not in ("", [])}))
    return rows


def _query(row: dict, name: str, line: int) -> Query:
    """Return the Query of one parsed line, or raise QuerySetError saying what is wrong with it."""
    where = f"{name} line {line}"
    text = row.get("query")
    if not isinstance(text, str) or not text.strip():
        raise QuerySetError(f"{where}: 'query' is missing or empty. Give the question as text.")
    documents = _labels(row, where)
    answer = row.get("answer")
    if answer is not None and (not isinstance(answer, str) or not answer.strip()):
        raise QuerySetError(f"{where}: 'answer' must be non-empty text; leave it out if there is none.")
    start = row.get("answer_start")
    if start is not None:
        start = _offset(start, where)
        if answer is None:
            raise QuerySetError(f"{where}: 'answer_start' needs 'answer' too (the span is answer_start to "
                                "answer_start + len(answer)).")
        if len(documents) != 1:
            raise QuerySetError(f"{where}: 'answer_start' is an offset in one document's text, but the line "
                                f"names {len(documents)} documents. Name one, or leave out answer_start.")
    return Query(text.strip(), documents, answer, start, line)


def _labels(row: dict, where: str) -> tuple[str, ...]:
    labels = []
    if "document" in row:
        labels.append(row["document"])
    many = row.get("documents", [])
    if not isinstance(many, list):
        raise QuerySetError(f"{where}: 'documents' must be a list of titles, e.g. [\"a.pdf\", \"b.pdf\"].")
    labels.extend(many)
    if not labels:
        raise QuerySetError(f"{where}: no 'document' (or 'documents'): say which document should be found.")
    if not all(isinstance(label, str) and label.strip() for label in labels):
        raise QuerySetError(f"{where}: a document must be named by its title (text), e.g. \"report.pdf\".")
    return tuple(dict.fromkeys(label.strip() for label in labels))


def _offset(value: object, where: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise QuerySetError(f"{where}: 'answer_start' must be a whole number >= 0 (a character offset), "
                            f"got {value!r}.")
    return value


def resolve_labels(queries: Sequence[Query], documents: Iterable[tuple[str, str]], where: str) -> list[Query]:
    """Return queries with each label resolved to document ids among documents ((id, title) pairs).

    A label matches a title or an id. QuerySetError lists the labels found nowhere, with their lines.
    """
    ids_by_label: dict[str, set[str]] = {}
    for document_id, title in documents:
        ids_by_label.setdefault(title, set()).add(document_id)
        ids_by_label.setdefault(document_id, set()).add(document_id)
    missing: dict[str, list[int]] = {}
    for query in queries:
        for label in query.documents:
            if label not in ids_by_label:
                missing.setdefault(label, []).append(query.line)
    if missing:
        shown = "; ".join(f"'{label}' (line{'s' if len(lines) > 1 else ''} {_lines(lines)})"
                          for label, lines in list(missing.items())[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        titles = sorted({t for t, ids in ids_by_label.items() if t not in ids}) or ["nothing"]
        raise QuerySetError(
            f"{len(missing)} document(s) named in the query set are not in {where}: {shown}{more}. "
            f"It holds: {', '.join(titles[:10])}{' …' if len(titles) > 10 else ''}. "
            "Add those documents, or fix the titles in the query set."
        )
    return [replace(q, document_ids=tuple(frozenset(ids_by_label[d]) for d in q.documents)) for q in queries]


def _lines(lines: list[int]) -> str:
    return ", ".join(map(str, lines[:5])) + (" …" if len(lines) > 5 else "")


def check_spans(queries: Sequence[Query], texts: dict[str, str]) -> None:
    """Raise QuerySetError when an answer span does not hold its answer in texts (document id -> text)."""
    wrong = []
    for query in queries:
        if query.answer_end is None or not query.document_ids:
            continue
        for document_id in query.document_ids[0]:
            found = texts.get(document_id)
            if found is not None and _norm(found[query.answer_start : query.answer_end]) != _norm(query.answer):
                wrong.append(f"line {query.line}: '{query.documents[0]}'[{query.answer_start}:{query.answer_end}] "
                             f"is {found[query.answer_start : query.answer_end][:40]!r}, not {query.answer[:40]!r}")
    if wrong:
        raise QuerySetError(f"{len(wrong)} answer span(s) do not point at their answer: {'; '.join(wrong[:3])}"
                            f"{' …' if len(wrong) > 3 else ''}. answer_start must be the offset in the document's "
                            "text as RAG Lab reads it; fix the offsets or leave answer_start out.")


# ---- relevance and metrics ------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.split())


def _from(hit: Hit, query: Query, unit: int) -> bool:
    if query.document_ids:
        return hit.document_id in query.document_ids[unit]
    label = query.documents[unit]
    return label in (hit.document_title, hit.document_id)


def covered_unit(query: Query, hit: Hit) -> int | None:
    """Return the index of the relevant unit (label document) that hit covers, or None if it is not relevant."""
    for unit in range(len(query.documents)):
        if not _from(hit, query, unit):
            continue
        if query.answer_end is not None and hit.start is not None and hit.end is not None:
            if hit.start < query.answer_end and hit.end > query.answer_start:
                return unit
        elif query.answer is not None:
            if _norm(query.answer) in _norm(hit.content):
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


def ndcg_at_k(covers: Sequence[int | None], units: int, k: int) -> float:
    """Return nDCG@k with a gain of 1 for each hit that covers a unit not covered above it."""
    seen: set[int] = set()
    dcg = 0.0
    for i, unit in enumerate(covers[:k]):
        if unit is not None and unit not in seen:
            seen.add(unit)
            dcg += 1.0 / math.log2(i + 2)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, units)))
    return dcg / ideal if ideal else 0.0


def query_metrics(covers: Sequence[int | None], units: int, ks: Sequence[int]) -> dict[str, float]:
    """Return every metric of one query at every k, keyed "hit@5", "mrr@10", ..."""
    values: dict[str, float] = {}
    for k in ks:
        values[f"hit@{k}"] = hit_at_k(covers, k)
        values[f"recall@{k}"] = recall_at_k(covers, units, k)
        values[f"precision@{k}"] = precision_at_k(covers, k)
        values[f"mrr@{k}"] = mrr_at_k(covers, k)
        values[f"ndcg@{k}"] = ndcg_at_k(covers, units, k)
    return values


def metric_names(ks: Sequence[int]) -> list[str]:
    """Return the metric keys in display order: each metric at each k."""
    return [f"{m}@{k}" for m in METRICS for k in ks]


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
        for key, value in query_metrics(covers, len(query.documents), ks).items():
            totals[key] += value
        outcomes.append(QueryOutcome(query, hits, covers, rank, hits[rank - 1].score if rank else None,
                                     hits[0].score if hits else None))
    count = max(len(queries), 1)
    return Evaluation(ks, {key: total / count for key, total in totals.items()}, tuple(outcomes))
