"""The `compare` command: one query, or a query set, against two collections or two search modes (A/B).

    python -m rag compare QUERY --a COLLECTION[:MODE] --b COLLECTION[:MODE] [--top-k 10] [--fusion rrf] [--json]
    python -m rag compare --queries Q --a COLLECTION[:MODE] --b COLLECTION[:MODE] [--k 1,3,5,10] [--json]

Each side searches with its collection's own embedder. MODE is dense (default), sparse, hybrid (with
--fusion), hybrid-rrf or hybrid-dbsf; "docs:hybrid" vs "docs" compares hybrid with dense on one collection.
"""

from __future__ import annotations

import argparse
import sys

from rag import pipeline
from rag.cli.chunk import common
from rag.cli.eval_options import ks_option
from rag.cli.evaluate import FAILURES_SHOWN, cache_of
from rag.cli.store_options import dump, fusion_option, store_of, store_options
from rag.errors import UsageError
from rag.evaluation import (
    DEFAULT_KS,
    METRICS,
    MODE_NAMES,
    EvaluationComparison,
    HitComparison,
    HitRow,
    Side,
    compare_query,
    compare_query_set,
    document_difference,
    format_p,
    load_query_set,
    parse_side,
)
from rag.store import DEFAULT_FUSION, Store
from rag.words import counted

JSON_HELP = """\
--json prints one object. One query:
  {"query", "top_k",
   "a": {"collection", "mode", "fusion", "embedder",
         "hits": [{"rank", "score", "score_kind", "document_title", "document_id", "chunk_index", "start", "end",
                   "heading_path", "content", "other_ranks", "shift"}]},
   "b": {... the same for B},
   "shared": {"a": n, "b": n}, "only_a": n, "only_b": n}
  other_ranks: ranks in the other list holding the same text (same document, spans sharing >= half of the
  shorter one); shift: rank in B minus rank in A (negative: B ranks it higher), null when not shared.
A query set (--queries):
  {"queries", "ks", "a": {"collection", "mode", "fusion", "embedder", "metrics"}, "b": {...},
   "deltas": {"hit@5": B minus A, ...}, "changes": {"better": n, "worse": n, "same": n},
   "paired": {"hit@5": {"difference", "interval": [low, high], "p_value", "queries", "tied", "differing",
                        "too_few_differ"}, ...},
   "verdict": the paired difference of mrr at the deepest k in words,
   "per_query": [{"query", "line", "rank_a", "rank_b", "rank_change", "score_a", "score_b", "score_change",
                  "change", "deltas": {metric at the deepest k: B minus A}}]}
  rank_*: rank of the first relevant chunk (null: not within the deepest k); change: better/worse/same by rank.
  paired: B minus A over the same queries; p_value: sign-flip permutation test; interval (95 %): the same test
  inverted, so it holds 0 exactly when tied: p_value >= 0.05, the query set cannot tell A and B apart;
  differing: queries on which A and B differ; too_few_differ: 5 or fewer, so no test can decide.
"""


def side_label(side: Side) -> str:
    return f"'{side.collection}' ({side.mode.label})"


def side_json(side: Side, embedder: str | None) -> dict:
    return {"collection": side.collection, "mode": side.mode.mode, "fusion": side.mode.fusion_used,
            "embedder": embedder}


def _embedder(store: Store, side: Side):
    return pipeline.embedder_for(store, side.collection) if side.mode.needs_vectors else None


def run_compare(args: argparse.Namespace) -> int:
    if (args.query is None) == (args.queries is None):
        raise UsageError("Give either QUERY (one query) or --queries FILE (a query set), not both or neither.")
    sides = parse_side(args.a, args.fusion), parse_side(args.b, args.fusion)
    store = store_of(args, read_only=True)
    embedders = [_embedder(store, side) for side in sides]
    ids = [e.model_id if e else None for e in embedders]
    different = document_difference(store, sides[0].collection, sides[1].collection)
    if different:
        print(f"Note: {different}", file=sys.stderr)
    if args.query is not None:
        comparison = compare_query(args.query, sides, args.top_k, store=store, embedders=embedders)
        if args.json:
            dump(hits_json(args.query, args.top_k, sides, ids, comparison))
        else:
            print_hits(sides, comparison)
        return 0
    queries = load_query_set(common.read_file(args.queries), args.queries)
    comparison = compare_query_set(queries, sides, args.k, store=store, embedders=embedders,
                                   cache=cache_of(args, store))
    if args.json:
        dump(comparison_json(sides, ids, comparison))
    else:
        print_evaluations(sides, comparison)
    return 0


def _row_json(row: HitRow) -> dict:
    h = row.hit
    return {"rank": row.rank, "score": h.score, "score_kind": h.score_kind, "document_title": h.document_title,
            "document_id": h.document_id, "chunk_index": h.chunk_index, "start": h.start, "end": h.end,
            "heading_path": list(h.heading_path), "content": h.content, "other_ranks": list(row.other_ranks),
            "shift": row.shift}


