"""The kept runs on the command line, and what eval and sweep call to keep theirs.

    python -m rag runs [--json]                 every kept evaluation and sweep, newest first
    python -m rag runs compare A B [--json]     B minus A on the questions both ran (A, B: ID, ID/ROW or FILE)
    python -m rag runs export RUN --out FILE    write a kept run (ID, or ID/ROW alone) to a file, e.g. a CI baseline
    python -m rag runs delete ID

Runs live in runs.sqlite beside the embedded Qdrant folder (rag.runs.db); keeping one never costs a result:
when the database is locked or the disk full, one warning line says so and the command goes on. An exported run
(rag.runs.export: versioned JSON with every question's values) is read wherever a run is named: `rag runs compare
FILE ID`, `rag eval ... --baseline FILE`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from rag.cli.chunk import common
from rag.cli.store_options import dump, store_options
from rag.embeddings import EmbeddingCache
from rag.errors import UsageError
from rag.evaluation import METRICS, SweepResult, format_p, is_sweep_collection
from rag.runs import Applied, RunComparison, RunLog, apply_configuration, compare_runs, export_run, runs_path, sweep_row
from rag.store import DocumentArchive, Store, default_archive_dir
from rag.words import counted

JSON_HELP = """\
--json prints, for `runs`, a list of runs: {"id", "kind" (eval | sweep), "created_at", "seconds", "has_report",
  "settings": {"collection", "embedder", "prompts", "query_set", "query_hash", "queries", "documents", "ks",
               "metric"},
  "rows": [{"label", "chunk_size", "overlap", "strategy", "mode", "fusion", "rerank", "collection", "chunks",
            "mean_tokens", "metrics", "intervals"}], "best": index of the best row by "metric"};
