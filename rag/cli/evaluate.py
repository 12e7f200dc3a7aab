"""Command-line commands of the evaluation lab: import-squad, eval, sweep.

    python -m rag import-squad FILE --out DIR [--articles N]
    python -m rag eval QUERIES --collection C [--mode dense|sparse|hybrid] [--fusion SPEC] [--k 1,3,5,10]
                       [--embedder SPEC] [--rerank SPEC [--rerank-depth N]] [--json] [--html FILE]
    python -m rag sweep DOCS... | --collection C --queries Q --chunk-size 200,400,800 --overlap 0,50,100 [--mode ...]
                        [--fusion SPEC] [--rerank SPEC [--rerank-depth N] [--rerank-modes off,on]] [--k ...]
                        [--json] [--html FILE] [--apply-best COLLECTION]
    python -m rag compare ...   (rag/cli/compare.py)

--fusion SPEC: how hybrid fuses its two lists, e.g. convex:w=0.6, rrf, rrf:k=10:w=0.7 or dbsf; without it the
collection's saved fusion, else convex (rag.store.fusion.DEFAULT_FUSION).

Results go to stdout (a table, or one JSON object with --json), progress and notes to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

from rag import chunking, pipeline
from rag.chunking import DEFAULT_CHUNK_HEADERS
from rag.cli.chunk import common
from rag.cli.eval_options import headers_option, ks_option, modes_option, sizes_option
from rag.cli.gate import add_gate_options, check_baseline, check_gate_options, run_gate
from rag.cli.rerank import add_rerank_options, reranker_of, with_rerank
from rag.cli.runs import announce, apply_best, check_apply_target
from rag.cli.store import (
    add_collection,
    add_embedder,
    add_fusion,
    dump,
    embedder_of,
    given,
    store_of,
    store_options,
)
from rag.context import CHAT_MAX_TOKENS
from rag.documents import SAMPLE_SUFFIXES, SourceFile
from rag.embeddings import EmbeddingCache, default_cache_dir, get_embedder
from rag.errors import UsageError
from rag.evaluation import (
    DEFAULT_KS,
    METRICS,
    MODE_NAMES,
    QUERIES_FILE,
    Evaluation,
    Funnel,
    FunnelSummary,
    QueryOutcome,
    SearchMode,
    SweepProgress,
    SweepResult,
    collection_documents,
    effect_words,
    evaluate_collection,
    evaluation_funnels,
    funnel_k,
    import_squad,
    load_documents,
    load_query_set,
    parse_chunk_sizes,
    parse_grid,
    parse_modes,
    parse_overlaps,
    run_sweep,
    summarize,
    trace_sweep,
    tune_fusion,
    version_of,
    write_import,
)
from rag.reports import evaluation_report, sweep_report
from rag.rerank import DEFAULT_DEPTH, Reranker, describe, rerank
from rag.runs import keep_eval, keep_sweep
from rag.store import DEFAULT_FUSION

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
    print(f"{len(result.documents)} documents and {len(result.queries)} queries written to {args.out} "
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
    mode = SearchMode(*pipeline.search_defaults(store, args.collection, args.mode, args.fusion))
    embedder = embedder_of(args, store, args.collection) if mode.needs_vectors else None
    reranker = reranker_of(args, store, args.collection)
    mode = replace(mode, rerank=reranker is not None)
    cache = cache_of(args, store)
    evaluation = evaluate_collection(queries, args.collection, embedder, store=store, cache=cache, ks=args.k,
                                     mode=mode, reranker=reranker, rerank_depth=args.rerank_depth)
    funnels = funnels_of(evaluation, args.collection, embedder, store, cache, mode, reranker, args.rerank_depth)
    html = evaluation_report(evaluation, collection=args.collection, mode=mode.label,
                             embedder=embedder.model_id if embedder else None, query_set=Path(args.queries).name)
    if report:
        common.write_report(report, html)
    run_id = announce(keep_eval(store, evaluation, queries, collection=args.collection, mode=mode.mode,
                                fusion=mode.fusion_used, embedder=embedder, query_set=Path(args.queries).name,
                                seconds=time.perf_counter() - started, report=html,
                                rerank=reranker.spec if reranker else None,
                                query_version=version_of(queries, args.queries)))
    if args.json:
        data = evaluation.to_json()
        for entry, funnel in zip(data["per_query"], funnels, strict=True):
            entry.update(funnel.to_json())
        gated, code = run_gate(args, evaluation, store, junit)
        dump({"collection": args.collection, "mode": mode.mode, "fusion": mode.fusion_used,
              "embedder": embedder.model_id if embedder else None, "rerank": describe(reranker, args.rerank_depth),
              "run": run_id} | data | {"funnel": summarize(funnels, failure_k(evaluation.ks)).to_json(),
                                       "gate": gated})
        return code
    how = f"{embedder.model_id}, " if embedder else ""
    print(f"{len(queries)} queries on '{args.collection}' ({how}{mode.label} search)\n")
    print_metrics(evaluation)
    print_failures(evaluation)
    print_funnel(summarize(funnels, failure_k(evaluation.ks)))
    return run_gate(args, evaluation, store, junit)[1]


def funnels_of(evaluation: Evaluation, collection: str, embedder, store, cache: EmbeddingCache, mode: SearchMode,
               reranker: Reranker | None = None, rerank_depth: int = DEFAULT_DEPTH) -> list[Funnel]:
    """Return each query's funnel at the failures' k (the queries as the evaluation resolved them), with the
    reranker's stage when the evaluation reranked."""
    queries = [o.query for o in evaluation.per_query]
    vectors = cache.embed([q.text for q in queries], embedder, query=True) if mode.needs_vectors else None
    return evaluation_funnels(queries, collection, embedder, store=store, vectors=vectors, mode=mode,
                              k=failure_k(evaluation.ks), outcomes=evaluation.per_query,
                              reranker=reranker and partial(rerank, reranker=reranker, depth=rerank_depth),
                              rerank_depth=rerank_depth)


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


