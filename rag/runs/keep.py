"""Keep an evaluation or a sweep as a run (rag.runs.records -> rag.runs.db), with its HTML report, for the CLI and the
app alike; what could not be kept is a warning, never an error: the result is shown either way."""

from __future__ import annotations

from collections.abc import Sequence

from rag.embeddings import Embedder
from rag.evaluation.metrics import Evaluation
from rag.evaluation.querysets import Query
from rag.evaluation.sweeps import SweepResult
from rag.reports import evaluation_report, sweep_report
from rag.runs.db import RunLog, runs_path_of
from rag.runs.records import Evaluated, eval_run, sweep_run
from rag.store import Store

Kept = tuple[int | None, str | None]  # (run id, None) or (None, one warning line)


def _prompts(embedder: Embedder | None) -> tuple[str, str]:
    return (embedder.query_prompt, embedder.document_prompt) if embedder else ("", "")


def keep_eval(store: Store, evaluation: Evaluation, queries: Sequence[Query], of: Evaluated, *,
              embedder: Embedder | None, seconds: float, report: str | None = None) -> Kept:
    """Keep an evaluation of a collection (its chunking read from the collection) with its HTML report."""
    sizes = {(d.chunk_size, d.overlap, d.strategy) for d in store.documents(of.collection)}
    size, overlap, strategy = next(iter(sizes)) if len(sizes) == 1 else (None, None, None)
    model = embedder.model_id if embedder else None
    record = eval_run(evaluation, queries, of, embedder=model, prompts=_prompts(embedder),
                      chunking={"chunk_size": size, "overlap": overlap, "strategy": strategy}, seconds=seconds)
    if report is None:
        report = evaluation_report(evaluation, collection=of.collection, mode=of.label, embedder=model,
                                   query_set=of.query_set)
    return RunLog(runs_path_of(store)).save_quietly(*record, report)


def keep_sweep(store: Store, result: SweepResult, queries: Sequence[Query], *, embedder: Embedder, query_set: str,
               seconds: float | None = None, report: str | None = None, query_version: dict | None = None,
               inputs: dict | None = None) -> Kept:
    """Keep a sweep (every row, the best marked) with its HTML report; its seconds are the sweep's own wall time
    (SweepResult.seconds, as its report says), `seconds` only for a result that lacks it; inputs: the app's
    inputs it ran on (rag.runs.records.sweep_run), found again by last_sweep."""
    total = result.seconds if result.seconds is not None else seconds
    record = sweep_run(result, queries, query_set=query_set, seconds=total or 0.0, prompts=_prompts(embedder),
                       query_version=query_version, inputs=inputs)
    return RunLog(runs_path_of(store)).save_quietly(*record, report if report is not None else sweep_report(result))


def last_sweep(store: Store, key: Sequence | None = None) -> dict | None:
    """Return the newest kept sweep the app ran (its settings' "inputs") on inputs of that key (None: on any), or
    None; RunsDatabaseError when the runs file cannot be read."""
    for run in RunLog(runs_path_of(store)).runs():  # newest first
        inputs = run["settings"]["inputs"]
        if run["kind"] == "sweep" and isinstance(inputs, dict) and (key is None or inputs.get("key") == list(key)):
            return run
    return None
