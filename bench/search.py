"""Search latency of the embedded engines through Store.search, next to numpy brute force, in one run.

    python -m bench.search [--json] [--sizes 100000] [--queries 100] [--top-k 10] [--dim 384]
                           [--indexed-sizes 100000] [--local-sizes ''] [--local-queries 20]
                           [--vectors synthetic|real] [--background-load N]

The defaults answer the question of docs/benchmarks.md: numpy, Qdrant Edge exact and Qdrant Edge indexed at 100,000
points (the old engine only when --local-sizes names sizes: filling it takes over 20 minutes at 100,000).
--background-load N: every engine is timed twice in the same run, on a quiet machine and beside N busy
processes (pure-Python spin loops, niced like nothing else: the load an ingest or a sweep puts on an analyst's
laptop); rows carry "background_load".

For each size N a fresh process per engine (so open time and resident memory are its own) runs the same
queries through Store.search in the modes dense, sparse (keyword, BM25) and hybrid (rrf), and prints rows
{"points", "engine", "mode", "p50_ms", "p95_ms", "open_s", "rss_mb", "recall_at_10", ...}:

- engine "numpy": the exact top_k by one matrix-vector product and argpartition (dense only; the reference);
  "numpy (1 thread)": the same with OpenBLAS on one thread, as the engine scans its one segment;
- "edge-exact": Qdrant Edge, the default embedded engine, on a folder, every vector compared (no index);
- "edge-indexed": the same folder after the engine built its HNSW index (sizes in --indexed-sizes: the build
  takes minutes at 100k on 2 cores), recall@10 against numpy's exact top 10;
- "local": qdrant-client's local mode (the engine before), in memory (filling its folder commits every point to
  SQLite on its own, minutes at 100k; its open time is measured on a folder for sizes up to 10k); above 10k
  dense only (its keyword scan is pure Python: seconds per query at 100k).

open_s: opening the store and answering the first search. Vectors are random unit vectors around 200 cluster
centres (384 dimensions, like e5-small; random, not real embeddings, which would take hours to make here),
written through Store.upsert_document with chunk texts drawn from a 4,000-word vocabulary, so the keyword
vectors differ as real ones do. The machine's load average is printed with the rows (ratios in one run hold).

--vectors real: real embeddings instead (bench/realvec.py): chunks of ~3 MB of German prose embedded with the
default local model (multilingual-e5-small, document prompt), queried with the German XQuAD questions (query
prompt; their texts are the keyword queries). Embedded once (10-20 chunks/s on 2 shared cores) and cached under
bench/out/realvec/; `python -m bench.realvec --points N --minutes M` fills the cache ahead. Every row says
which vectors it ran on ("vectors").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
POINTS_PER_DOCUMENT = 1000
HELD_OUT = 200  # queries the index build checks its recall with, none of them timed
MODES = ("dense", "sparse", "hybrid")


class BenchEmbedder:
    model_id, max_input_tokens, query_prompt, document_prompt = "bench:384", 512, "", ""

    def __init__(self, dimension: int):
        self.dimension = dimension

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed_documents(self, texts):
        raise NotImplementedError("the benchmark writes precomputed vectors")

    embed_query = embed_documents


def data(size: int, queries: int, dim: int, vectors: str = "synthetic", bundle: str | None = None
         ) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Return (vectors, query vectors, chunk texts, query texts): the same for every process (each seeded on its
    own, so that the points do not depend on the number of queries); real ones from the bundle main() wrote."""
    if vectors == "real":
        from bench import realvec

        return realvec.read_bundle(bundle, size, queries)
    centres = np.random.default_rng(7).standard_normal((200, dim)).astype(np.float32)

    def unit(count: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        picks = centres[rng.integers(0, len(centres), count)]
        v = picks + 0.6 * rng.standard_normal(picks.shape).astype(np.float32) / np.sqrt(dim)
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    vocabulary = [f"begriff{n}" for n in range(4000)]
    weights = 1 / np.arange(1, 4001)  # Zipf: a few common words, many rare ones
    weights /= weights.sum()
    words = np.random.default_rng(9).choice(len(vocabulary), size=(size, 60), p=weights)
    texts = [" ".join(vocabulary[i] for i in row) for row in words]
    asked = np.random.default_rng(10).choice(len(vocabulary), size=(queries, 3), p=weights)
    return unit(size, 11), unit(queries, 12), texts, [" ".join(vocabulary[i] for i in row) for row in asked]


def held_out(args: argparse.Namespace) -> np.ndarray:
    """Return HELD_OUT query vectors besides the timed ones: the questions of the index build's recall check."""
    _, more, _, _ = data(args.size, args.queries + HELD_OUT, args.dim, args.vectors, args.bundle)
    return more[args.queries:]


def fill(store, vectors: np.ndarray, texts: list[str], embedder: BenchEmbedder) -> None:
    from rag.chunking import Chunk, ChunkSettings
    from rag.documents import Document, Page

    for first in range(0, len(vectors), POINTS_PER_DOCUMENT):
        rows = range(first, min(first + POINTS_PER_DOCUMENT, len(vectors)))
        doc_id = f"doc-{first // POINTS_PER_DOCUMENT:05d}"
        body = "\n".join(texts[i] for i in rows)
        document = Document(doc_id, f"{doc_id}.pdf", "pdf", (Page(1, body),), body)
        chunks = [Chunk(doc_id, i - first, texts[i], 60, (), 1, 1, 0, len(texts[i])) for i in rows]
        store.upsert_document("bench", document, chunks, vectors[first : rows.stop], ChunkSettings(600, 0), embedder,
                              language="none", child_size=0)  # the store's search of chunks, no children


def percentiles(seconds: list[float]) -> tuple[float, float]:
    return round(float(np.percentile(seconds, 50) * 1000), 3), round(float(np.percentile(seconds, 95) * 1000), 3)


def rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def numpy_rows(args: argparse.Namespace) -> list[dict]:
    vectors, queries, _, _ = data(args.size, args.queries, args.dim, args.vectors, args.bundle)
    seconds = []
    for query in queries:
        started = time.perf_counter()
        scores = vectors @ query
        top = np.argpartition(-scores, args.top_k)[: args.top_k]
        top[np.argsort(-scores[top])]
        seconds.append(time.perf_counter() - started)
    p50, p95 = percentiles(seconds)
    return [{"mode": "dense", "p50_ms": p50, "p95_ms": p95, "open_s": 0.0, "recall_at_10": 1.0}]


def exact_top(vectors: np.ndarray, query: np.ndarray, k: int) -> set[tuple[str, int]]:
    top = np.argpartition(-(vectors @ query), k)[:k]
    return {(f"doc-{i // POINTS_PER_DOCUMENT:05d}", i % POINTS_PER_DOCUMENT) for i in top.tolist()}


def store_rows(args: argparse.Namespace) -> list[dict]:
    """Open (or, for local, fill in memory) the store, then time every mode; rows without "points"/"engine"."""
    from rag.retrieval import SearchRequest
    from rag.store import open_store

    vectors, queries, texts, asked = data(args.size, args.queries, args.dim, args.vectors, args.bundle)
    embedder = BenchEmbedder(args.dim)
    extra: dict = {}
    started = time.perf_counter()
    if args.engine == "local" and not args.folder:
        store = open_store(":memory:")
        fill(store, vectors, texts, embedder)
        started = time.perf_counter()  # the memory engine has no open; open_s is left out
    else:
        store = open_store(path=args.folder)
    if args.engine == "edge-indexed":
        built = time.perf_counter()
        # the app's build (a child process on a copy, then swapped in), its recall checked with held-out questions
        state = store.build_index("bench", questions=held_out(args))
        extra = {"index_build_s": round(time.perf_counter() - built, 1), "indexed": state.indexed,
                 "hnsw_ef": state.hnsw_ef, "index_recall_at_10": state.recall_at_10,
                 "segments": store.client.index_state("bench")["segments"]}
    store.search("bench", queries[0], embedder, SearchRequest(top_k=args.top_k))
    open_s = None if args.engine == "local" and not args.folder else round(time.perf_counter() - started, 3)
    if args.engine == "edge-indexed":
        open_s = None  # the build is in index_build_s; opening an indexed folder: the edge-exact row of a rerun
    rows = []
    for mode in MODES if args.engine != "local" or args.size <= 10_000 else ("dense",):
        seconds, answers = [], []
        for query, text in zip(queries, asked, strict=True):
            began = time.perf_counter()
            hits = store.search("bench", query, embedder, SearchRequest(mode=mode, top_k=args.top_k), query_text=text)
            seconds.append(time.perf_counter() - began)
            answers.append({(h.document_id, h.chunk_index) for h in hits})
        # checked after the timing: numpy's product reads every vector, which evicted the engine's from the CPU
        # caches between two timed searches (an indexed search took 3.7 ms that way, 2.6 ms without)
        recall = [len(found & exact_top(vectors, query, args.top_k)) / args.top_k
                  for found, query in zip(answers, queries, strict=True)] if mode == "dense" else []
        p50, p95 = percentiles(seconds)
        row = {"mode": mode, "p50_ms": p50, "p95_ms": p95, "open_s": open_s, **extra}
        rows.append(row | ({"recall_at_10": round(float(np.mean(recall)), 4)} if recall else {}))
    store.close()
    return rows


def worker(args: argparse.Namespace) -> None:
    if args.engine == "fill":
        from rag.store import open_store

        vectors, _, texts, _ = data(args.size, args.queries, args.dim, args.vectors, args.bundle)
        store = open_store(path=args.folder)
        started = time.perf_counter()
        fill(store, vectors, texts, BenchEmbedder(args.dim))
        store.close()
        print(json.dumps([{"fill_s": round(time.perf_counter() - started, 1)}]))
        return
    rows = numpy_rows(args) if args.engine == "numpy" else store_rows(args)
    print(json.dumps([row | {"rss_mb": rss_mb()} for row in rows]))


def spin(stop) -> None:
    """Keep one core busy until stop is set (a background process of --background-load)."""
    while not stop.is_set():
        sum(range(20_000))


@contextlib.contextmanager
def background_load(processes: int):
    """Run processes busy loops while the block runs (none for 0)."""
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=spin, args=(stop,), daemon=True) for _ in range(processes)]
    for p in spinners:
        p.start()
    try:
        yield
    finally:
        stop.set()
        for p in spinners:
            p.join(5)
            if p.is_alive():
                p.kill()


