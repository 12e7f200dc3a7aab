"""`rag sweep --embedder A,B`: the embedder as a dimension of a sweep, its rows paired with the best like any other."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_children_cli import setup
from tests.store.test_crash_safety import rag


@pytest.mark.slow
def test_two_embedders_are_rows_of_one_sweep(tmp_path: Path):
    store, guide, queries = setup(tmp_path)
    swept = json.loads(rag(store, "sweep", str(guide), "--queries", str(queries), "--chunk-size", "60,80",
                           "--overlap", "0", "--mode", "dense", "--embedder", "fake:32,fake:64", "--json",
                           "--no-cache").stdout)
    rows = swept["configs"]
    assert sorted((r["embedder"], r["chunk_size"]) for r in rows) == [("fake:32", 60), ("fake:32", 80),
                                                                     ("fake:64", 60), ("fake:64", 80)]
    assert {r["collection"].rsplit("-", 2)[-2:][1] for r in rows} == {"32", "64"}  # a collection per embedder
    assert swept["embedder"] == "fake:32, fake:64"
    table = rag(store, "sweep", str(guide), "--queries", str(queries), "--chunk-size", "60", "--overlap", "0",
                "--mode", "dense", "--embedder", "fake:32,fake:64", "--no-cache").stdout
    header = table.splitlines()[0]
    assert "embedder" in header and "fake:32" in table and "fake:64" in table
    assert "60/0 child 128 dense fake:" in table  # the standing names the row with its embedder


@pytest.mark.slow
def test_apply_best_takes_one_embedder(tmp_path: Path):
    store, guide, queries = setup(tmp_path)
    refused = rag(store, "sweep", str(guide), "--queries", str(queries), "--chunk-size", "60", "--overlap", "0",
                  "--embedder", "fake:32,fake:64", "--apply-best", "documents", check=False)
    assert refused.returncode == 1 and "--apply-best takes one embedder" in refused.stderr
