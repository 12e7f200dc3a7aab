"""bench.search: its default run answers the question of docs/benchmarks.md, and --background-load times both sides."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import search

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_run_is_numpy_exact_and_indexed_at_100000_without_the_old_engine(monkeypatch):
    calls = []
    monkeypatch.setattr(search, "run", lambda engine, size, args, folder=None, env=None: calls.append(
        (engine, size, (env or {}).get("RAG_QDRANT_ENGINE", "edge"))) or [{"fill_s": 1.0, "mode": "dense"}])
    monkeypatch.setattr(sys, "argv", ["bench.search", "--json"])
    search.main()
    assert {(e, s) for e, s, _ in calls} == {("numpy", 100_000), ("fill", 100_000), ("edge-exact", 100_000),
                                              ("edge-indexed", 100_000)}
    assert all(engine == "edge" for _, _, engine in calls)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_background_load_times_every_engine_quiet_and_loaded_in_one_run():
    done = subprocess.run([sys.executable, "-m", "bench.search", "--json", "--sizes", "300", "--indexed-sizes", "",
                           "--queries", "5", "--background-load", "1"], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True, timeout=280)
    report = json.loads(done.stdout)
    seen = {(r["engine"], r["mode"], r["background_load"]) for r in report["rows"]}
    for load in (0, 1):
        assert ("numpy", "dense", load) in seen and ("numpy (1 thread)", "dense", load) in seen
        assert {("edge-exact", mode, load) for mode in search.MODES} <= seen
    assert report["background_load"] == 1


def test_recall_is_checked_after_the_timed_searches_not_between_them(tmp_path, monkeypatch):
    """numpy's recall check reads every vector; between two timed searches it evicted the engine's data from the
    CPU caches (issue 30: an indexed search 3.7 ms that way, 2.6 ms without)."""
    import argparse

    from rag.store.client import Store
    from rag.store.open import open_store

    monkeypatch.setenv("RAG_QDRANT_ENGINE", "edge")
    args = argparse.Namespace(size=300, queries=4, dim=16, vectors="synthetic", bundle=None, top_k=3,
                              engine="edge-exact", folder=str(tmp_path / "store"))
    vectors, _, texts, _ = search.data(args.size, args.queries, args.dim)
    store = open_store(path=args.folder)
    search.fill(store, vectors, texts, search.BenchEmbedder(args.dim))
    store.close()
    order = []
    real_search, real_top = Store.search, search.exact_top
    monkeypatch.setattr(Store, "search", lambda self, *a, **k: order.append("search") or real_search(self, *a, **k))
    monkeypatch.setattr(search, "exact_top", lambda *a: order.append("check") or real_top(*a))
    rows = search.store_rows(args)
    dense = order[1: 1 + 2 * args.queries]  # after the warm-up search: the dense queries, then their checks
    assert dense == ["search"] * args.queries + ["check"] * args.queries
    assert rows[0]["mode"] == "dense" and 0 <= rows[0]["recall_at_10"] <= 1