for `runs compare`, the object of `rag compare --queries --json` ("paired", "verdict", "per_query", ...) over the
questions both runs ran, each side with its "run", "row", "file" (the run file it was read from, else null) and
settings, and "only_a" / "only_b": questions only one side ran;
for `runs export`, nothing: the file it writes is {"format": "rag-lab-run", "version": 1, "exported_at", "source":
{"run", "row"}, "run" (the kept run, as `runs --json` shows one), "outcomes" (per row, one per question:
{"query", "line", "documents", "rank", "score", "score_kind", "values"})}.
"""


def log_of(args: argparse.Namespace) -> RunLog:
    return RunLog(runs_path(getattr(args, "store", None), getattr(args, "qdrant_url", None)))


def announce(kept: tuple[int | None, str | None]) -> int | None:
    """Say on stderr how a run was kept (its id) or the one warning line why not; return its id."""
    run_id, warning = kept
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    else:
        common.progress(f"kept as run {run_id} (`rag runs` lists the kept runs)")
    return run_id


def check_apply_target(store: Store, collection: str, embedder) -> None:
    """Raise the error that would stop --apply-best COLLECTION, before the sweep: a sweep's own collection, or one
    another embedder made."""
    if is_sweep_collection(collection):
        raise UsageError(f"'{collection}' is one of the sweep's own collections; give another name to --apply-best.")
    store.check_writable(collection, embedder)


def apply_best(store: Store, result: SweepResult, collection: str, embedder, run_id: int | None,
               documents: Sequence, cache: EmbeddingCache | None = None) -> Applied:
    """Re-ingest the sweep's documents into collection with the best row's chunking and save its mode and fusion
    as the collection's defaults (rag.runs.apply), with progress lines on stderr; cache: the sweep's, whose vectors
    are used (nothing the sweep embedded is embedded again)."""
    best = result.best()
    common.progress(f"applying {best.short} to '{collection}': re-ingesting {counted(len(documents), 'document')}")
    archive = DocumentArchive(default_archive_dir(store.location, store.local))
    return apply_configuration(sweep_row(best, result), collection, embedder, store=store, archive=archive,
                               run_id=run_id, documents=documents, cache=cache)


def _value(row: dict, metric: str | None) -> str:
    value, interval = row["metrics"].get(metric), row["intervals"].get(metric)
    if value is None:
        return "-"
    return f"{value:.3f}" + (f" ±{(interval[1] - interval[0]) / 2:.3f}" if interval else "")


def run_list(args: argparse.Namespace) -> int:
    runs = log_of(args).runs()
    if args.json:
        dump(runs)
        return 0
    if not runs:
        print("No runs are kept yet: `rag eval` and `rag sweep` keep theirs.")
        return 0
    rows = []
    for run in runs:
        settings, best = run["settings"], run["rows"][run["best"]] if run["best"] is not None else None
        where = settings["collection"] or counted(len(settings["documents"]), "document")
        label = common.preview(best["label"], 28) if best else "-"
        rows.append([str(run["id"]), run["kind"], run["created_at"][:16].replace("T", " "), common.preview(where, 24),
                     common.preview(settings["embedder"] or "-", 20), common.preview(settings["query_set"], 20),
                     str(settings["queries"]), str(len(run["rows"])), label,
                     f"{settings['metric']} {_value(best, settings['metric'])}" if best else "-"])
    common.print_table(rows, ["id", "kind", "created (UTC)", "collection", "embedder", "query set", "queries", "rows",
                              "best row", "best"])
    print("\n± half the 95 % bootstrap interval over the queries. Compare two: `rag runs compare ID ID[/ROW]`.")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    result = compare_runs(log_of(args), args.a, args.b)
    if args.json:
        if warning := result.version_warning():
            print(warning, file=sys.stderr)
        dump(result.to_json())
        return 0
    print_comparison(result)
    return 0


def print_comparison(result: RunComparison) -> None:
    comparison = result.comparison
    for letter, side in (("A", result.a), ("B", result.b)):
        print(f"{letter} = run {side.name}: {side.settings['label']} ({side.run['settings']['query_set']}, "
              f"{side.run['created_at']})")
    print(f"{counted(len(comparison.per_query), 'question')} both ran; only A: {result.only_a}, only B: "
          f"{result.only_b}\n")
    if warning := result.version_warning():
        print(f"{warning}\n")
    deepest = comparison.ks[-1]
    keys = [k for k in [f"hit@{k}" for k in comparison.ks] + [f"{m}@{deepest}" for m in METRICS if m != "hit"]
            if k in comparison.paired]
    paired = comparison.paired
    common.print_table([[key, f"{comparison.metrics_a[key]:.3f}", f"{comparison.metrics_b[key]:.3f}",
                         f"{comparison.deltas[key]:+.3f}", f"{paired[key].low:+.3f} to {paired[key].high:+.3f}",
                         "too few differ" if paired[key].too_few_differ else format_p(paired[key].p_value)]
                        for key in keys], ["metric", "A", "B", "B - A", "95 % interval", "p"])
    print(f"\n{comparison.verdict()}")
    print(f"\nB better on {counted(comparison.count('better'), 'question')}, worse on {comparison.count('worse')}, "
          f"the same on "
          f"{comparison.count('same')} (by the rank of the first relevant chunk).")


def run_export(args: argparse.Namespace) -> int:
    out = common.output_file(args.out)
    data = export_run(log_of(args), args.run_id)
    try:
        out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{out}: cannot write it ({error.strerror}).") from error
    row = data["run"]["rows"][data["run"]["best"] or 0]
    print(f"Run {args.run_id} ({row['label']}, {counted(len(data['outcomes'][data['run']['best'] or 0]), 'question')}) "
          f"written to {out}; compare with it: `rag eval QUERIES --collection C --baseline {out}`.")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    log_of(args).delete(args.id)
    print(f"Run {args.id} deleted.")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    parent = store_options()
    runs = commands.add_parser("runs", parents=[parent],
                               help="the kept evaluations and sweeps: list, compare, export, delete",
                               description=__doc__ + "\n" + JSON_HELP,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    runs.add_argument("--json", action="store_true", help="print the runs as JSON (shape above)")
    runs.set_defaults(run=run_list)
    actions = runs.add_subparsers(dest="action", metavar="ACTION")
    compare = actions.add_parser("compare", parents=[parent], help="B minus A on the questions both runs ran")
    compare.add_argument("a", metavar="A", help="a run id (its best row), ID/ROW for one row of a sweep, or a file "
                         "`rag runs export` wrote")
    compare.add_argument("b", metavar="B", help="the other run, like A")
    compare.add_argument("--json", action="store_true", help="print one JSON object (the shape of `rag compare "
                         "--queries --json`)")
    compare.set_defaults(run=run_compare)
    export = actions.add_parser("export", parents=[parent], help="write a kept run to a file (versioned JSON), e.g. "
                                "a baseline for `rag eval --baseline FILE` kept in a repository")
    export.add_argument("run_id", metavar="RUN", help="a run id (the whole run; its best row is the baseline), or "
                        "ID/ROW for that row of a sweep alone")
    export.add_argument("--out", required=True, metavar="FILE", help="the file to write, e.g. baseline.json")
    export.set_defaults(run=run_export)
    delete = actions.add_parser("delete", parents=[parent], help="delete a kept run")
    delete.add_argument("id", metavar="ID", type=common.positive_int(1))
    delete.set_defaults(run=run_delete)
