"""Folders written by qdrant-client's local mode (the engine before Qdrant Edge) move to Edge on first open.

The old folder is made for real: RAG Lab's own ingest with RAG_QDRANT_ENGINE=local (qdrant-client local mode,
sqlite), plus a foreign collection with an unnamed vector. The move must keep every point, vector, payload and
collection setting (searches answer the same), keep a backup, and when it fails leave the old files as they were.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag import pipeline
from rag.errors import StoreError
from rag.retrieval import SearchRequest
from rag.store.edge import EdgeClient
from rag.store.edge import migrate as migration
from rag.store.open import open_store
from tests.conftest import fake_embedder, ingest, make_document, make_foreign

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ("Passwörter", "Zeichen lang", "protokollieren")


def old_folder(folder: Path, monkeypatch) -> dict:
    """Write a folder with qdrant-client's local mode; return what it answers (searches, listings, counts)."""
    monkeypatch.setenv("RAG_QDRANT_ENGINE", "local")
    store = open_store(path=str(folder))
    try:
        embedder = fake_embedder()
        ingest(store, embedder, make_document())
        store.save_collection_setting("documents", "fusion", "convex:w=0.6")
        make_foreign_named(store)
        return answers(store, embedder)
    finally:
        store.close()
        monkeypatch.setenv("RAG_QDRANT_ENGINE", "edge")  # the engine folders are moved to


def make_foreign_named(store) -> None:
    """A foreign collection 'fremd' (one unnamed 1536-dim vector, integer ids) beside RAG Lab's 'documents'."""
    client = store.client

    class Renamed:  # make_foreign writes "documents"; put it under another name
        def create_collection(self, name, **kwargs):
            client.create_collection("fremd", **kwargs)

        def upsert(self, name, points):
            client.upsert("fremd", points)

    make_foreign(Renamed())


def answers(store, embedder) -> dict:
    searches = {}
    for mode in ("dense", "sparse", "hybrid"):
        for query in QUERIES:
            hits = pipeline.search(query, "documents", SearchRequest(top_k=5, mode=mode), store=store,
                                   embedder=embedder)
            # equal scores come in any order, in either engine (qdrant-client's own differs between opens), so
            # which of those tied at the cut-off made the top 5 is left open
            scores = [round(h.score, 5) for h in hits]
            searches[f"{mode}:{query}"] = scores, sorted(h.chunk_id for h in hits if round(h.score, 5) > scores[-1])
    foreign = pipeline.search("Passwörter", "fremd", SearchRequest(top_k=3), store=store, embedder=fake_embedder(1536))
    return {"collections": [(c.name, c.points, c.embedder, c.sparse) for c in store.collections()],
            "documents": store.documents("documents"), "searches": searches,
            "foreign": [(h.content, round(h.score, 5)) for h in foreign],
            "fusion": store.collection_setting("documents", "fusion")}


def fingerprint(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"}


def test_an_old_folder_moves_on_first_open_with_everything_it_held(tmp_path: Path, monkeypatch):
    folder = tmp_path / "qdrant"
    before = old_folder(folder, monkeypatch)
    old_files = fingerprint(folder)
    assert "meta.json" in old_files and before["collections"][0][1] > 3

    store = open_store(path=str(folder))
    try:
        assert isinstance(store.client, EdgeClient)
        assert answers(store, fake_embedder()) == before  # same points, vectors, payloads, settings, scores
    finally:
        store.close()
    assert not (folder / "meta.json").exists() and not (folder / "collection").exists()
    (backup,) = folder.glob("local-backup-*")
    kept = {k: v for k, v in fingerprint(backup).items() if k != migration.MARKER}  # and the marker: complete
    assert kept == old_files  # the old files, byte for byte

    again = open_store(path=str(folder))  # the next open finds Edge data and moves nothing
    try:
        assert [c.points for c in again.collections()] == [c[1] for c in before["collections"]]
    finally:
        again.close()
    assert len(list(folder.glob("local-backup-*"))) == 1


def test_a_failed_move_leaves_the_old_data_untouched_and_says_so(tmp_path: Path, monkeypatch):
    folder = tmp_path / "qdrant"
    before = old_folder(folder, monkeypatch)
    old_files = fingerprint(folder)
    real_upsert, calls = EdgeClient.upsert, []

    def losing_points(self, name, points, **kwargs):  # the second collection loses a point on the way
        calls.append(name)
        real_upsert(self, name, points[:-1] if name == "fremd" else points, **kwargs)

    monkeypatch.setattr(EdgeClient, "upsert", losing_points)
    with pytest.raises(StoreError) as failed:
        open_store(path=str(folder))
    message = str(failed.value)
    assert "\n" not in message and "old data is untouched" in message and "'fremd' has 3 points but 2" in message
    assert "fremd" in calls and fingerprint(folder) == old_files  # byte for byte, and no backup or staging left
    assert sorted(os.listdir(folder)) == [".lock", "collection", "edge", "meta.json"]
    assert os.listdir(folder / "edge") == []

    monkeypatch.setenv("RAG_QDRANT_ENGINE", "local")  # the old engine still reads it
    store = open_store(path=str(folder))
    try:
        assert answers(store, fake_embedder()) == before
    finally:
        store.close()


@pytest.mark.slow
def test_rag_migrate_prints_what_moved(tmp_path: Path, monkeypatch):
    folder = tmp_path / "qdrant"
    before = old_folder(folder, monkeypatch)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env["RAG_QDRANT_ENGINE"] = "edge"
    done = subprocess.run([sys.executable, "-m", "rag", "migrate", "--store", str(folder)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    registry = {"documents": 1, "fremd": 0}  # the engine's count: chunks and the collection's registry point
    assert report["moved"] == [{"collection": name, "points": points + registry[name]}
                               for name, points, *_ in before["collections"]]
    assert Path(report["backup"]).parent == folder and "Moved 'documents'" in done.stderr
    again = subprocess.run([sys.executable, "-m", "rag", "migrate", "--store", str(folder)], capture_output=True,
                           text=True, env=env, cwd=ROOT, timeout=120)
    assert json.loads(again.stdout)["moved"] == [] and again.stderr == ""


def test_an_empty_old_folder_moves_without_a_backup(tmp_path: Path, monkeypatch):
    from qdrant_client import QdrantClient

    monkeypatch.setenv("RAG_QDRANT_ENGINE", "edge")
    QdrantClient(path=str(tmp_path)).close()
    assert migration.has_local_format(str(tmp_path))
    open_store(str(tmp_path)).close()
    assert not migration.has_local_format(str(tmp_path)) and not list(tmp_path.glob("local-backup-*"))
