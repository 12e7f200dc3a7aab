"""Parent–child retrieval against today: the same chunks searched as themselves (child_size 0) and through their
children of N tokens, on the German XQuAD set and the English set, paired, in one run; and what children cost.

    python -m bench.children [--sets de,en,de-hard] [--child-sizes 64,128] [--chunk-size 350] [--overlap 50]
                             [--mode hybrid] [--embedder local] [--k 1,3,5,10] [--cache DIR]
                             [--distractors 48] [--prose FILE] [--cold]

Sets: "de" (XQuAD-de dev: 24 articles, one collection), "en" (bench/data/english) and "de-hard": the XQuAD-de
dev articles and questions in one collection together with --distractors German prose documents, so that
more passages compete for each question. The prose is Debian's German documentation, built once into
bench/out/german.txt by bench/data/german/fetch.sh (a copy of the shared german-corpus.sh: apt-get download and
dpkg -x, ~2.9 MB); it is cut at paragraph ends into pieces of about 20,000 characters, and --distractors of them,
evenly spaced over the whole text, become the documents german-prose-NN.txt (deterministic for one file).

For each set: one sweep of the configurations child_size 0 (today) and each N, at the same chunk_size and
overlap, searched in the same mode (default: hybrid with the default fusion, the app's default), so every side
sees the same parents and the same queries; relevance is judged on the returned parents. Prints per side MRR@10
and hit@k with their 95 % bootstrap intervals, then per metric the paired difference (N minus 0) with its 95 %
interval and sign-flip p-value (rag.evaluation.metrics.paired). Cost, same run: ingest seconds (embedding + indexing of
the sweep; the chunks' vectors come from the cache after the first row, so a child row counts its children,
unless --cold ingests each size as a sweep of its own from an empty cache: then chunks and children), points
and store folder size per collection, and the p50 / p95 of one search (top_k 10, the query vector given: server
time only) over the set's queries. The load average is printed with each set.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import bench.headers  # noqa: E402 (imported after the offline switches above)
from bench.headers import load_set as plain_set  # noqa: E402
from bench.paired import paired_table  # noqa: E402
from rag.documents import load_document  # noqa: E402
from rag.embeddings import EmbeddingCache, get_embedder  # noqa: E402
from rag.evaluation.metrics import parse_ks, parse_mode  # noqa: E402
from rag.evaluation.sweeps import Sweep, SweepConfig, run_sweep  # noqa: E402
from rag.retrieval import DEFAULT_FUSION  # noqa: E402
from rag.store import open_store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROSE = ROOT / "bench" / "out" / "german.txt"
PIECE_CHARS = 20_000


def prose_pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """Return text cut at paragraph ends (blank lines) into pieces of about size characters."""
    pieces, current = [], ""
    for paragraph in text.split("\n\n"):
        current += paragraph + "\n\n"
        if len(current) >= size:
            pieces.append(current.strip())
            current = ""
    return [*pieces, current.strip()] if current.strip() else pieces


def distractors(path: Path, count: int, size: int = PIECE_CHARS) -> list:
    """Return count German prose documents, evenly spaced pieces of the text at path (built once when missing)."""
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["bash", str(ROOT / "bench" / "data" / "german" / "fetch.sh"), str(path)], check=True)
    pieces = prose_pieces(path.read_text(encoding="utf-8"), size)
    chosen = sorted({len(pieces) * i // count for i in range(min(count, len(pieces)))})
    return [load_document(pieces[p].encode("utf-8"), f"german-prose-{n:02d}.txt") for n, p in enumerate(chosen, 1)]


def load_set(name: str, args: argparse.Namespace) -> tuple[list, list]:
    """Return (documents, queries) of "de", "en" or "de-hard" (de's articles and questions among prose)."""
    if name in ("de", "en"):
        return plain_set(name)
    if name != "de-hard":
        raise SystemExit(f"unknown set {name!r}: use de, en or de-hard")
    documents, queries = plain_set("de")
    return [*documents, *distractors(Path(args.prose), args.distractors)], queries


def folder_bytes(folder: Path) -> int:
    """Return the bytes a folder takes on disk (allocated blocks: the engine's files are sparse, mostly holes)."""
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file())


def search_times(store, collection: str, vectors, texts: list[str], embedder, mode) -> list[float]:
    """Return the milliseconds of one search per query (the vector given, so the store's time only)."""
    times = []
    for vector, text in zip(vectors, texts, strict=True):
        clock = time.perf_counter()
        store.search(collection, vector, embedder, mode.request(10), query_text=text)
        times.append(1000 * (time.perf_counter() - clock))
    return times