def hits_json(query: str, top_k: int, sides: tuple[Side, Side], embedders: list, comparison: HitComparison) -> dict:
    """Return the one-query comparison as `compare --json` prints it (see JSON_HELP)."""
    a, b = (side_json(side, e) | {"hits": [_row_json(r) for r in rows]}
            for side, e, rows in zip(sides, embedders, (comparison.a, comparison.b), strict=True))
    return {"query": query, "top_k": top_k, "a": a, "b": b,
            "shared": {"a": len(comparison.shared_a), "b": len(comparison.b) - len(comparison.only_b)},
            "only_a": len(comparison.only_a), "only_b": len(comparison.only_b)}


def comparison_json(sides: tuple[Side, Side], embedders: list, comparison: EvaluationComparison) -> dict:
    """Return the query-set comparison as `compare --queries --json` prints it (see JSON_HELP)."""
    data = comparison.to_json()
    a, b = (side_json(side, e) | {"metrics": metrics} for side, e, metrics
            in zip(sides, embedders, (data.pop("metrics_a"), data.pop("metrics_b")), strict=True))
    return {"queries": data.pop("queries"), "ks": data.pop("ks"), "a": a, "b": b} | data


def _moved(shift: int | None) -> str:
    return "-" if shift is None else "=" if shift == 0 else f"{shift:+d}"


def print_hits(sides: tuple[Side, Side], comparison: HitComparison) -> None:
    for letter, side, rows, other in (("A", sides[0], comparison.a, "B"), ("B", sides[1], comparison.b, "A")):
        print(f"{letter}: {side_label(side)}")
        common.print_table([[str(r.rank), "-" if r.hit.score is None else f"{r.hit.score:.3f}",
                          str(r.other_rank or "-"), _moved(r.shift), common.preview(r.hit.document_title, 28),
                          str(r.hit.chunk_index if r.hit.chunk_index is not None else ""),
                          common.preview(r.hit.content, 50)] for r in rows],
                        ["rank", "score", f"in {other}", "shift", "document", "chunk", "content"])
        print()
    print(comparison.summary() + " shift = rank in B minus rank in A.")


def print_evaluations(sides: tuple[Side, Side], comparison: EvaluationComparison) -> None:
    print(f"{counted(len(comparison.per_query), 'query', 'queries')}; A = {side_label(sides[0])}, B = "
          f"{side_label(sides[1])}\n")
    deepest = comparison.ks[-1]
    keys = [f"hit@{k}" for k in comparison.ks] + [f"{m}@{deepest}" for m in METRICS if m != "hit"]
    paired = comparison.paired
    common.print_table([[key, f"{comparison.metrics_a[key]:.3f}", f"{comparison.metrics_b[key]:.3f}",
                         f"{comparison.deltas[key]:+.3f}", f"{paired[key].low:+.3f} to {paired[key].high:+.3f}",
                         "too few differ" if paired[key].too_few_differ else format_p(paired[key].p_value)]
                        for key in keys],
                       ["metric", "A", "B", "B - A", "95 % interval", "p"])
    print(f"\n{comparison.verdict()}")
    print(f"\nB better on {counted(comparison.count('better'), 'query', 'queries')}, worse on "
          f"{comparison.count('worse')}, "
          f"the same on {comparison.count('same')} (by the rank of the first relevant chunk).")
    changed = sorted((q for q in comparison.per_query if q.change != "same"),
                     key=lambda q: -abs(q.deltas.get(f"mrr@{deepest}", 0.0)))
    if changed:
        print(f"\nThe {min(len(changed), FAILURES_SHOWN)} largest changes (all with --json):")
        common.print_table([[q.change, str(q.rank_a or f">{deepest}"), str(q.rank_b or f">{deepest}"),
                          f"{q.deltas[f'mrr@{deepest}']:+.3f}", common.preview(q.query, 60)]
                         for q in changed[:FAILURES_SHOWN]], ["change", "rank A", "rank B", f"mrr@{deepest}", "query"])


def register(commands: argparse._SubParsersAction) -> None:
    compare = commands.add_parser(
        "compare", parents=[store_options()], help="A/B: one query or a query set on two collections or modes",
        description=__doc__ + "\n" + JSON_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    compare.add_argument("query", nargs="?", metavar="QUERY", help="one query (or give --queries)")
    compare.add_argument("--queries", metavar="Q", help="a query set, .jsonl or .csv, instead of QUERY")
    compare.add_argument("--a", required=True, metavar="COLLECTION[:MODE]",
                         help=f"side A; MODE one of {', '.join(MODE_NAMES)} (default dense)")
    compare.add_argument("--b", required=True, metavar="COLLECTION[:MODE]", help="side B, like --a")
    compare.add_argument("--fusion", type=fusion_option, default=DEFAULT_FUSION, metavar="SPEC",
                         help=f"fusion of a side whose MODE is hybrid (default {DEFAULT_FUSION}; "
                              "see rag.retrieval.fusion)")
    compare.add_argument("--top-k", type=common.positive_int(1), default=10,
                         help="hits per side for QUERY (default 10)")
    compare.add_argument("--k", type=ks_option, default=DEFAULT_KS, metavar="K,K,...",
                         help="cut-offs for --queries, default 1,3,5,10")
    compare.add_argument("--cache", metavar="DIR", help="embedding cache folder (default: next to the store)")
    compare.add_argument("--no-cache", action="store_true", help="keep the embedding cache in memory only")
    compare.add_argument("--json", action="store_true", help="print one JSON object (its shape is described above)")
    compare.set_defaults(run=run_compare)