def document_paths(given: list[str]) -> list[Path]:
    """Return the files named, a folder standing for its PDF, Markdown and text files (not recursive)."""
    paths: list[Path] = []
    for name in given:
        path = Path(name)
        if path.is_dir():
            inside = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in SAMPLE_SUFFIXES)
            if not inside:
                raise UsageError(f"{name} holds no PDF, Markdown or text files.")
            paths.extend(inside)
        else:
            paths.append(path)
    return paths


class SweepReporter:
    """Progress on stderr: one line per stage with the time left (once estimated), e.g. "[2/6] chunk_size 200,
    overlap 50: embedding 40/226 · about 2 min left"; embedding progress is rewritten in place on a terminal,
    elsewhere printed when a configuration's embedding ends."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def __call__(self, event: SweepProgress) -> None:
        line = f"[{event.config_index + 1}/{event.configs}] {event.status}" if event.config else event.status
        if event.stage == "embedding" or (event.stage == "queries" and event.done):  # slices of one stage
            if event.total == 0:
                return
            if self.tty:
                print(f"\r\033[K{line}", end="", file=sys.stderr, flush=True)
            elif event.done == event.total:
                print(line, file=sys.stderr, flush=True)
            return
        print(("\r\033[K" if self.tty else "") + line, file=sys.stderr, flush=True)


def run_sweep_command(args: argparse.Namespace) -> int:
    report = common.output_file(args.html) if args.html else None  # checked before the sweep, not after it
    configs, skipped = parse_grid(args.chunk_size, args.overlap, args.strategy, args.chunk_headers, args.child_size)
    for note in skipped:
        common.progress(f"note: {note}")
    if bool(args.documents) == bool(args.collection):
        raise UsageError("Give the documents to sweep (files or folders) or --collection C, one of the two.")
    files = [SourceFile(p.name, common.read_file(str(p))) for p in document_paths(args.documents)]  # all or none
    queries = load_query_set(common.read_file(args.queries), args.queries)
    store = store_of(args)
    cache, reranker = cache_of(args, store), reranker_of(args)
    documents = collection_documents(store, args.collection, cache) if args.collection else load_documents(files)
    embedder = get_embedder(args.embedder)
    if args.apply_best:
        check_apply_target(store, args.apply_best, embedder)
    modes = with_rerank(parse_modes(args.mode, args.fusion or DEFAULT_FUSION), args)
    result = run_sweep(documents, queries, configs, embedder, store=store, cache=cache, ks=args.k,
                       progress=SweepReporter(), skipped=skipped, modes=modes, reranker=reranker,
                       rerank_depth=args.rerank_depth, collection=args.collection)
    for note in result.skipped[len(skipped):]:  # whether the collection was searched as stored
        common.progress(f"note: {note}")
    common.progress(f"tracing the misses of {len(result.results)} rows through the stages (why was it missed?)")
    trace_sweep(result, store=store, embedder=embedder, cache=cache, reranker=reranker, rerank_depth=args.rerank_depth)
    html = sweep_report(result)
    if report:
        common.write_report(report, html)
    run_id = announce(keep_sweep(store, result, queries, embedder=embedder, query_set=Path(args.queries).name,
                                 report=html, query_version=version_of(queries, args.queries)))
    applied = (apply_best(store, result, args.apply_best, embedder, run_id, documents, cache) if args.apply_best
               else None)
    if args.json:
        dump(result.to_json() | {"run": run_id, "applied": applied.to_json() if applied else None})
    else:
        print_sweep(result)
        if applied:
            print(f"\n{applied.summary()}")
    return 1 if applied and applied.failed else 0


def print_sweep(result: SweepResult) -> None:
    deepest = result.ks[-1]
    metrics = [f"hit@{k}" for k in result.ks] + [f"{m}@{deepest}" for m in ("recall", "mrr", "ndcg")]
    hole = f"hole@{deepest}"
    headed = any(r.config.chunk_headers for r in result.results)  # a column only when headers were swept
    kids = any(r.config.child_size for r in result.results)  # ... or child sizes
    rows = [[str(r.config.chunk_size), str(r.config.overlap), *(["on" if r.config.chunk_headers else "off"] * headed),
             *([str(r.config.child_size)] * kids),
             r.mode.label, str(r.chunks), f"{r.mean_tokens:.0f}",
             *(with_interval(r.evaluation, m) for m in metrics),
             f"{r.metrics[hole]:.2f}" + (" mostly unjudged" if r.evaluation.mostly_unjudged(deepest) else ""),
             f"{r.total_seconds:.1f} s" + (" (reused)" if r.reused else ""), place.mark]
            for place in result.standing() for r in [place.row]]
    common.print_table(rows, ["chunk_size", "overlap", *(["chunk headers"] * headed), *(["child_size"] * kids),
                              "mode", "chunks", "mean tokens",
                              *metrics, hole, "time",
                              f"by {result.default_metric()}"])
    print(f"\n{result.queries} queries, {len(result.documents)} documents, {result.embedder}; "
          f"queries embedded in {result.query_seconds:.1f} s; ± half the 95 % bootstrap interval over the queries")
    print(result.summary())
    print(result.tie_summary())
    best = result.best()
    if best is not None and best.funnel is not None:
        print(f"\nThe best ({best.short}):", end="")
        print_funnel(best.funnel)
    if result.rerank:
        effect = effect_words(result.rerank_effect(), result.default_metric())
        print(f"Reranking with {result.rerank['spec']} (depth {result.rerank['depth']}), on minus off, paired test:")
        print("\n".join(f"  {line}" for line in effect) or "  no row ran both with and without it")


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

    sweep = commands.add_parser("sweep", parents=[parent], help="compare chunk sizes and overlaps on a query set")
    sweep.add_argument("documents", nargs="*", metavar="DOCS", help="files, or folders of PDF/Markdown/text files")
    sweep.add_argument("--collection", metavar="C", type=given("the collection name"), help="instead of DOCS: the "
                       "documents of collection C; a configuration at C's own settings searches C as stored")
    sweep.add_argument("--queries", required=True, metavar="Q", help="query set, .jsonl or .csv")
    sweep.add_argument("--chunk-size", type=sizes_option(parse_chunk_sizes, "--chunk-size"),
                       default=[200, 400, 800], metavar="N,N,...", help="chunk sizes in tokens, default 200,400,800")
    sweep.add_argument("--overlap", type=sizes_option(parse_overlaps, "--overlap"), default=[0, 50, 100],
                       metavar="N,N,...",
                       help="overlaps in tokens, default 0,50,100 (configurations with overlap >= size are skipped)")
    sweep.add_argument("--strategy", choices=chunking.STRATEGIES, default="structure", help="chunking strategy")
    sweep.add_argument("--chunk-headers", type=headers_option, default=[DEFAULT_CHUNK_HEADERS],
                       metavar="on|off|on,off", help="embed chunks with their title and heading path: off, on, or "
                       "on,off to compare both (a collection per setting)")
    common.add_child_size(sweep, sweep=True)
    sweep.add_argument("--mode", type=modes_option, default="dense,sparse,hybrid", metavar="MODE,MODE,...",
                       help=f"search modes, each a row per configuration: {', '.join(MODE_NAMES)} (default "
                       "dense,sparse,hybrid; hybrid uses --fusion). Modes share each configuration's collection")
    add_fusion(sweep)
    sweep.add_argument("--embedder", metavar="SPEC", help="embedder spec, e.g. local, fake:64, ollama:<model> "
                       "(default $RAG_EMBEDDER, else local)")
    sweep.add_argument("--apply-best", metavar="COLLECTION", type=given("the collection name"),
                       help="then re-ingest the documents into COLLECTION with the best row's chunk_size and overlap, "
                       "and save its mode and fusion as COLLECTION's defaults (with the run that chose them)")
    add_rerank_options(sweep, sweep=True)
    add_common(sweep)
    sweep.set_defaults(run=run_sweep_command)




def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k", type=ks_option, default=DEFAULT_KS, metavar="K,K,...",
                        help="cut-offs for the metrics, default 1,3,5,10")
    parser.add_argument("--cache", metavar="DIR", help="embedding cache folder (default: next to the store)")
    parser.add_argument("--no-cache", action="store_true", help="keep the embedding cache in memory only")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--html", metavar="FILE", help="also write one self-contained HTML report (tables, charts "
                        "with intervals, the best and its ties, the settings) to FILE")

