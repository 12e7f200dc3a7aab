"""kill -9 during `rag delete --document`: the document is there whole or gone whole, never searchable in part.

A real `python -m rag delete` is SIGKILLed at chosen points: just before and just after the one registry
update that commits the delete, and before the first, a middle and the last of its point deletions (counted
where the embedded engine writes them: every point in qdrant-client's local mode, every batch in Qdrant Edge).
The folder is then opened afresh, as the next process would: listings, searches, and an ingest of the file.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import get_embedder
from rag.retrieval import SearchRequest
from rag.retrieval.records import DocumentInfo
from rag.settings import load
from rag.store.client import UPSERT_BATCH, Store
from rag.store.open import open_store
from tests.store.test_crash_safety import PARAGRAPH, ROOT

pytestmark = pytest.mark.crash  # kills a process mid-write: not in make test-fast

SETTINGS = ChunkSettings(40, 0)

# Runs the CLI and kills itself (SIGKILL, as kill -9) at the KILL_AT-th point deletion the engine writes
# (qdrant-client's local mode: one point at a time; Qdrant Edge: one batch of UPSERT_BATCH points a write), or right
# before ("commit") / after ("committed") the registry point is stored with a retired generation.
KILLER = """
import os, signal, sys
from rag.settings import load

where, deletes = os.environ["KILL_AT"], [0]

def deleting():
    deletes[0] += 1
    if where.isdigit() and deletes[0] == int(where):
        os.kill(os.getpid(), signal.SIGKILL)

def storing(payloads, then, registry=False):
    commit = any("retired" in repr(p) and (registry or "rag_lab_registry" in (p or {})) for p in payloads)
    if commit and where == "commit":
        os.kill(os.getpid(), signal.SIGKILL)
    then()
    if commit and where == "committed":
        os.kill(os.getpid(), signal.SIGKILL)

if load().qdrant_engine == "edge":
    from rag.store.edge import api
    from rag.store.versions import REGISTRY_ID
    real_ids, real_where, real_upsert, real_set = api.delete_ids, api.delete_where, api.upsert, api.set_payload
    api.delete_ids = lambda shard, ids: (deleting(), real_ids(shard, ids))
    api.delete_where = lambda shard, flt: (deleting(), real_where(shard, flt))
    api.upsert = lambda shard, points, unnamed: storing([p.payload for p in points],
                                                        lambda: real_upsert(shard, points, unnamed))
    api.set_payload = lambda shard, ids, payload: storing([payload], lambda: real_set(shard, ids, payload),
                                                          registry=ids == [REGISTRY_ID])
else:
    from qdrant_client.local import persistence
    real_delete, real_persist = persistence.CollectionPersistence.delete, persistence.CollectionPersistence.persist
    persistence.CollectionPersistence.delete = lambda self, point_id: (deleting(), real_delete(self, point_id))
    persistence.CollectionPersistence.persist = lambda self, point: storing([point.payload],
                                                                            lambda: real_persist(self, point))
from rag.cli import main
sys.exit(main(sys.argv[1:]))
"""


def kill_points(chunks: int) -> dict[str, str]:
    """Return KILL_AT of "1", "middle" and "last" (the last but one point, or the last batch) for a document."""
    if load().qdrant_engine == "edge":
        writes = -(-chunks // UPSERT_BATCH)
        return {"1": "1", "middle": str(max(1, (writes + 1) // 2)), "last": str(writes)}
    return {"1": "1", "middle": str(chunks // 2), "last": str(chunks - 1)}


def killed_delete(store: Path, killer: Path, where: str, document_id: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KILL_AT": where}
    return subprocess.run([sys.executable, str(killer), "--store", str(store), "delete", "--collection", "documents",
                           "--document", document_id[:12]], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)


@contextmanager
def opened(folder: Path) -> Iterator[Store]:
    """Yield a fresh client of the folder (as a new process would read it), closed afterwards."""
    store = open_store(path=str(folder))
    try:
        yield store
    finally:
        store.close()


def ingest(store: Store, file: Path) -> pipeline.IngestResult:
    (result,) = pipeline.ingest([pipeline.SourceFile(file.name, None, None, file)], "documents", SETTINGS,
                                get_embedder("fake"), store=store)
    return result


def titles_found(store: Store, query: str = "Kündigungsfrist Quartalsende") -> set[str]:
    return {h.document_title for h in pipeline.search(query, "documents", SearchRequest(top_k=50, mode="sparse"),
                                                      store=store)}


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, DocumentInfo]:
    """Return (a store holding vertrag.txt and andere.md, the file vertrag.txt, its listing entry)."""
    folder = tmp_path_factory.mktemp("filled")
    big = folder / "vertrag.txt"
    big.write_text("\n\n".join(PARAGRAPH.format(n=n) for n in range(600)), encoding="utf-8")
    other = folder / "andere.md"
    other.write_text("# Andere\n\nDie Kündigungsfrist eines Mietvertrags ist anders geregelt.\n", encoding="utf-8")
    with opened(folder / "qdrant") as store:
        assert ingest(store, other).ok and ingest(store, big).ok
        entry = next(d for d in store.documents("documents") if d.title == "vertrag.txt")
    assert entry.complete and entry.chunks > 300
    return folder / "qdrant", big, entry


@pytest.mark.timeout(900)
@pytest.mark.parametrize("where", ["commit", "committed", "1", "middle", "last"])
def test_killed_delete_leaves_the_document_whole_or_gone(filled, tmp_path: Path, where: str):
    source, big, before = filled
    folder = tmp_path / "qdrant"
    shutil.copytree(source, folder)
    killer = tmp_path / "killer.py"
    killer.write_text(KILLER, encoding="utf-8")
    kill_at = kill_points(before.chunks).get(where, where)

    killed = killed_delete(folder, killer, kill_at, before.document_id)
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    with opened(folder) as store:
        found = titles_found(store)
        listed = {d.title: d for d in store.documents("documents")}
        assert listed["andere.md"].complete
        if where == "commit":  # killed before the commit: nothing changed
            assert listed["vertrag.txt"] == before and "vertrag.txt" in found
            return
        assert "vertrag.txt" not in listed and found == {"andere.md"}  # the commit: gone from both at once
        assert store.collections()[0].points == listed["andere.md"].chunks  # the listing deleted the hidden rest

        again = ingest(store, big)
        assert again.status == "ingested"  # never "unchanged"
        listed = {d.title: d for d in store.documents("documents")}
        assert listed["vertrag.txt"].complete and listed["vertrag.txt"].chunks == before.chunks
        assert "vertrag.txt" in titles_found(store, "Quartalsende") and store.registry("documents") == {}
