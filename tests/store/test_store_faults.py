"""Disk full and a store folder removed under the running app: one line that says what to do, nothing half-stored.

The full disk mid-ingest is the engine's own answer (FullDisk: sqlite's in the old local mode, Qdrant Edge's free
space check); with root rights, a 5 MB tmpfs is filled for real by the CLI as well.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import get_embedder
from rag.errors import StoreError, StoreUnavailableError
from rag.retrieval import SearchRequest
from rag.store.client import Store
from rag.store.edge import EdgeClient
from rag.store.edge import space as edge_space
from rag.store.open import open_store

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ChunkSettings(40, 0)
OLD = "# Vertrag\n\nDie Kündigungsfrist beträgt drei Monate zum Quartalsende.\n"
NEW = "\n\n".join(f"Abschnitt {n}: Die Kündigungsfrist beträgt sechs Wochen, schriftlich." for n in range(800))


def ingest(store: Store, text: str) -> pipeline.IngestResult:
    (result,) = pipeline.ingest([pipeline.SourceFile("vertrag.md", text.encode())], "documents", SETTINGS,
                                get_embedder("fake"), store=store)
    return result


class FullDisk:
    """Fills the disk under a store's collection after some more batches, and frees it again.

    qdrant-client's local mode: its own sqlite database gets a page limit (PRAGMA max_page_count), so sqlite itself
    answers "database or disk is full" mid-write. Qdrant Edge: the free space the client checks before each write
    (it refuses writes while 128 MB are left, as its memory-mapped files could not report a full disk) drops.
    """

    def __init__(self, store: Store, collection: str, monkeypatch: pytest.MonkeyPatch):
        self.store, self.collection, self.monkeypatch = store, collection, monkeypatch

    def fill_after(self, batches: int) -> None:
        if isinstance(self.store.client, EdgeClient):
            calls = iter(range(10**9))
            self.monkeypatch.setattr(edge_space, "free_bytes",
                                     lambda path: 10**12 if next(calls) < batches else edge_space.MIN_FREE // 2)
            return
        database = self._sqlite()
        pages = database.execute("PRAGMA page_count").fetchone()[0]
        database.execute(f"PRAGMA max_page_count = {pages + 40}")  # room for some batches, not for all of them

    def free(self) -> None:
        if isinstance(self.store.client, EdgeClient):
            self.monkeypatch.setattr(edge_space, "free_bytes", lambda path: 10**12)
            return
        self._sqlite().execute("PRAGMA max_page_count = 1073741823")

    def _sqlite(self):
        return self.store.client._client.collections[self.collection].storage.storage


@pytest.fixture
def folder_store(tmp_path: Path):
    store = open_store(path=str(tmp_path / "qdrant"))
    yield store
    store.close()


@pytest.mark.slow
def test_a_full_disk_mid_ingest_is_one_line_and_keeps_the_old_version(folder_store: Store,
                                                                       monkeypatch: pytest.MonkeyPatch):
    assert ingest(folder_store, OLD).ok
    (old,) = folder_store.documents("documents")
    disk = FullDisk(folder_store, "documents", monkeypatch)
    disk.fill_after(3)

    result = ingest(folder_store, NEW)
    assert not result.ok and result.error_type == "StoreError"
    assert "is full" in result.error and "Free disk space" in result.error and "bug" not in result.error
    assert "\n" not in result.error
    assert folder_store.documents("documents") == [old]  # the old version, complete, nothing else listed
    hits = pipeline.search("Kündigungsfrist", "documents", SearchRequest(top_k=50, mode="sparse"), store=folder_store)
    assert [h.content for h in hits] == [c.content for c in folder_store.document_chunks("documents", old.document_id)]

    disk.free()
    assert folder_store.documents("documents") == [old]  # the listing deletes what the failed ingest left
    assert folder_store.collections()[0].points == old.chunks and folder_store.registry("documents") == {}
    assert ingest(folder_store, NEW).ok


def test_a_removed_store_folder_is_said_on_the_next_operation(folder_store: Store, tmp_path: Path):
    assert ingest(folder_store, OLD).ok
    shutil.rmtree(tmp_path / "qdrant")
    for operation in (lambda: folder_store.documents("documents"), lambda: folder_store.collections(),
                      lambda: pipeline.search("Kündigungsfrist", "documents", SearchRequest(top_k=5, mode="sparse"),
                                              store=folder_store),
                      lambda: ingest(folder_store, NEW)):
        with pytest.raises(StoreUnavailableError, match="was removed while RAG Lab was using it.*Restart RAG Lab"):
            operation()
    (tmp_path / "qdrant").mkdir()  # another folder of the same name is not the store either
    with pytest.raises(StoreUnavailableError, match="was removed"):
        folder_store.documents("documents")


@pytest.fixture
def tmpfs(tmp_path: Path):
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=5m", "tmpfs", str(mount)],
                                           capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_ingest_onto_a_full_tmpfs_is_one_line(tmpfs: Path, tmp_path: Path):
    file = tmp_path / "vertrag.md"
    file.write_text(NEW * 4, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "rag", "--store", str(tmpfs / "qdrant"), "ingest", str(file), "--embedder", "fake",
               "--chunk-size", "40", "--overlap", "0"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 1 and "Traceback" not in done.stderr and "bug" not in done.stderr
    assert len(errors) == 1 and "is full" in errors[0] and "Free disk space" in errors[0]
    store = open_store(path=str(tmpfs / "qdrant"))
    try:
        if not store.has_collection("documents"):
            return  # Qdrant Edge refuses to make a collection with less than 128 MB free: nothing was stored at all
        # hidden and deleted, or (when the full disk kept even the registry from being updated) listed incomplete
        assert all(not d.complete for d in store.documents("documents"))
        assert pipeline.search("Kündigungsfrist", "documents", SearchRequest(top_k=5, mode="sparse"), store=store) == []
    finally:
        store.close()


def test_the_guard_turns_the_engines_refusals_into_store_errors_but_lets_bugs_through():
    """Store._guard once made every ValueError/RuntimeError a StoreError, so a bug in our own code read like a
    Qdrant problem; now only what the engine raises for a user's cause becomes one."""
    store = open_store(":memory:")
    with pytest.raises(StoreError, match="failed reading: Collection nirgends not found"), store._guard("reading"):
        store.client.get_collection("nirgends")
    with pytest.raises(ValueError, match="our own mistake"), store._guard("reading"):
        raise ValueError("our own mistake")
    with pytest.raises(RuntimeError, match="a bug"), store._guard("reading"):
        raise RuntimeError("a bug")
