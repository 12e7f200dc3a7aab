"""How a chunk scores in a parent–child search: max over the chunk and its children (rag.store.children) against
max, the sum of the top 2 and the mean of the top 3 over its children alone, paired on the same collections and
queries.

    python -m bench.children_aggregation [--sets de] [--child-size 128] [--mode hybrid] [--cache DIR]

One sweep builds the child collection (embeddings from the cache when bench.children ran first); each
aggregation then searches it through the store's own search path (the fold of child hits into parents swapped,
and the chunks themselves left out by a children-only filter) and is scored on the returned parents.
Prints MRR@10 and hit@k per aggregation with the paired difference against max.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from qdrant_client import models  # noqa: E402

import bench.headers  # noqa: E402 (imported after the offline switches above)
from bench.headers import load_set  # noqa: E402
from rag.embeddings import EmbeddingCache, get_embedder  # noqa: E402
from rag.evaluation.metrics import evaluate, paired_difference, parse_ks, parse_mode, search_in_modes  # noqa: E402
from rag.evaluation.sweeps import Sweep, SweepConfig, prepare_queries, run_sweep  # noqa: E402
from rag.retrieval import DEFAULT_FUSION, parents  # noqa: E402
from rag.retrieval import search as search_module
from rag.store import Store, children, open_store  # noqa: E402


def top_children(reduce, take: int):
    """Return a fold that scores each parent by reduce() of its top `take` child scores (then re-sorts)."""
    def fold(points: Sequence[Any], limit: int):
        groups: dict[str, list[Any]] = {}
        for point in points:
            groups.setdefault(str((point.payload or {}).get("parent_id") or point.id), []).append(point)
        scored = sorted(groups.items(), key=lambda item: -reduce([p.score for p in item[1][:take]]))[:limit]
        _, matches = parents(points, len(groups))
        found = [group[0].model_copy(update={"id": parent, "score": reduce([p.score for p in group[:take]])})
                 for parent, group in scored]
        return found, {parent: matches[parent] for parent, _ in scored}
    return fold


def measure(name: str, args: argparse.Namespace, embedder, cache: EmbeddingCache) -> list[str]:
    documents, queries = load_set(name)
    mode = parse_mode(args.mode, DEFAULT_FUSION)
    ks = parse_ks(args.k)
    config = SweepConfig(args.chunk_size, args.overlap, child_size=args.child_size)
    results = {}
    with tempfile.TemporaryDirectory(prefix="rag-bench-aggregation-") as scratch:
        store = open_store(path=scratch)
        swept = run_sweep(Sweep(documents, queries, [config], ks=ks, modes=[mode]), embedder, store=store, cache=cache)
        collection = swept.results[0].collection
        resolved = prepare_queries(queries, documents)
        vectors = cache.embed([q.text for q in resolved], embedder, query=True)
        texts = [q.text for q in resolved]
        original_fold, original_filter = search_module.fold, Store.search_filter

        def children_only(self, layout, document_ids, include_toc=False):
            flt = original_filter(self, layout, document_ids, include_toc) or models.Filter()
            return flt.model_copy(update={"must": [*(flt.must or []), children.IS_CHILD]})

        variants = {"max over parent + children (the default)": (original_fold, original_filter),
                    "max over children": (original_fold, children_only),
                    "sum of top 2 children": (top_children(sum, 2), children_only),
                    "mean of top 3 children": (top_children(lambda s: sum(s) / len(s), 3), children_only)}
        try:
            for label, (fold, flt) in variants.items():
                search_module.fold, Store.search_filter = fold, flt
                found = search_in_modes(store, collection, [mode], vectors, embedder, ks[-1], texts)[0]
                results[label] = evaluate(resolved, found, ks)
        finally:
            search_module.fold, Store.search_filter = original_fold, original_filter
            store.close()
    base = results["max over parent + children (the default)"]
    metrics = [f"mrr@{ks[-1]}", *(f"hit@{k}" for k in ks)]
    lines = [f"## {name}: child_size {args.child_size}, {mode.label}, {len(resolved)} queries",
             "| aggregation | " + " | ".join(metrics) + " | MRR - default [95 %] | p |",
             "|---|" + "---|" * (len(metrics) + 2)]
    for label, ev in results.items():
        diff = paired_difference(base.values(metrics[0]), ev.values(metrics[0]))
        lines.append(f"| {label} | " + " | ".join(f"{ev.metrics[m]:.3f}" for m in metrics)
                     + f" | {diff.difference:+.3f} [{diff.low:+.3f}, {diff.high:+.3f}] | {diff.p_value:.3f} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="de")
    parser.add_argument("--child-size", type=int, default=128)
    parser.add_argument("--chunk-size", type=int, default=350)
    parser.add_argument("--overlap", type=int, default=50)
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--k", default="1,3,5,10")
    parser.add_argument("--cache", default=None)
    parser.add_argument("--squad", default=None)
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    shared = [root.parent / "shared", root.parent.parent / "shared"]
    bench.headers.DEFAULT_SQUAD = Path(args.squad) if args.squad else next(
        (s / "data/xquad-de/xquad.de.dev.json" for s in shared if s.is_dir()), bench.headers.DEFAULT_SQUAD)
    embedder = get_embedder(args.embedder)
    cache = EmbeddingCache(args.cache)
    print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for name in args.sets.split(","):
        print("\n".join(measure(name.strip(), args, embedder, cache)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
