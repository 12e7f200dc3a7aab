"""What a read through the app costs (rag.store.reads): the CLI beside the app against a process that opens the
folder itself.

    python -m bench.reads [--squad FILE] [--copies 6] [--embedder fake:1024] [--queries 60]

Builds one embedded folder from XQuAD-de dev (every paragraph a document, --copies times with a line that
tells them apart; 60-token chunks), copies it, and lets a holder process open copy A and serve its reads, as the
app does. In this process, copy B is opened directly (the reference: what the app's own pages and a CLI alone
do) and copy A is read through the holder; the two are timed in turn, query by query, so load affects both:
hybrid searches (top_k 5, the queries embedded once beforehand), the document listing and the collection
listing, each search's answer checked equal on both. Then the whole command, `rag search --json`, alone on B and
beside the holder on A. Prints p50/p90 in ms, the folder size and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rag import pipeline
from rag.chunking import ChunkSettings
from rag.documents import SourceFile
from rag.embeddings import get_embedder
from rag.retrieval import SearchRequest
from rag.store import open_store

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SQUAD = ROOT.parent / "shared" / "data" / "xquad-de" / "xquad.de.dev.json"
HOLD = ("import sys; from rag.store.open import open_store; from rag.store.reads import serve_reads; "
        "serve_reads(open_store(path=sys.argv[1])); print('ready', flush=True); sys.stdin.read()")


def build(folder: str, squad: dict, copies: int, spec: str) -> int:
    """Ingest every paragraph of squad copies times into collection "c"; return the chunk count."""
    files = [SourceFile(f"{article['title']}-{i}-{k}.txt", f"{paragraph['context']}\n\nAbschrift {k}.".encode())
             for k in range(copies) for article in squad["data"] for i, paragraph in enumerate(article["paragraphs"])]
    store = open_store(path=folder)
    results = pipeline.ingest(files, "c", ChunkSettings(60, 10, "structure"), get_embedder(spec), store=store)
    store.close()
    return sum(r.chunks for r in results)


def timed(action) -> float:
    began = time.perf_counter()
    action()
    return (time.perf_counter() - began) * 1000


def line(name: str, alone: list[float], through: list[float]) -> str:
    def p(values: list[float], q: int) -> float:
        return statistics.quantiles(values, n=10)[q - 1] if len(values) > 1 else values[0]

    extra = statistics.median(through) - statistics.median(alone)
    return (f"{name:<28} alone p50 {statistics.median(alone):8.2f} p90 {p(alone, 9):8.2f}   through the app p50 "
            f"{statistics.median(through):8.2f} p90 {p(through, 9):8.2f}   ({extra:+.2f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", default=str(DEFAULT_SQUAD))
    parser.add_argument("--copies", type=int, default=6)
    parser.add_argument("--embedder", default="fake:1024")
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    squad = json.loads(Path(args.squad).read_text(encoding="utf-8"))
    questions = [q["question"] for a in squad["data"] for p in a["paragraphs"] for q in p["qas"]][:args.queries]
    work = tempfile.mkdtemp(prefix="bench-reads-")
    a, b = os.path.join(work, "a"), os.path.join(work, "b")
    try:
        chunks = build(a, squad, args.copies, args.embedder)
        shutil.copytree(a, b)
        size = sum(f.stat().st_size for f in Path(a).rglob("*") if f.is_file())
        print(f"{chunks:,} chunks, {args.embedder}, folder {size / 1e6:.1f} MB")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        holder = subprocess.Popen([sys.executable, "-c", HOLD, a], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "ready"
            alone, through = open_store(path=b), open_store(path=a, read_only=True)
            compare(alone, through, questions, args.embedder)
            alone.close()  # the command alone opens b itself
            through.close()
            commands(a, b, questions[0], env)
        finally:
            holder.kill()
            holder.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


def compare(alone, through, questions: list[str], spec: str) -> None:
    embedder = get_embedder(spec)
    vectors = embedder.embed_query(questions)
    times: dict[str, tuple[list[float], list[float]]] = {"search (hybrid, top_k 5)": ([], []),
                                                         "documents (listing)": ([], []), "collections": ([], [])}
    for i, (question, vector) in enumerate(zip(questions, vectors, strict=True)):
        answers = []
        for side, store in enumerate((alone, through)):
            started = time.perf_counter()
            answers.append(pipeline.search(question, "c", SearchRequest(mode="hybrid", top_k=5), store=store,
                                           embedder=embedder, query_vector=vector))
            times["search (hybrid, top_k 5)"][side].append((time.perf_counter() - started) * 1000)
            if i % 6 == 0:
                times["documents (listing)"][side].append(timed(lambda s=store: s.documents("c")))
                times["collections"][side].append(timed(lambda s=store: s.collections()))
        assert [(h.chunk_id, h.score) for h in answers[0]] == [(h.chunk_id, h.score) for h in answers[1]]
    for name, (alone_ms, through_ms) in times.items():
        print(line(name, alone_ms, through_ms))


def commands(a: str, b: str, question: str, env: dict) -> None:
    walls: tuple[list[float], list[float]] = ([], [])
    for _ in range(3):
        for side, folder in enumerate((b, a)):
            run = [sys.executable, "-m", "rag", "--store", folder, "search", question, "--collection", "c", "--json"]
            walls[side].append(timed(lambda r=run: subprocess.run(r, cwd=ROOT, env=env, capture_output=True,
                                                                  check=True)))
    print(line("`rag search --json` command", *walls))


if __name__ == "__main__":
    main()
