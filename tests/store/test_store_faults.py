"""Disk full and a store folder removed under the running app: one line that says what to do, nothing half-stored.

The embedded engine (Qdrant Edge) writes through memory-mapped files, which die of SIGBUS on a full disk, so
each write first checks the free space of the folder's disk (rag.store.edge.client.free_bytes). The first test
makes that reading drop mid-ingest (the disk filling up while it runs); with root rights, a 5 MB tmpfs is
filled for real by the CLI as well.
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
from rag.errors import StoreUnavailableError
from rag.store.client import Store
from rag.store.edge import client as edge_client
from rag.store.open import open_store

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ChunkSettings(40, 0)
OLD = "# Vertrag\n\nDie Kündigungsfrist beträgt drei Monate zum Quartalsende.\n"
NEW = "\n\n".join(f"Abschnitt {n}: Die Kündigungsfrist beträgt sechs Wochen, schriftlich." for n in range(800))


def ingest(store: Store, text: str) -> pipeline.IngestResult:
    (result,) = pipeline.ingest([pipeline.SourceFile("vertrag.md", text.encode())], "documents", SETTINGS,
                                get_embedder("fake"), store=store)
    return result


@pytest.fixture
def folder_store(tmp_path: Path):
    store = open_store(path=str(tmp_path / "qdrant"))
    yield store
    store.close()


def test_a_full_disk_mid_ingest_is_one_line_and_keeps_the_old_version(folder_store: Store, monkeypatch):
    assert ingest(folder_store, OLD).ok
    (old,) = folder_store.documents("documents")
    plenty, reads = edge_client.free_bytes(folder_store.location), []

    def filling_up(path: str) -> int:  # room for some batches, not for all of them
        reads.append(path)
        return plenty if len(reads) < 3 else edge_client.MIN_FREE // 2

    monkeypatch.setattr(edge_client, "free_bytes", filling_up)
    result = ingest(folder_store, NEW)
    assert len(reads) >= 3  # it did fail mid-ingest, after some batches
    assert not result.ok and result.error_type == "StoreError"
    assert "is full" in result.error and "Free disk space" in result.error and "bug" not in result.error
    assert "\n" not in result.error
    monkeypatch.setattr(edge_client, "free_bytes", lambda path: plenty)  # disk space freed
    assert folder_store.documents("documents") == [old]  # the old version, complete, nothing else listed
    hits = pipeline.search("Kündigungsfrist", "documents", 50, store=folder_store, mode="sparse")
    assert [h.content for h in hits] == [c.content for c in folder_store.document_chunks("documents", old.document_id)]
    assert folder_store.collections()[0].points == old.chunks and folder_store.registry("documents") == {}
    assert ingest(folder_store, NEW).ok


def test_a_removed_store_folder_is_said_on_the_next_operation(folder_store: Store, tmp_path: Path):
    assert ingest(folder_store, OLD).ok
    shutil.rmtree(tmp_path / "qdrant")
    for operation in (lambda: folder_store.documents("documents"), lambda: folder_store.collections(),
                      lambda: pipeline.search("Kündigungsfrist", "documents", 5, store=folder_store, mode="sparse"),
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
        # refused before the collection was made (the engine's write checks see 5 MB free), or hidden and deleted,
        # or (when the full disk kept even the registry from being updated) listed incomplete
        if store.has_collection("documents"):
            assert all(not d.complete for d in store.documents("documents"))
            assert pipeline.search("Kündigungsfrist", "documents", 5, store=store, mode="sparse") == []
    finally:
        store.close()
