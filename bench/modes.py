"""Search-mode benchmark: a query set evaluated dense, sparse (BM25) and hybrid with each fusion on one collection.

    python -m bench.modes [--squad FILE | --english] [--chunk-size 350] [--overlap 50] [--k 1,3,5,10]
                          [--embedder local] [--modes dense,sparse,hybrid-rrf,...] [--store DIR] [--cache DIR]

--english uses bench/data/english (116 questions with answer spans on 7 English Debian documents, fetched
once into bench/out/english with its fetch.sh); the default is the German XQuAD dev set.

Imports the SQuAD file in memory (every article one document), ingests it once through the sweep machinery
(one collection for the configuration, embeddings through an EmbeddingCache), then searches the same
collection in every mode with one batch request per mode and scores it with span labels (the answer's
character span must overlap the chunk). Prints a Markdown table per mode (hit@k, MRR@10, nDCG@10, search
time), how each mode moves queries against dense, and the build timings.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from rag.documents import SourceFile  # noqa: E402 (imported after the offline switches above)
from rag.embeddings import EmbeddingCache, get_embedder  # noqa: E402 (imported after the offline switches above)
from rag.evaluation.comparisons import compare_evaluations  # noqa: E402 (imported after the offline switches above)
from rag.evaluation.metrics import parse_ks, parse_modes  # noqa: E402 (imported after the offline switches above)
from rag.evaluation.querysets import import_squad, load_query_set, sweep_input  # noqa: E402 (imported after the offline switches above)
from rag.evaluation.sweeps import Sweep, SweepConfig, SweepResult, load_documents, run_sweep  # noqa: E402 (imported after the offline switches above)
from rag.store import open_store  # noqa: E402 (imported after the offline switches above)

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_SQUAD = ROOT.parent / "shared" / "data" / "xquad-de" / "xquad.de.dev.json"
ENGLISH = ROOT / "bench" / "data" / "english"
DEFAULT_MODES = "dense,sparse,hybrid-rrf,hybrid-dbsf,hybrid-convex"


def english_input() -> tuple[list, list]:
    """Return the English documents (fetched once) and their query set."""
    folder = ROOT / "bench" / "out" / "english"
    if not folder.is_dir():
        subprocess.run(["bash", str(ENGLISH / "fetch.sh"), str(folder)], check=True)
    files = [SourceFile(p.name, path=p) for p in sorted(folder.iterdir()) if p.is_file()]
    return load_documents(files), load_query_set((ENGLISH / "queries.jsonl").read_bytes(), "queries.jsonl")


def markdown_table(result: SweepResult) -> str:
    """Return one Markdown row per mode: hit@k for every k, MRR and nDCG at the deepest k, search time."""
    deepest = result.ks[-1]
    metrics = [f"hit@{k}" for k in result.ks] + [f"mrr@{deepest}", f"ndcg@{deepest}"]
    best = result.best()
    head = ["mode", *metrics, "search (s)", "per query (ms)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in result.results:
        mark = "**" if row is best else ""
        searching = row.seconds["searching"]
        cells = [f"{mark}{row.mode.label}{mark}", *(f"{row.metrics[m]:.3f}" for m in metrics), f"{searching:.2f}",
                 f"{1000 * searching / max(result.queries, 1):.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def moves_against_dense(result: SweepResult) -> list[str]:
    """Return, per non-dense mode, how many queries it ranks the answer better / worse than dense does."""
    dense = next((r for r in result.results if r.mode.label == "dense"), None)
    if dense is None:
        return []
    lines = []
    for row in result.results:
        if row is dense:
            continue
        c = compare_evaluations(dense.evaluation, row.evaluation)
        deepest = result.ks[-1]
        lines.append(f"{row.mode.label} vs dense: better on {c.count('better')} queries, worse on {c.count('worse')}, "
                     f"same on {c.count('same')}; mrr@{deepest} {c.deltas[f'mrr@{deepest}']:+.3f}, "
                     f"hit@5 {c.deltas.get('hit@5', float('nan')):+.3f}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--squad", default=str(DEFAULT_SQUAD))
    parser.add_argument("--english", action="store_true", help="the English set instead of XQuAD-de")
    parser.add_argument("--chunk-size", type=int, default=350)
    parser.add_argument("--overlap", type=int, default=50)
    parser.add_argument("--k", default="1,3,5,10")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--modes", default=DEFAULT_MODES)
    parser.add_argument("--store", help="embedded Qdrant folder (default: a fresh temporary one)")
    parser.add_argument("--cache", help="embedding cache folder (default: in memory)")
    args = parser.parse_args()

    started = time.perf_counter()
    if args.english:
        documents, queries = english_input()
    else:
        documents, queries = sweep_input(import_squad(Path(args.squad).read_bytes(), args.squad))
    load_seconds = time.perf_counter() - started
    embedder = get_embedder(args.embedder)
    started = time.perf_counter()
    embedder.embed_documents(["warm-up"])  # the model loads here, not inside the figures
    model_seconds = time.perf_counter() - started
    modes, config = parse_modes(args.modes), SweepConfig(args.chunk_size, args.overlap)
    print(f"{len(documents)} documents ({sum(len(d.text) for d in documents):,} characters), {len(queries)} queries; "
          f"import {load_seconds:.2f} s; {embedder.model_id} loaded in {model_seconds:.1f} s; {config.label}")
    with tempfile.TemporaryDirectory(prefix="rag-bench-modes-") as scratch:
        store = open_store(path=args.store or scratch)
        cache = EmbeddingCache(args.cache) if args.cache else EmbeddingCache()
        started = time.perf_counter()
        result = run_sweep(Sweep(documents, queries, [config], ks=parse_ks(args.k), modes=modes), embedder, store=store,
                           cache=cache)
        wall = time.perf_counter() - started
        store.close()  # releases the folder before the scratch folder goes
    build = result.results[0]
    print(f"{wall:.1f} s wall: queries embedded {result.query_seconds:.1f} s, "
          f"chunking {build.seconds['chunking']:.1f} s, embedding {build.seconds['embedding']:.1f} s "
          f"({build.embedded} chunks embedded), indexing {build.seconds['indexing']:.1f} s; "
          f"{build.chunks} chunks of {build.mean_tokens:.0f} tokens"
          + (" (collection reused)" if build.reused else ""))
    print(result.summary())
    print()
    print(markdown_table(result))
    print()
    for line in moves_against_dense(result):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
