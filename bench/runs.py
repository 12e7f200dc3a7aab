"""Kept runs benchmark: what keeping a sweep costs next to the sweep itself, and listing and comparing runs.

    python -m bench.runs [--squad FILE] [--chunk-size 200,350,500] [--overlap 0,50] [--mode dense,sparse,hybrid]
                         [--embedder fake:64]

Runs one sweep over XQuAD-de dev (all articles) on an empty embedded Qdrant folder, then keeps it (the HTML report
built and every row's question outcomes written to runs.sqlite, as `rag sweep` does), lists the runs, and compares
the best row with every other row from a new RunLog (as after a restart). Prints each time beside the sweep's own
time (the reference, measured in the same run) and the load average at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from rag.embeddings import get_embedder
from rag.evaluation.metrics import parse_modes
from rag.evaluation.querysets import import_squad, sweep_input
from rag.evaluation.sweeps import Sweep, grid, parse_sizes, run_sweep
from rag.runs import RunLog, compare_runs, keep_sweep
from rag.store import open_store

DEFAULT_SQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "xquad-de" / "xquad.de.dev.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", default=str(DEFAULT_SQUAD))
    parser.add_argument("--chunk-size", default="200,350,500")
    parser.add_argument("--overlap", default="0,50")
    parser.add_argument("--mode", default="dense,sparse,hybrid")
    parser.add_argument("--embedder", default="fake:64")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    documents, queries = sweep_input(import_squad(Path(args.squad).read_bytes(), args.squad, 1000))
    configs, _ = grid(parse_sizes(args.chunk_size, "sizes", 4), parse_sizes(args.overlap, "overlaps", 0))
    embedder = get_embedder(args.embedder)
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(path=str(Path(folder) / "qdrant"))
        clock = time.perf_counter()
        result = run_sweep(Sweep(documents, queries, configs, modes=parse_modes(args.mode)), embedder, store=store)
        sweep = time.perf_counter() - clock
        clock = time.perf_counter()
        run_id, warning = keep_sweep(store, result, queries, embedder=embedder, query_set="xquad", seconds=sweep)
        keep = time.perf_counter() - clock
        assert warning is None, warning
        size = (Path(folder) / "runs.sqlite").stat().st_size
        log = RunLog(Path(folder) / "runs.sqlite")
        clock = time.perf_counter()
        listed = log.runs()
        listing = time.perf_counter() - clock
        clock = time.perf_counter()
        for row in range(1, len(result.results) + 1):
            compare_runs(log, str(run_id), f"{run_id}/{row}")
        comparing = (time.perf_counter() - clock) / len(result.results)
        store.close()
    rows = len(listed[0]["rows"])
    print(f"{len(documents)} documents, {len(queries)} questions, {rows} rows, {args.embedder}")
    print(f"sweep (reference)            {sweep:7.2f} s")
    print(f"keep it (report + outcomes)  {keep:7.2f} s  ({keep / sweep:.1%} of the sweep); runs.sqlite "
          f"{size / 1e6:.1f} MB")
    print(f"list the runs                {listing:7.3f} s")
    print(f"compare two rows (mean)      {comparing:7.3f} s")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
