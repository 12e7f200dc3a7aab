"""bench.search: its default run answers the README's question, and --background-load times both sides."""

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
