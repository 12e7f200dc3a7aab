"""Command-line commands of the evaluation lab: import-squad, eval (sweep: rag/cli/sweep.py).

    python -m rag import-squad FILE --out DIR [--articles N]
    python -m rag eval QUERIES --collection C [--mode dense|sparse|hybrid] [--fusion SPEC] [--k 1,3,5,10]
                       [--embedder SPEC] [--rerank SPEC [--rerank-depth N]] [--json] [--html FILE]
    python -m rag sweep ...     (rag/cli/sweep.py)
    python -m rag compare ...   (rag/cli/compare.py)

--fusion SPEC: how hybrid fuses its two lists, e.g. convex:w=0.6, rrf, rrf:k=10:w=0.7 or dbsf; without it the
collection's saved fusion, else convex (rag.retrieval.fusion.DEFAULT_FUSION).

Results go to stdout (a table, or one JSON object with --json), progress and notes to stderr.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

from rag import pipeline
from rag.cli.chunk import common
from rag.cli.eval_options import ks_option
from rag.cli.gate import add_gate_options, check_baseline, check_gate_options, run_gate
from rag.cli.rerank import add_rerank_options, reranker_of
from rag.cli.runs import announce
from rag.cli.store_options import (
    add_collection,
    add_embedder,
    add_fusion,
    dump,
    embedder_of,
    store_of,
    store_options,
)
from rag.embeddings import EmbeddingCache, default_cache_dir
from rag.errors import UsageError
from rag.evaluation import (
    DEFAULT_KS,
    METRICS,
    MOSTLY_UNJUDGED,
    QUERIES_FILE,
    Evaluation,
    Funnel,
    FunnelSummary,
    QueryOutcome,
    SearchMode,
    evaluate_collection,
    evaluation_funnels,
    funnel_k,
    import_squad,
    load_query_set,
    summarize,
    tune_fusion,
    unjudged_note,
    version_of,
    write_import,
)
from rag.reports import evaluation_report
from rag.rerank import DEFAULT_DEPTH, Reranker, describe, rerank
from rag.retrieval import CHAT_MAX_TOKENS, SearchRequest
from rag.runs import Evaluated, keep_eval
from rag.words import counted

FAILURES_SHOWN = 10


def cache_of(args: argparse.Namespace, store) -> EmbeddingCache:
    """Return the embedding cache: in memory with --no-cache, else --cache DIR or the folder next to the store."""
    if getattr(args, "no_cache", False):
        return EmbeddingCache()
    return EmbeddingCache(args.cache or default_cache_dir(store))


def run_import_squad(args: argparse.Namespace) -> int:
    result = import_squad(common.read_file(args.file), args.file, args.articles)
    write_import(result, args.out)
    for note in result.notes:
        common.progress(f"note: {note}")
    print(f"{counted(len(result.documents), 'document')} and {counted(len(result.queries), 'query', 'queries')} "
          f"written to {args.out} "
          f"({QUERIES_FILE} + one .txt per article)")
    return 0


def run_eval(args: argparse.Namespace) -> int:
    queries = load_query_set(common.read_file(args.queries), args.queries)
    if args.html and args.tune_fusion:
        raise UsageError("--html reports an evaluation; run it without --tune-fusion.")
    report = common.output_file(args.html) if args.html else None  # checked before the work, not after it
    junit = check_gate_options(args)
    store = store_of(args, read_only=True)
    check_baseline(args, store)
    if args.tune_fusion:
        return run_tune_fusion(args, queries, store)
    started = time.perf_counter()
    searched = pipeline.search_defaults(store, args.collection, SearchRequest(mode=args.mode, fusion=args.fusion))
    mode = SearchMode(searched.mode, searched.fusion)
    embedder = embedder_of(args, store, args.collection) if mode.needs_vectors else None
    reranker = reranker_of(args, store, args.collection)
    mode = replace(mode, rerank=reranker is not None)
    cache = cache_of(args, store)
    version = version_of(queries, args.queries)
    evaluation = evaluate_collection(queries, args.collection, embedder, mode.request(max(args.k), args.rerank_depth),
                                     store=store, cache=cache, ks=args.k, reranker=reranker)
    funnels = funnels_of(evaluation, args.collection, embedder, store, cache, mode, reranker, args.rerank_depth)
    html = evaluation_report(evaluation, collection=args.collection, mode=mode.label,
                             embedder=embedder.model_id if embedder else None, query_set=Path(args.queries).name)
    if report:
        common.write_report(report, html)
    evaluated = Evaluated(args.collection, mode.mode, mode.fusion_used, Path(args.queries).name,
                          reranker.spec if reranker else None, version)
    run_id = announce(keep_eval(store, evaluation, queries, evaluated, embedder=embedder,
                                seconds=time.perf_counter() - started, report=html))
    if args.json:
        data = evaluation.to_json()
        for entry, funnel in zip(data["per_query"], funnels, strict=True):
            entry.update(funnel.to_json())
        gated, code = run_gate(args, evaluation, store, junit, version)
        dump({"collection": args.collection, "mode": mode.mode, "fusion": mode.fusion_used,
              "embedder": embedder.model_id if embedder else None, "rerank": describe(reranker, args.rerank_depth),
              "run": run_id} | data | {"funnel": summarize(funnels, failure_k(evaluation.ks)).to_json(),
                                       "gate": gated})
        return code
    how = f"{embedder.model_id}, " if embedder else ""
    print(f"{counted(len(queries), 'query', 'queries')} on '{args.collection}' ({how}{mode.label} search)\n")
    print_metrics(evaluation)
    print_failures(evaluation)
    print_funnel(summarize(funnels, failure_k(evaluation.ks)))
    return run_gate(args, evaluation, store, junit, version)[1]


def funnels_of(evaluation: Evaluation, collection: str, embedder, store, cache: EmbeddingCache, mode: SearchMode,
               reranker: Reranker | None = None, rerank_depth: int = DEFAULT_DEPTH) -> list[Funnel]:
    """Return each query's funnel at the failures' k (the queries as the evaluation resolved them), with the
    reranker's stage when the evaluation reranked."""
    queries = [o.query for o in evaluation.per_query]
    vectors = cache.embed([q.text for q in queries], embedder, query=True) if mode.needs_vectors else None
    return evaluation_funnels(queries, collection, embedder, mode.request(failure_k(evaluation.ks), rerank_depth),
                              store=store, vectors=vectors, outcomes=evaluation.per_query,
                              reranker=reranker and partial(rerank, reranker=reranker, depth=rerank_depth))


