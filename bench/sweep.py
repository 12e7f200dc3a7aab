"""Sweep benchmark: XQuAD-de dev (24 German articles, 632 questions) with the local model, 3 chunk sizes x 2 overlaps.

    python -m bench.sweep [--squad FILE] [--chunk-size 100,200,400] [--overlap 0,50] [--k 1,3,5,10]
                          [--embedder local] [--store DIR]

Imports the SQuAD file in memory, loads each article as RAG Lab reads a .txt file, then runs the sweep twice
on a fresh embedded Qdrant folder: cold (empty embedding cache, every collection built) and warm (the same
store and cache: collections reused, nothing embedded). Prints the time split (chunking, embedding, indexing,
searching), the share of chunks longer than the model's input limit, the best configuration, and the result
table as Markdown for the README.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from rag.chunking.chunker import chunk_document  # noqa: E402 (imported after the offline switches above)
from rag.embeddings import get_embedder  # noqa: E402 (imported after the offline switches above)
from rag.embeddings.cache import EmbeddingCache  # noqa: E402 (imported after the offline switches above)
from rag.evaluation.squad import import_squad, sweep_input  # noqa: E402 (imported after the offline switches above)
from rag.evaluation.sweep import STAGES, SweepResult, grid, parse_sizes, run_sweep  # noqa: E402 (imported after the offline switches above)
from rag.store.open import open_store  # noqa: E402 (imported after the offline switches above)

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_SQUAD = ROOT.parent / "shared" / "data" / "xquad-de" / "xquad.de.dev.json"


def cut_share(documents, config, embedder) -> float:
    """Return the share of a configuration's chunks longer than the embedder reads (they are truncated)."""
    chunks = [c for d in documents for c in chunk_document(d, config.chunk_size, config.overlap, config.strategy)]
    limit = embedder.max_input_tokens
    return sum(embedder.count_tokens(c.content) > limit for c in chunks) / max(len(chunks), 1)


def markdown_table(result: SweepResult, cuts: dict) -> str:
    """Return the sweep as a Markdown table: configuration, chunks, metrics, truncation and time."""
    deepest = result.ks[-1]
    metrics = [f"hit@{k}" for k in result.ks] + [f"mrr@{deepest}", f"ndcg@{deepest}"]
    best = result.best()
    head = ["chunk_size", "overlap", "chunks", "mean tokens", *metrics, "cut by model", "time (s)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in result.results:
        mark = "**" if r is best else ""
        cells = [f"{mark}{r.config.chunk_size}{mark}", f"{mark}{r.config.overlap}{mark}", str(r.chunks),
                 f"{r.mean_tokens:.0f}", *(f"{r.metrics[m]:.3f}" for m in metrics),
                 f"{cuts[r.config]:.0%}", f"{r.total_seconds:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def stage_totals(result: SweepResult) -> dict[str, float]:
    return {stage: sum(r.seconds[stage] for r in result.results) for stage in STAGES}


def report(label: str, result: SweepResult, wall: float) -> None:
    totals = stage_totals(result)
    split = ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in totals.items())
    embedded = sum(r.embedded for r in result.results)
    print(f"{label}: {wall:.1f} s wall; queries embedded {result.query_seconds:.1f} s; {split}; "
          f"{embedded} chunks embedded, {sum(r.reused for r in result.results)} of {len(result.results)} "
          "collections reused")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--squad", default=str(DEFAULT_SQUAD))
    parser.add_argument("--chunk-size", default="100,200,400")
    parser.add_argument("--overlap", default="0,50")
    parser.add_argument("--k", default="1,3,5,10")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--store", help="embedded Qdrant folder (default: a fresh temporary one)")
    args = parser.parse_args()

    started = time.perf_counter()
    documents, queries = sweep_input(import_squad(Path(args.squad).read_bytes(), args.squad))
    load_seconds = time.perf_counter() - started
    configs, skipped = grid(parse_sizes(args.chunk_size, "--chunk-size", 4), parse_sizes(args.overlap, "--overlap", 0))
    embedder = get_embedder(args.embedder)
    started = time.perf_counter()
    embedder.embed_documents(["warm-up"])  # the model loads here, not inside the first configuration's figures
    model_seconds = time.perf_counter() - started
    print(f"{len(documents)} documents ({sum(len(d.text) for d in documents):,} characters), {len(queries)} queries; "
          f"import + load {load_seconds:.2f} s; {embedder.model_id} loaded in {model_seconds:.1f} s; "
          f"{len(configs)} configurations{f' ({len(skipped)} skipped)' if skipped else ''}")
    with tempfile.TemporaryDirectory(prefix="rag-bench-sweep-") as scratch:
        store, cache = open_store(path=args.store or scratch), EmbeddingCache()
        runs = {}
        for label in ("cold", "warm"):
            started = time.perf_counter()
            runs[label] = run_sweep(documents, queries, configs, embedder, store=store, cache=cache,
                                    ks=[int(k) for k in args.k.split(",")])
            report(label, runs[label], time.perf_counter() - started)
        store.close()  # releases the folder before the scratch folder goes
    cuts = {c: cut_share(documents, c, embedder) for c in configs}
    print(runs["cold"].summary())
    print()
    print(markdown_table(runs["cold"], cuts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