def timed(engine: str, size: int, args: argparse.Namespace, folder: str | None = None, env: dict | None = None
          ) -> list[dict]:
    """Return the rows of one worker, quiet and (with --background-load N) again beside N busy processes."""
    rows = [r | {"background_load": 0} for r in run(engine, size, args, folder, env)]
    if args.background_load:
        with background_load(args.background_load):
            rows += [r | {"background_load": args.background_load} for r in run(engine, size, args, folder, env)]
    return rows


def run(engine: str, size: int, args: argparse.Namespace, folder: str | None = None, env: dict | None = None
        ) -> list[dict]:
    queries = args.local_queries if engine == "local" else args.queries
    command = [sys.executable, "-m", "bench.search", "--worker", engine, "--size", str(size), "--queries",
               str(queries), "--top-k", str(args.top_k), "--dim", str(args.dim)] + (["--folder", folder]
                                                                                         if folder else [])
    command += ["--vectors", args.vectors] + (["--bundle", args.bundle] if args.bundle else [])
    # Qdrant Edge unless env says otherwise (the local mode's rows)
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "RAG_QDRANT_ENGINE": "edge", **(env or {})}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=ROOT, check=False)
    if done.returncode:
        raise SystemExit(f"bench worker {engine} at {size} failed: {done.stderr.strip()[-400:]}")
    rows = [{"points": size, "engine": engine, "vectors": args.vectors, "queries": queries, **row}
            for row in json.loads(done.stdout.strip().splitlines()[-1])]
    print(json.dumps(rows), file=sys.stderr, flush=True)  # each process's rows as they come
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print {'rows': [...], 'load_average': [...]}")
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--indexed-sizes", default="100000", help="sizes to build the HNSW index for ('' for none)")
    parser.add_argument("--local-sizes", default="", help="sizes to run qdrant-client's local mode at (slow: the "
                        "engine before Qdrant Edge, over 20 minutes to fill at 100,000)")
    parser.add_argument("--background-load", type=int, default=0, metavar="N",
                        help="also time every engine beside N busy processes, in the same run")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--local-queries", type=int, default=20, help="queries for qdrant-client's local mode (slow)")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--vectors", choices=("synthetic", "real"), default="synthetic",
                        help="random clustered unit vectors, or real e5 embeddings of German prose (cached)")
    parser.add_argument("--bundle", help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        args.engine = args.worker
        return worker(args)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.vectors == "real" and not args.bundle and sizes:  # embedded (what the cache lacks) in a process of its
        # own: on Linux a child inherits its parent's peak RSS, which the workers report
        command = [sys.executable, "-m", "bench.realvec", "--points", str(max(sizes)), "--queries",
                   str(max(args.queries, args.local_queries) + HELD_OUT), "--bundle", str(args.dim)]
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, cwd=ROOT, check=False,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        if done.returncode:
            raise SystemExit(f"preparing the real vectors failed (exit {done.returncode}); see the lines above")
        args.bundle = json.loads(done.stdout.strip().splitlines()[-1])["bundle"]
    rows: list[dict] = []
    started = time.perf_counter()
    for size in (int(s) for s in args.sizes.split(",") if s):
        rows += timed("numpy", size, args)
        # numpy's BLAS multiplies on every core, the engine scans a segment on one: the same product on one thread
        one = {"OPENBLAS_NUM_THREADS": "1"}
        rows += [r | {"engine": "numpy (1 thread)"} for r in timed("numpy", size, args, env=one)]
        with tempfile.TemporaryDirectory() as folder:
            fill_s = run("fill", size, args, folder)[0]["fill_s"]
            rows += [r | {"fill_s": fill_s} for r in timed("edge-exact", size, args, folder)]
            if str(size) in args.indexed_sizes.split(","):
                rows += run("edge-indexed", size, args, folder)  # the build, timed once, quiet
                rows += [r | {"engine": "edge-indexed (reopened)"} for r in timed("edge-exact", size, args, folder)]
        if str(size) in args.local_sizes.split(","):
            rows += timed("local", size, args, env={"RAG_QDRANT_ENGINE": "local"})
        if size <= 10_000 and str(size) in args.local_sizes.split(","):
            with tempfile.TemporaryDirectory() as folder:
                env = {"RAG_QDRANT_ENGINE": "local"}
                run("fill", size, args, folder, env)
                rows += [r | {"engine": "local (folder)"} for r in timed("local", size, args, folder, env)]
    report = {"rows": rows, "load_average": [round(x, 2) for x in os.getloadavg()], "vectors": args.vectors,
              "background_load": args.background_load, "seconds": round(time.perf_counter() - started, 1)}
    if args.json:
        print(json.dumps(report, indent=1))
        return
    header = ("points", "engine", "busy", "mode", "p50 ms", "p95 ms", "open s", "RSS MB", "recall")
    print("{:>8} {:24} {:>4} {:7} {:>8} {:>8} {:>7} {:>7} {:>7}".format(*header))
    for r in rows:
        opened = "" if r.get("open_s") is None else f"{r['open_s']:.2f}"
        recall = "" if r.get("recall_at_10") is None else f"{r['recall_at_10']:.3f}"
        print(f"{r['points']:8,} {r['engine']:24} {r.get('background_load', 0):4} {r['mode']:7} {r['p50_ms']:8.2f} "
              f"{r['p95_ms']:8.2f} {opened:>7} {r['rss_mb']:7.0f} {recall:>7}")
    print(f"load average {report['load_average']}, {args.vectors} vectors, {report['seconds']} s")


if __name__ == "__main__":
    main()