def print_funnel(summary: FunnelSummary) -> None:
    """Print where the answers that did not reach the context were lost, stage by stage."""
    if not summary.misses:
        print(f"\nEvery answer reached the context (top {summary.k}, {CHAT_MAX_TOKENS} tokens).")
        return
    stages = ", ".join(f"{stage} {count}" for stage, count in summary.lost_at.items() if count)
    print(f"\n{summary.misses} of {summary.queries} answers did not reach the context (top {summary.k}, "
          f"{CHAT_MAX_TOKENS} tokens); lost at: {stages} (`--json`: each query's \"stages\" and \"lost_at\").")


def run_tune_fusion(args: argparse.Namespace, queries, store) -> int:
    embedder = embedder_of(args, store, args.collection)
    tuning = tune_fusion(queries, args.collection, embedder, store=store, cache=cache_of(args, store), ks=args.k)
    if args.save:
        store.save_collection_setting(args.collection, "fusion", tuning.best.spec)
    if args.json:
        dump({"collection": args.collection, "embedder": embedder.model_id, "saved": args.save} | tuning.to_json())
        return 0
    rows = [[f"{w:g}", f"{v:.3f}" + (" <- best" if w == tuning.best.weight else "")]
            for w, v in tuning.by_weight.items()]
    common.print_table(rows, ["dense weight", tuning.metric])
    print(f"\nBest on all {tuning.queries} queries: {tuning.best.spec} ({tuning.metric} "
          f"{tuning.by_weight[tuning.best.weight]:.3f}). Cross-validated over {tuning.folds} folds: "
          f"{tuning.metric} {tuning.cv_metric:.3f} (weights chosen per fold: "
          f"{', '.join(f'{w:g}' for w in tuning.cv_weights)}).")
    print(f"Saved as the default fusion of '{args.collection}'." if args.save else
          "Add --save to make it the default fusion of this collection.")
    return 0


