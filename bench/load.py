"""Under load: does today's float32 engine lose more than raw torch fp32, and do the one-second slices cost?

    python -m bench.load [--load 0,3] [--threads 1] [--texts 48] [--rounds 2] [--seconds 1]

Issue 40 asked why today's engine, as fast as raw torch fp32 on a quiet machine, read 0.50x of it at load 5-6,
and whether the one-second pacing of an ingest and a sweep (rag.embeddings.pace: a first call of 2 texts, then
each call what the model did in one second before) makes batches too small when the CPU is busy. For each
number of busy processes (--load: plain Python loops, started before the measuring process and stopped after
it) one fresh process per thread count times, on the same German chunks (l2kurz.pdf, or the bundled sample):

- raw torch fp32 (bench.raw_e5), batches of 8 sorted by length: the reference;
- `local:fp32` and `local` (int8) in batches of 8 texts, longest first;
- `local:fp32` and `local` as an ingest embeds (rag.embeddings.pace.embed_chunks: paced calls of BATCH_SECONDS,
  1 s in the app; --seconds 1,3 times other lengths too).

Each round runs them all in turn, starting one further along each round, so a changing load falls on all alike.
It prints each one's seconds, its ratio to raw torch fp32 and the mean texts per model call, with the load
average before and after. The other load on the machine adds to --load: state it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUSY = "while True: pass"


def worker(paths: list[str], count: int, rounds: int, paces: list[float]) -> dict:
    """Time the ways of embedding count chunks of paths (paced at each of paces seconds), rounds times; return the
    figures."""
    from bench.raw_e5 import RawE5
    from rag.chunking import chunk_document
    from rag.documents import load_document
    from rag.embeddings import embed_chunks, embed_threads, get_embedder, tokenizer

    texts = []
    for path in paths:
        texts += [c.content for c in chunk_document(load_document(Path(path).read_bytes(), Path(path).name))]
    texts = texts[:count]
    raw, fp32, int8 = RawE5(tokenizer()), get_embedder("local:fp32"), get_embedder("local")
    ids = raw.ids(texts)
    calls: dict[str, list[int]] = {}

    class Counted:
        """An embedder that notes how many texts each model call gets."""

        def __init__(self, inner, name: str):
            self.inner, self.name = inner, name

        def __getattr__(self, attribute):
            return getattr(self.inner, attribute)

        def embed_documents(self, part):
            calls.setdefault(self.name, []).append(len(part))
            return self.inner.embed_documents(part)

    longest = sorted(texts, key=len, reverse=True)

    def eights(embedder, name):
        counted = Counted(embedder, name)
        return lambda: [counted.embed_documents(longest[i : i + 8]) for i in range(0, len(longest), 8)]

    def paced(embedder, name, seconds):
        return lambda: embed_chunks(texts, Counted(embedder, name), seconds=seconds)

    runs = {"raw torch fp32, batches of 8": lambda: raw.encode(ids)}
    for label, embedder in (("local:fp32", fp32), ("local (int8)", int8)):
        runs[f"{label}, batches of 8"] = eights(embedder, f"{label}, batches of 8")
        for seconds in paces:
            name = f"{label}, paced {seconds:g} s (ingest)"
            runs[name] = paced(embedder, name, seconds)
    for run in runs.values():
        run()  # warm-up: models loaded, the int8 model built or read
    calls.clear()
    names, seconds = list(runs), dict.fromkeys(runs, 0.0)
    for n in range(rounds):
        for name in names[n % len(names):] + names[: n % len(names)]:
            began = time.perf_counter()
            runs[name]()
            seconds[name] += time.perf_counter() - began
    return {"texts": len(texts), "rounds": rounds, "threads": embed_threads(), "seconds": seconds,
            "per_call": {name: sum(sizes) / len(sizes) for name, sizes in calls.items()}}


def measure(load: int, threads: int, paths: list[str], texts: int, rounds: int, paces: str) -> list[str]:
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(load)]
    try:
        time.sleep(2.0 if load else 0.0)
        before = _load()
        env = {**os.environ, "RAG_EMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
        done = subprocess.run([sys.executable, "-m", "bench.load", "--worker", os.pathsep.join(paths), str(texts),
                               str(rounds), paces], env=env, capture_output=True, text=True, cwd=ROOT, check=False)
        after = _load()
    finally:
        for process in busy:
            process.kill()
            process.wait()
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    found = json.loads(done.stdout.strip().splitlines()[-1])
    raw = found["seconds"]["raw torch fp32, batches of 8"]
    lines = []
    for name, seconds in found["seconds"].items():
        per_call = found["per_call"].get(name)
        lines.append(f"| {load} | {threads} | {name} | {seconds:.2f} | **{raw / seconds:.2f}x** | "
                     f"{'8.0' if per_call is None else f'{per_call:.1f}'} |")
    lines.append(f"| {load} | {threads} | ({found['texts']} chunks, {found['rounds']} rounds; load average {before} "
                 f"before, {after} after) | | | |")
    return lines


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", default="0,3", help="busy processes beside the measurement, e.g. 0,3")
    parser.add_argument("--threads", default="1")
    parser.add_argument("--texts", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", default="1", help="the paced calls' seconds to time, e.g. 1,3 (the app: 1)")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        paths, count, rounds, paces = args.worker
        print(json.dumps(worker(paths.split(os.pathsep), int(count), int(rounds),
                                [float(s) for s in paces.split(",")])))
        return 0
    from bench.material import german_pdfs

    pdfs = german_pdfs()
    paths = [str(p) for p in (pdfs[:1] or [ROOT / "rag/samples/incident-response.pdf"])]
    lines = ["| busy processes | threads | engine | seconds | x raw torch fp32 | texts per model call |",
             "|---|---|---|---|---|---|"]
    for load in (int(n) for n in args.load.split(",")):
        for threads in (int(t) for t in args.threads.split(",")):
            lines += measure(load, threads, paths, args.texts, args.rounds, args.seconds)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
