"""A run as it is kept: an evaluation or a sweep turned into plain JSON, and any kept JSON read back.

A run is {"schema", "kind" ("eval" | "sweep"), "created_at", "seconds", "settings", "rows", "best"}; each row is one
configuration searched in one mode, with its settings (chunk_size, overlap, strategy, mode, fusion, rerank,
collection), metrics and intervals, its funnel (misses per stage; null if not traced), and beside it, kept apart,
one outcome per question ({"query", "line", "documents", "rank", "score", "score_kind", "values": {metric:
value}}). Everything is read through `upgrade`, which fills what an older schema lacked with what that schema
meant, so a run stays readable (listed, compared) after the project changes its defaults or adds a field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rag.evaluation.metrics import Evaluation
from rag.evaluation.querysets import Query, query_set_hash, version_of
from rag.evaluation.sweeps import ConfigResult, SweepResult, is_sweep_collection

__all__ = ["Evaluated", "eval_run", "outcomes_of", "query_set_hash", "sweep_row", "sweep_run", "upgrade",
           "upgrade_outcome"]

SCHEMA = 1  # 0: before "rerank", "prompts", "query_hash" and "seconds" were kept
ROW_DEFAULTS: dict[str, Any] = {"label": "", "chunk_size": None, "overlap": None, "strategy": None,
                                "chunk_headers": False, "child_size": 0, "mode": "dense",
                                "fusion": None, "rerank": None, "collection": None, "chunks": None,
                                "mean_tokens": None, "metrics": {}, "intervals": {}, "funnel": None}
SETTINGS_DEFAULTS: dict[str, Any] = {"collection": None, "embedder": None, "prompts": {"query": "", "document": ""},
                                     "query_set": "", "query_hash": None, "queries": 0, "documents": [], "ks": [],
                                     "metric": None, "query_version": None, "inputs": None}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def outcomes_of(evaluation: Evaluation) -> list[dict]:
    """Return one kept outcome per question: rank, score and every metric's value (for paired comparisons)."""
    names, values = list(evaluation.metrics), evaluation.per_query_values()
    outcomes = []
    for outcome, row in zip(evaluation.per_query, values, strict=True):
        hit = outcome.hits[outcome.rank - 1] if outcome.rank else None
        outcomes.append({"query": outcome.query.text, "line": outcome.query.line,
                         "documents": list(outcome.query.documents), "rank": outcome.rank, "score": outcome.score,
                         "score_kind": hit.score_kind if hit else None,
                         "values": {name: float(v) for name, v in zip(names, row, strict=True)}})
    return outcomes


def _metrics(evaluation: Evaluation) -> dict:
    return {"metrics": dict(evaluation.metrics),
            "intervals": {k: list(v) for k, v in evaluation.intervals.items()}}


@dataclass(frozen=True)
class Evaluated:
    """What one evaluation of a collection searched, as its kept run names it."""

    collection: str
    mode: str  # "dense" | "sparse" | "hybrid"
    fusion: str | None  # the fusion of hybrid search; None for the other modes
    query_set: str  # the query set's file name
    rerank: str | None = None  # the reranker's spec; None when nothing reranked
    query_version: dict | None = None  # the query set's version (rag.evaluation.querysets.version_of)

    @property
    def label(self) -> str:
        """Return the row's label: "'documents', hybrid-rrf search"."""
        mode = f"{self.mode}-{self.fusion}" if self.mode == "hybrid" and self.fusion else self.mode
        return f"'{self.collection}', {mode} search"


def eval_run(evaluation: Evaluation, queries: Sequence[Query], of: Evaluated, *, embedder: str | None,
             prompts: tuple[str, str], chunking: dict, seconds: float) -> tuple[dict, list[list[dict]]]:
    """Return (run, outcomes per row) of one evaluation of a collection; chunking: its chunk_size, overlap and
    strategy (None where its documents differ)."""
    row = {"label": of.label, **chunking, "mode": of.mode, "fusion": of.fusion, "rerank": of.rerank,
           "collection": of.collection, **_metrics(evaluation)}
    run = {"schema": SCHEMA, "kind": "eval", "created_at": _now(), "seconds": round(seconds, 3),
           "settings": _settings(queries, of.query_set, embedder, prompts, evaluation.ks, of.collection, [],
                                 of.query_version),
           "rows": [row], "best": 0}
    return run, [outcomes_of(evaluation)]