def with_interval(evaluation: Evaluation, name: str) -> str:
    """Return a metric as "0.812 ±0.031": the half-width of its 95 % bootstrap interval over the queries."""
    low, high = evaluation.intervals[name]
    return f"{evaluation.metrics[name]:.3f} ±{(high - low) / 2:.3f}"


def print_metrics(evaluation: Evaluation) -> None:
    rows = [[str(k), *(with_interval(evaluation, f"{m}@{k}") for m in METRICS),
             f"{evaluation.metrics[f'hole@{k}']:.3f}" + (" mostly unjudged" if evaluation.mostly_unjudged(k) else "")]
            for k in evaluation.ks]
    common.print_table(rows, ["k", *METRICS, "hole"])
    print("± half the 95 % bootstrap interval over the queries; hole@k: the share of the top k no one has judged "
          "(`--json`: judged@k and hole@k, per question too)")
    if any(evaluation.mostly_unjudged(k) for k in evaluation.ks):
        print(f"hole@k above {MOSTLY_UNJUDGED:g}: {unjudged_note()}")


def failure_k(ks: tuple[int, ...]) -> int:
    """Return the k whose failures are listed: 5 when measured (a usual top_k), else the largest."""
    return funnel_k(ks)


def print_failures(evaluation: Evaluation) -> None:
    k = failure_k(evaluation.ks)
    failures = evaluation.failures(k)
    print(f"\n{len(failures)} of {len(evaluation.per_query)} queries have no relevant chunk in the top {k}"
          + (f"; the first {FAILURES_SHOWN} (all with --json):" if len(failures) > FAILURES_SHOWN else ":"
             if failures else "."))
    if failures:
        common.print_table([failure_row(o, evaluation.ks[-1]) for o in failures[:FAILURES_SHOWN]],
                        ["rank", "score", "top score", "query", "expected", "top hit"])


def failure_row(outcome: QueryOutcome, deepest: int) -> list[str]:
    top = outcome.hits[0].document_title if outcome.hits else ""
    return [str(outcome.rank) if outcome.rank else f">{deepest}", _score(outcome.score), _score(outcome.top_score),
            common.preview(outcome.query.text, 50), common.preview(", ".join(outcome.query.documents), 25),
            common.preview(top, 25)]


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def register(commands: argparse._SubParsersAction) -> None:
    parent = store_options()
    squad = commands.add_parser("import-squad", help="turn SQuAD-style JSON into .txt documents and a query set")
    squad.add_argument("file", metavar="FILE")
    squad.add_argument("--out", required=True, metavar="DIR", help="folder for the .txt files and queries.jsonl")
    squad.add_argument("--articles", type=common.positive_int(1), help="only the first N articles")
    squad.set_defaults(run=run_import_squad)

    evaluate = commands.add_parser("eval", parents=[parent], help="retrieval metrics of a query set on a collection")
    evaluate.add_argument("queries", metavar="QUERIES", help="query set, .jsonl or .csv")
    add_collection(evaluate)
    evaluate.add_argument("--mode", choices=("dense", "sparse", "hybrid"), default=None,
                          help="dense: embeddings; sparse: BM25 keywords; hybrid: both, fused (default: hybrid when "
                          "the collection has keyword vectors, else dense)")
    add_fusion(evaluate)
    evaluate.add_argument("--tune-fusion", action="store_true",
                          help="fit hybrid search's fusion weight on the query set (5-fold cross-validated)")
    evaluate.add_argument("--save", action="store_true", help="with --tune-fusion: save it as the collection's "
                          "default fusion")
    add_embedder(evaluate)
    add_rerank_options(evaluate)
    add_common(evaluate)
    add_gate_options(evaluate)
    evaluate.set_defaults(run=run_eval)


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k", type=ks_option, default=DEFAULT_KS, metavar="K,K,...",
                        help="cut-offs for the metrics, default 1,3,5,10")
    parser.add_argument("--cache", metavar="DIR", help="embedding cache folder (default: next to the store)")
    parser.add_argument("--no-cache", action="store_true", help="keep the embedding cache in memory only")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--html", metavar="FILE", help="also write one self-contained HTML report (tables, charts "
                        "with intervals, the best and its ties, the settings) to FILE")

