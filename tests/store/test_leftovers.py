"""What killed processes leave in an embedded folder is removed by the next open, and nothing of the data goes with it
(rag.store.edge.leftovers): the engine's half-built segments of a killed vacuum, a collection.json not yet renamed
into place, a killed move's staging folder, an endpoint file not yet renamed. Planted from real files, and once
made by a real kill -9 of a process inside the engine's vacuum."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag import pipeline
from rag.retrieval import SearchRequest
from rag.store.edge import EdgeClient
from rag.store.open import open_store
from tests.conftest import ROOT, fake_embedder, ingest, make_document

WATCH_S = 60  # how long the parent watches for the engine's builder folder before it gives up (a bound, not a figure)


def searched(folder: Path) -> tuple:
    store = open_store(path=str(folder))
    try:
        hits = pipeline.search("Passwörter", "documents", SearchRequest(top_k=5, mode="hybrid"), store=store,
                               embedder=fake_embedder())
        return [c.points for c in store.collections()], [(h.chunk_id, h.score) for h in hits]
    finally:
        store.close()


def test_an_open_removes_what_killed_writers_left_and_keeps_the_data(tmp_path: Path) -> None:
    folder = tmp_path / "qdrant"
    store = open_store(path=str(folder))
    ingest(store, fake_embedder(), make_document())
    store.close()
    before = searched(folder)
    collection = folder / "edge" / "documents"
    (segment,) = (collection / "shard" / "segments").iterdir()
    builder = collection / "shard" / "temp_segments" / "segment_builder_Xy12ab"
    shutil.copytree(segment, builder / "segment")  # a real segment's files, as the engine had begun writing them
    half_config = collection / "collection.json.0123456789abcdef0123456789abcdef.tmp"
    half_config.write_text('{"name": "documents", "vec', encoding="utf-8")
    staging = folder / ".migrating-20260101-120000"
    shutil.copytree(collection, staging / "edge" / "documents")
    endpoint = folder / ".reads.json.fedcba9876543210fedcba9876543210.tmp"
    endpoint.write_text("{}", encoding="utf-8")

    assert searched(folder) == before  # the open that swept them answers as before
    assert not builder.exists() and (collection / "shard" / "temp_segments").is_dir()
    assert not half_config.exists() and not staging.exists() and not endpoint.exists()
    assert sorted(os.listdir(collection)) == ["collection.json", "shard"]
    assert sorted(p.name for p in folder.iterdir()) == [".lock", "edge"]


# The child: a collection of POINTS points, then a delete of half of them, whose vacuum builds a new segment in
# shard/temp_segments/segment_builder_*; the parent kills it (SIGKILL) as soon as that folder appears.
VACUUM = """
import sys
import numpy as np
from qdrant_client import models
from rag.store.edge import EdgeClient
client, points = EdgeClient(sys.argv[1]), int(sys.argv[2])
client.create_collection("c", vectors_config={"d": models.VectorParams(size=32, distance=models.Distance.COSINE)})
vectors = np.random.default_rng(0).standard_normal((points, 32))
client.upsert("c", [models.PointStruct(id=i, vector={"d": v.tolist()}, payload={"n": i})
                    for i, v in enumerate(vectors)])
print("ready", flush=True)
client.delete("c", models.PointIdsList(points=list(range(0, points, 2))))
print("vacuumed", flush=True)
"""


def killed_in_the_vacuum(folder: Path, points: int) -> list[Path]:
    """Run VACUUM on folder and kill it once the engine's builder folder exists; return the builders found."""
    child = subprocess.Popen([sys.executable, "-c", VACUUM, str(folder), str(points)], cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout.readline().strip() == "ready"
        temp = folder / "edge" / "c" / "shard" / "temp_segments"
        deadline = time.monotonic() + WATCH_S
        while child.poll() is None and time.monotonic() < deadline:
            found = list(temp.glob("segment_builder_*")) if temp.is_dir() else []
            if found:
                child.send_signal(signal.SIGKILL)
                return found
            time.sleep(0.0005)
        return []
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()


@pytest.mark.crash
def test_a_vacuum_killed_while_the_engine_builds_a_segment_leaves_nothing_after_the_next_open(tmp_path: Path) -> None:
    folder, points = tmp_path / "qdrant", 4000
    builders = killed_in_the_vacuum(folder, points)
    assert builders, "the vacuum ended before its builder folder was seen"
    assert all(b.exists() for b in builders)  # what the kill left
    client = EdgeClient(str(folder))
    try:
        assert not any(b.exists() for b in builders)
        assert client.count("c").count == points // 2  # the delete was in the log: replayed, nothing lost
        kept = client.retrieve("c", [1, 2, points - 1], with_payload=True)
        assert sorted(r.payload["n"] for r in kept) == [1, points - 1]
    finally:
        client.close()