def measure(name: str, args: argparse.Namespace, embedder, cache: EmbeddingCache) -> dict:
    """Return every side's row, cost and the sweep's wall time for one set."""
    documents, queries = load_set(name, args)
    mode = parse_mode(args.mode, DEFAULT_FUSION)
    sizes = [0, *(int(s) for s in args.child_sizes.split(","))]
    configs = [SweepConfig(args.chunk_size, args.overlap, child_size=s) for s in sizes]
    with tempfile.TemporaryDirectory(prefix="rag-bench-children-") as scratch:
        store = open_store(path=scratch)
        started = time.perf_counter()
        sweeps = [[c] for c in configs] if args.cold else [configs]  # --cold: each size from an empty cache
        rows = [row for part in sweeps for row in run_sweep(
            Sweep(documents, queries, part, ks=parse_ks(args.k), modes=[mode]), embedder, store=store,
            cache=EmbeddingCache() if args.cold else cache).results]
        wall = time.perf_counter() - started
        vectors = cache.embed([q.text for q in queries], embedder, query=True)
        cost = {}
        for row in rows:
            times = search_times(store, row.collection, vectors, [q.text for q in queries], embedder, mode)
            times += search_times(store, row.collection, vectors, [q.text for q in queries], embedder, mode)
            points = store.client.count(row.collection).count
            cost[row.config.child_size] = {
                "ingest": row.seconds["embedding"] + row.seconds["indexing"], "points": points,
                "p50": statistics.median(times), "p95": statistics.quantiles(times, n=20)[-1]}
        store.close()
        for row in rows:  # the folder of each collection, after the store wrote everything
            found = [p for p in Path(scratch).rglob("*") if p.is_dir() and p.name == row.collection]
            cost[row.config.child_size]["bytes"] = folder_bytes(found[0]) if found else folder_bytes(Path(scratch))
    return {"name": name, "documents": len(documents), "queries": len(queries), "rows": rows,
            "wall": wall, "mode": mode.label, "cost": cost}


def report(found: dict, ks: tuple[int, ...]) -> list[str]:
    """Return the lines of one set: every side with intervals, the paired differences against 0, the cost."""
    rows = found["rows"]
    base = rows[0].evaluation
    deepest = ks[-1]
    metrics = [f"mrr@{deepest}", *(f"hit@{k}" for k in ks)]
    lines = [f"## {found['name']}: {found['documents']} documents, {found['queries']} queries, {found['mode']}, "
             f"{rows[0].chunks} chunks; {found['wall']:.0f} s"]
    for row in rows[1:]:
        size = row.config.child_size
        lines.append(f"### child_size {size} against 0")
        lines += paired_table(base, row.evaluation, metrics, ("child 0", f"child {size}"), f"child_size {size}")
    lines += ["| child_size | points | store MB | ingest s (embed + index) | search p50 ms | p95 ms |",
              "|---|---|---|---|---|---|"]
    for size, c in found["cost"].items():
        lines.append(f"| {size} | {c['points']} | {c['bytes'] / 1e6:.1f} | {c['ingest']:.1f} | {c['p50']:.1f} | "
                     f"{c['p95']:.1f} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="de,en")
    parser.add_argument("--child-sizes", default="64,128")
    parser.add_argument("--chunk-size", type=int, default=350)
    parser.add_argument("--overlap", type=int, default=50)
    parser.add_argument("--mode", default="hybrid", help="dense, sparse, hybrid (default fusion) or hybrid-<fusion>")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--k", default="1,3,5,10")
    parser.add_argument("--distractors", type=int, default=48, help="de-hard: how many German prose documents "
                        "join the XQuAD-de articles (default 48, twice as many as the articles)")
    parser.add_argument("--prose", default=str(PROSE), help="de-hard: the German prose file (default "
                        "bench/out/german.txt, built by bench/data/german/fetch.sh when missing)")
    parser.add_argument("--cold", action="store_true", help="ingest each child size from an empty embedding "
                        "cache, so its ingest seconds are its whole cost (chunks and children)")
    parser.add_argument("--cache", default=None, help="embedding cache folder (default: in memory)")
    parser.add_argument("--squad", default=None, help="XQuAD-de dev file (default: ../shared, or ../../shared from "
                        "a worktree)")
    args = parser.parse_args()
    shared = [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
    bench.headers.DEFAULT_SQUAD = Path(args.squad) if args.squad else next(
        (s / "data/xquad-de/xquad.de.dev.json" for s in shared if s.is_dir()), bench.headers.DEFAULT_SQUAD)
    ks = parse_ks(args.k)
    embedder = get_embedder(args.embedder)
    embedder.embed_documents(["warm-up"])  # the model loads here, not inside the figures
    cache = EmbeddingCache(args.cache)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {embedder.model_id}; chunk_size "
          f"{args.chunk_size}, overlap {args.overlap}; load {_load()}", flush=True)
    for name in args.sets.split(","):
        found = measure(name.strip(), args, embedder, cache)
        print("\n".join(report(found, ks)))
        print(f"load {_load()}\n", flush=True)
    return 0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    raise SystemExit(main())