def sweep_run(result: SweepResult, queries: Sequence[Query], *, query_set: str, prompts: tuple[str, str],
              seconds: float, query_version: dict | None = None, inputs: dict | None = None
              ) -> tuple[dict, list[list[dict]]]:
    """Return (run, outcomes per row) of a sweep: one row per configuration and mode, the best marked; inputs: what
    the app ran it on ({"key", "words", "params"}: the Evaluate page's inputs, so it can show the run again after a
    restart), None from the CLI."""
    best = result.best()
    rows = [sweep_row(row, result) for row in result.results]
    run = {"schema": SCHEMA, "kind": "sweep", "created_at": result.created_at, "seconds": round(seconds, 3),
           "settings": _settings(queries, query_set, result.embedder, prompts, result.ks, result.collection,
                                 result.documents, query_version) | {"inputs": inputs},
           "rows": rows, "best": next((i for i, r in enumerate(result.results) if r is best), None)}
    return run, [outcomes_of(row.evaluation) for row in result.results]


def sweep_row(row: ConfigResult, result: SweepResult) -> dict:
    """Return a row of result as it is kept: its settings (chunking, mode, fusion, rerank: the spec of the
    sweep's reranker on a "+rerank" row, else None; collection), metrics, and its funnel (the misses per stage, as
    `rag sweep --json` gives it; None when it was not traced)."""
    rerank = result.rerank["spec"] if result.rerank and row.mode.rerank else None
    return {"label": row.short, "chunk_size": row.config.chunk_size, "overlap": row.config.overlap,
            "strategy": row.config.strategy, "chunk_headers": row.config.chunk_headers,
            "child_size": row.config.child_size, "mode": row.mode.mode, "fusion": row.mode.fusion_used,
            "rerank": rerank, "collection": row.collection, "chunks": row.chunks,
            "mean_tokens": round(row.mean_tokens, 1), **_metrics(row.evaluation),
            "funnel": row.funnel.to_json() if row.funnel else None}


def _settings(queries: Sequence[Query], query_set: str, embedder: str | None, prompts: tuple[str, str],
              ks: Sequence[int], collection: str | None, documents: list[str], version: dict | None) -> dict:
    """Return a run's settings; "query_version": the query set's version (rag.evaluation.querysets.versions)."""
    return {"collection": collection, "embedder": embedder, "prompts": {"query": prompts[0], "document": prompts[1]},
            "query_set": query_set, "query_hash": query_set_hash(queries), "queries": len(queries),
            "documents": list(documents), "ks": list(ks), "metric": f"mrr@{ks[-1]}",
            "query_version": version or version_of(queries)}


def upgrade(run: dict) -> dict:
    """Return a kept run in today's shape: every field an older schema lacked gets what that schema meant."""
    run = dict(run)
    run.setdefault("kind", "eval")
    run.setdefault("created_at", "")
    run.setdefault("seconds", None)
    settings = {**SETTINGS_DEFAULTS, **(run.get("settings") or {})}
    rows = [{**ROW_DEFAULTS, **row} for row in run.get("rows") or []]
    if not settings["ks"] and rows:
        settings["ks"] = sorted({int(name.split("@")[1]) for name in rows[0]["metrics"] if "@" in name})
    if settings["metric"] is None and settings["ks"]:
        settings["metric"] = f"mrr@{settings['ks'][-1]}"
    for row in rows:
        row["label"] = row["label"] or _row_label(row)
    if run["kind"] == "sweep" and settings["collection"] is None:  # kept before a sweep kept its collection: a row
        stored = [row["collection"] for row in rows if row["collection"] and not is_sweep_collection(row["collection"])]
        settings["collection"] = stored[0] if stored else None  # that searched it as stored names it
    best = run.get("best")
    run.update(settings=settings, rows=rows, best=best if isinstance(best, int) and 0 <= best < len(rows) else
               _best_index(rows, settings["metric"]))
    return run


def upgrade_outcome(outcome: dict) -> dict:
    """Return a kept question outcome with every field present (older runs lack score_kind or line)."""
    return {"query": "", "line": 0, "documents": [], "rank": None, "score": None, "score_kind": None,
            "values": {}} | outcome


def _row_label(row: dict) -> str:
    mode = f"hybrid-{row['fusion']}" if row["mode"] == "hybrid" and row["fusion"] else row["mode"]
    size = f"{row['chunk_size']}/{row['overlap']} " if row["chunk_size"] is not None else ""
    return f"{size}{mode}"


def _best_index(rows: list[dict], metric: str | None) -> int | None:
    scored = [(row["metrics"].get(metric, float("-inf")), -i) for i, row in enumerate(rows)]
    return -max(scored)[1] if scored else None
