"""Query latency of the store at 10k and 100k points (p50/p95), next to numpy brute force on the same vectors.

    python -m bench.search [--sizes 10000,100000] [--queries 200] [--top-k 10] [--dim 384] [--store memory|folder]

Vectors are random unit vectors around 200 cluster centres (384 dims, like all-MiniLM-L6-v2), written with
payloads the size of real chunks (600-token German text) into Qdrant's embedded engine through
Store.upsert_document, so the timed search is exactly what the app and CLI run (query_points, payload,
Hit conversion). The reference is the exact top_k by a matrix-vector product and argpartition in numpy.
Random vectors, not real embeddings: embedding 100k chunks with the local model would take hours here.
--store memory (default) fills the in-memory engine: searching is the same code as on a folder, but a
folder commits every point to SQLite on its own (qdrant-client's local persistence, ~300 points/s
here), which would make filling 100k points take minutes; --store folder measures that too.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from rag.chunking.chunker import Chunk, ChunkSettings
from rag.documents.model import Document, Page
from rag.store.open import open_store

ROOT = Path(__file__).resolve().parents[1]

TEXT = ("Die Auftragsklärung legt fest, was bis wann zu tun ist und wer daran beteiligt wird. " * 30)[:2400]
POINTS_PER_DOCUMENT = 1000


class BenchEmbedder:
    model_id, max_input_tokens = "bench:384", 512

    def __init__(self, dimension: int):
        self.dimension = dimension

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts):
        raise NotImplementedError("the benchmark writes precomputed vectors")


def unit_vectors(rng: np.random.Generator, count: int, centres: np.ndarray) -> np.ndarray:
    picks = centres[rng.integers(0, len(centres), count)]
    vectors = picks + 0.6 * rng.standard_normal(picks.shape).astype(np.float32) / np.sqrt(picks.shape[1])
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def fill(store, vectors: np.ndarray, embedder: BenchEmbedder) -> float:
    """Write vectors as documents of POINTS_PER_DOCUMENT chunks; return the seconds it took."""
    settings = ChunkSettings(600, 80)
    started = time.perf_counter()
    for first in range(0, len(vectors), POINTS_PER_DOCUMENT):
        rows = vectors[first : first + POINTS_PER_DOCUMENT]
        doc_id = f"doc-{first // POINTS_PER_DOCUMENT:05d}"
        document = Document(doc_id, f"{doc_id}.pdf", "pdf", (Page(1, TEXT),), TEXT)
        chunks = [Chunk(doc_id, i, TEXT, 600, ("Kapitel 1",), 1, 1, 0, len(TEXT)) for i in range(len(rows))]
        store.upsert_document("bench", document, chunks, rows, settings, embedder)
    return time.perf_counter() - started


def percentiles(seconds: list[float]) -> tuple[float, float]:
    return float(np.percentile(seconds, 50) * 1000), float(np.percentile(seconds, 95) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--store", choices=("memory", "folder"), default="memory")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((200, args.dim)).astype(np.float32)
    embedder = BenchEmbedder(args.dim)
    print(f"{'points':>8} {'engine':32} {'p50 ms':>8} {'p95 ms':>8} {'recall':>7}")
    for size in (int(s) for s in args.sizes.split(",")):
        vectors = unit_vectors(rng, size, centres)
        queries = unit_vectors(rng, args.queries, centres)
        with tempfile.TemporaryDirectory() as folder:
            store = open_store(":memory:" if args.store == "memory" else folder)
            fill_seconds = fill(store, vectors, embedder)
            store.search("bench", queries[0], embedder, top_k=args.top_k)  # warm-up
            qdrant, found = [], []
            for query in queries:
                started = time.perf_counter()
                hits = store.search("bench", query, embedder, top_k=args.top_k)
                qdrant.append(time.perf_counter() - started)
                found.append({(h.document_id, h.chunk_index) for h in hits})
            store.close()
        brute, recall = [], []
        for query, hits in zip(queries, found, strict=True):
            started = time.perf_counter()
            scores = vectors @ query
            top = np.argpartition(-scores, args.top_k)[: args.top_k]
            top = top[np.argsort(-scores[top])]
            brute.append(time.perf_counter() - started)
            exact = {(f"doc-{i // POINTS_PER_DOCUMENT:05d}", i % POINTS_PER_DOCUMENT) for i in top.tolist()}
            recall.append(len(exact & hits) / args.top_k)
        p50, p95 = percentiles(qdrant)
        print(f"{size:8,} {'Store.search (Qdrant ' + args.store + ')':32} {p50:8.2f} {p95:8.2f} {np.mean(recall):7.1%}")
        p50, p95 = percentiles(brute)
        print(f"{size:8,} {'numpy brute force (reference)':32} {p50:8.2f} {p95:8.2f} {1:7.1%}")
        print(f"{'':8} (writing {size:,} points took {fill_seconds:.1f} s, {size / fill_seconds:,.0f} points/s)")


if __name__ == "__main__":
    main()
