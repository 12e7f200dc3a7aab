"""The sweep command: which chunk_size, overlap, chunk headers, child size and search mode retrieve best.

    python -m rag sweep DOCS... | --collection C --queries Q --chunk-size 200,400,800 --overlap 0,50,100 [--mode ...]
                        [--fusion SPEC] [--rerank SPEC [--rerank-depth N] [--rerank-modes off,on]] [--k ...]
                        [--json] [--html FILE] [--apply-best COLLECTION]

The table (or one JSON object with --json) goes to stdout, progress and notes to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from rag import chunking
from rag.chunking import DEFAULT_CHILD_SIZE, DEFAULT_CHUNK_HEADERS
from rag.cli.chunk import common
from rag.cli.eval_options import headers_option, modes_option, sizes_option
from rag.cli.evaluate import add_common, cache_of, print_funnel, with_interval
from rag.cli.rerank import add_rerank_options, reranker_of, with_rerank
from rag.cli.runs import announce, apply_best, check_apply_target
from rag.cli.store_options import add_fusion, dump, given, store_of, store_options
from rag.documents import SAMPLE_SUFFIXES, SourceFile
from rag.embeddings import get_embedder
from rag.errors import UsageError
from rag.evaluation import (
    MODE_NAMES,
    MOSTLY_UNJUDGED,
    Sweep,
    SweepProgress,
    SweepResult,
    collection_documents,
    effect_words,
    load_documents,
    load_query_set,
    merge_sweeps,
    parse_chunk_sizes,
    parse_grid,
    parse_modes,
    parse_overlaps,
    run_sweep,
    trace_sweep,
    unjudged_note,
    version_of,
)
from rag.reports import sweep_report
from rag.runs import keep_sweep
from rag.store import DEFAULT_FUSION
from rag.words import counted


def embedder_specs(given: str | None) -> list[str | None]:
    """Return the embedders to sweep: --embedder's comma-separated specs, each once (None: the default)."""
    specs = list(dict.fromkeys(s.strip() for s in (given or "").split(",") if s.strip()))
    return specs or [None]


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
    configs, skipped = parse_grid(args.chunk_size, args.overlap, args.strategy, args.chunk_headers,
                                  args.child_size or [DEFAULT_CHILD_SIZE])
    for note in skipped:
        common.progress(f"note: {note}")
    if bool(args.documents) == bool(args.collection):
        raise UsageError("Give the documents to sweep (files or folders) or --collection C, one of the two.")
    files = [SourceFile(p.name, common.read_file(str(p))) for p in document_paths(args.documents)]  # all or none
    queries = load_query_set(common.read_file(args.queries), args.queries)
    store = store_of(args)
    if args.child_size is None and args.collection:  # swept at its own child size, as the Evaluate page does
        configs = [dataclasses.replace(c, child_size=store.child_size(args.collection)) for c in configs]
    cache, reranker = cache_of(args, store), reranker_of(args)
    documents = collection_documents(store, args.collection, cache) if args.collection else load_documents(files)
    embedders = [get_embedder(spec) for spec in embedder_specs(args.embedder)]
    if args.apply_best and len(embedders) > 1:
        raise UsageError("--apply-best takes one embedder: sweep the embedders, then apply the best row with its own "
                         "--embedder.")
    if args.apply_best:
        check_apply_target(store, args.apply_best, embedders[0])
    modes = with_rerank(parse_modes(args.mode, args.fusion or DEFAULT_FUSION), args)
    parts = []
    for embedder in embedders:  # one sweep per embedder, on the same documents and queries: their rows are paired
        sweep = Sweep(documents, queries, configs, ks=args.k, modes=modes, rerank_depth=args.rerank_depth,
                      collection=args.collection, skipped=skipped)
        part = run_sweep(sweep, embedder, store=store, cache=cache, progress=SweepReporter(), reranker=reranker)
        for note in part.skipped[len(skipped):]:  # whether the collection was searched as stored
            common.progress(f"note: {note}")
        common.progress(f"tracing the misses of {len(part.results)} rows through the stages (why was it missed?)")
        trace_sweep(part, store=store, embedder=embedder, cache=cache, reranker=reranker,
                    rerank_depth=args.rerank_depth)
        parts.append(part)
    result, embedder = merge_sweeps(parts), embedders[0]
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
    models = any(r.embedder for r in result.results)  # ... or embedders
    rows = [[str(r.config.chunk_size), str(r.config.overlap), *(["on" if r.config.chunk_headers else "off"] * headed),
             *([str(r.config.child_size)] * kids), *([r.embedder] * models),
             r.mode.label, str(r.chunks), f"{r.mean_tokens:.0f}",
             *(with_interval(r.evaluation, m) for m in metrics),
             f"{r.metrics[hole]:.2f}" + (" mostly unjudged" if r.evaluation.mostly_unjudged(deepest) else ""),
             f"{r.total_seconds:.1f} s" + (" (reused)" if r.reused else ""), place.words()]
            for place in result.standing() for r in [place.row]]
    common.print_table(rows, ["chunk_size", "overlap", *(["chunk headers"] * headed), *(["child_size"] * kids),
                              *(["embedder"] * models), "mode", "chunks", "mean tokens",
                              *metrics, hole, "time",
                              f"by {result.default_metric()}"])
    print(f"\n{counted(result.queries, 'query', 'queries')}, {counted(len(result.documents), 'document')}, "
          f"{result.embedder}; "
          f"queries embedded in {result.query_seconds:.1f} s; ± half the 95 % bootstrap interval over the queries")
    if any(r.evaluation.mostly_unjudged(deepest) for r in result.results):
        print(f"{hole} above {MOSTLY_UNJUDGED:g}: {unjudged_note(result.default_metric())}")
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
    sweep.add_argument("--embedder", metavar="SPEC,SPEC,...", help="embedder spec, e.g. local, fake:64, "
                       "ollama:<model> (default $RAG_EMBEDDER, else local); several (local,local:fp32) sweep each, "
                       "their rows paired like any other")
    sweep.add_argument("--apply-best", metavar="COLLECTION", type=given("the collection name"),
                       help="then re-ingest the documents into COLLECTION with the best row's chunk_size and overlap, "
                       "and save its mode and fusion as COLLECTION's defaults (with the run that chose them)")
    add_rerank_options(sweep, sweep=True)
    add_common(sweep)
    sweep.set_defaults(run=run_sweep_command)
