"""Contextual chunk headers against today: the same chunks embedded and keyword-indexed with and without
their document title and heading path, on the German XQuAD set and the English set, paired.

    python -m bench.headers [--sets de,en] [--chunk-size 350] [--overlap 50] [--mode hybrid]
                            [--embedder local] [--k 1,3,5,10]

For each set: one sweep of two configurations (chunk headers off, on) at the same chunk_size and overlap,
searched in the same mode (default: hybrid with the default fusion, the app's default), so both sides see
the same chunks and the same queries. Prints per side MRR@10 and hit@k with their 95 % bootstrap intervals,
then per metric the paired difference (on minus off) with its 95 % interval and the sign-flip p-value
(rag.evaluation.metrics.paired), and the load average of the machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench.modes import DEFAULT_SQUAD, english_input  # noqa: E402 (imported after the offline switches above)
from bench.paired import paired_table  # noqa: E402
from rag.embeddings import EmbeddingCache, get_embedder  # noqa: E402
from rag.evaluation.metrics import parse_ks, parse_mode  # noqa: E402
from rag.evaluation.querysets import import_squad, sweep_input  # noqa: E402
from rag.evaluation.sweeps import Sweep, SweepConfig, run_sweep  # noqa: E402
from rag.retrieval import DEFAULT_FUSION  # noqa: E402
from rag.store import open_store  # noqa: E402


def load_set(name: str) -> tuple[list, list]:
    """Return (documents, queries) of "de" (XQuAD-de dev) or "en" (bench/data/english)."""
    if name == "de":
        return sweep_input(import_squad(DEFAULT_SQUAD.read_bytes(), str(DEFAULT_SQUAD)))
    if name == "en":
        return english_input()  # its spans re-anchored to pdfium's text in the file (python -m bench.reanchor)
    raise SystemExit(f"unknown set {name!r}: use de or en")


def measure(name: str, args: argparse.Namespace, embedder) -> dict:
    """Return the off and on evaluations of one set and the sweep's wall time."""
    documents, queries = load_set(name)
    mode = parse_mode(args.mode, DEFAULT_FUSION)
    configs = [SweepConfig(args.chunk_size, args.overlap, chunk_headers=False),
               SweepConfig(args.chunk_size, args.overlap, chunk_headers=True)]
    with tempfile.TemporaryDirectory(prefix="rag-bench-headers-") as scratch:
        store = open_store(path=scratch)
        started = time.perf_counter()
        result = run_sweep(Sweep(documents, queries, configs, ks=parse_ks(args.k), modes=[mode]), embedder, store=store,
                           cache=EmbeddingCache())
        wall = time.perf_counter() - started
        store.close()
    off, on = (r for r in result.results)
    return {"name": name, "documents": len(documents), "queries": len(queries), "off": off, "on": on,
            "wall": wall, "mode": mode.label}


def report(found: dict, ks: tuple[int, ...]) -> list[str]:
    """Return the lines of one set: both sides with intervals, then the paired differences."""
    off, on = found["off"].evaluation, found["on"].evaluation
    deepest = ks[-1]
    metrics = [f"mrr@{deepest}", *(f"hit@{k}" for k in ks)]
    lines = [f"## {found['name']}: {found['documents']} documents, {found['queries']} queries, {found['mode']}, "
             f"{found['off'].chunks} chunks; {found['wall']:.0f} s"]
    lines += paired_table(off, on, metrics, ("headers off", "headers on"), "headers on")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="de,en")
    parser.add_argument("--chunk-size", type=int, default=350)
    parser.add_argument("--overlap", type=int, default=50)
    parser.add_argument("--mode", default="hybrid", help="dense, sparse, hybrid (default fusion) or hybrid-<fusion>")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--k", default="1,3,5,10")
    args = parser.parse_args()
    ks = parse_ks(args.k)
    embedder = get_embedder(args.embedder)
    embedder.embed_documents(["warm-up"])  # the model loads here, not inside the figures
    print(f"{embedder.model_id}; chunk_size {args.chunk_size}, overlap {args.overlap}; load {_load()}")
    for name in args.sets.split(","):
        found = measure(name.strip(), args, embedder)
        print("\n".join(report(found, ks)))
        print(f"load {_load()}\n", flush=True)
    return 0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    raise SystemExit(main())
