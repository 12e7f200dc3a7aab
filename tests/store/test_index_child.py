"""A kill -9 of `rag index` during the build takes its child along (rag.store.edge.child): the child is gone within
seconds, its copy's lock keeps an open from removing the copy while the child lives, and the collection opens whole
and searches. RAG_FAULT_TRIALS=12 repeats the trial (the issue's count); the default run does it once."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag.store.edge import child as build_child
from rag.store.edge.client import EDGE_DIR, EdgeClient
from rag.store.open import open_store
from tests.conftest import fake_embedder, ingest
from tests.store.test_edge_index import document, hits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
ROOT = Path(__file__).resolve().parents[2]
TRIALS = int(os.environ.get("RAG_FAULT_TRIALS", "1"))


def children(pid: int) -> list[int]:
    """Return the pids of pid's child processes (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.isdigit() and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    """Return whether any thread of process pid still runs (its first thread is a zombie before the others end)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    return True
        except OSError:
            continue
    return False


def states(pid: int) -> list[str]:
    """Return each thread's state and where it waits in the kernel (a failure's evidence)."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else []:
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f, open(f"/proc/{pid}/task/{task}/wchan") as w:
                found.append(f"{f.read().rsplit(')', 1)[1].split()[0]}:{w.read()}")
        except OSError:
            continue
    return found


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A collection of 8,500 chunks: its build takes many seconds, so a kill lands in the middle of it."""
    path = tmp_path_factory.mktemp("killed-index") / "qdrant"
    store = open_store(path=str(path))
    ingest(store, fake_embedder(), document("a", 1000), size=20)
    store.close()
    return path


@pytest.mark.crash
@pytest.mark.timeout(180 * TRIALS)
@pytest.mark.parametrize("trial", range(TRIALS))
def test_a_killed_rag_index_takes_its_build_child_along_and_the_collection_opens_whole(folder: Path, trial: int):
    environment = {**os.environ, "RAG_INDEX_MIN_POINTS": "100", "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-m", "rag", "index", "--collection", "documents", "--store",  # noqa: S603
                               str(folder)], cwd=ROOT, env=environment, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: children(parent.pid), 60), "the build child never started"
        (child,) = children(parent.pid)
        (copy,) = (folder / EDGE_DIR).glob(".index-*")
        time.sleep(1.0 + 0.25 * trial)  # the child is loading the copy or building in it
        assert alive(child), "the build ended before the kill: make the collection larger"
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert wait_for(lambda: not alive(child), 10), f"the build child outlives its parent: {states(child)}"
        assert wait_for(lambda: not build_child.in_use(str(copy)), 5), "the copy's lock outlives the child"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        parent.stderr.close()
    store = open_store(path=str(folder))  # nothing holds a copy's lock now: the open removes what the kill left
    try:
        assert [p.name for p in (folder / EDGE_DIR).iterdir()] == ["documents"]
        (listed,) = store.documents("documents")
        assert listed.complete and listed.chunks == store.collections()[0].points == 8500
        assert hits(store, "Frist 17 Wochen")[0] == ("a", hits(store, "Frist 17 Wochen")[0][1])
    finally:
        store.close()


def test_an_open_leaves_a_copy_alone_while_its_build_child_holds_the_lock(tmp_path: Path):
    copy = tmp_path / "q" / EDGE_DIR / ".index-0123"
    copy.mkdir(parents=True)
    with open(copy / build_child.LOCK_FILE, "w") as lock:  # as a child still building in it holds it
        fcntl.flock(lock, fcntl.LOCK_EX)
        EdgeClient(str(tmp_path / "q")).close()
        assert copy.is_dir() and build_child.in_use(str(copy))
    EdgeClient(str(tmp_path / "q")).close()  # the child has ended: the next open removes the copy
    assert not copy.exists()


@pytest.mark.slow
def test_a_kill_between_the_two_renames_of_the_swap_leaves_the_old_shard_to_put_back(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("RAG_INDEX_MIN_POINTS", "100")
    store = open_store(path=str(tmp_path / "q"))
    ingest(store, fake_embedder(), document("a", 300), size=20)
    before = hits(store, "Frist 17 Wochen")
    renames = []

    def killed_after_the_first(source, target):
        renames.append(target)
        if len(renames) == 2:  # the old shard is out, the new one not in: where a kill -9 could land
            raise KeyboardInterrupt("killed")
        os.replace(source, target)

    monkeypatch.setattr("rag.store.edge.client.os.rename", killed_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        store.build_index("documents")
    monkeypatch.undo()
    assert not (tmp_path / "q" / EDGE_DIR / "documents" / "shard").exists()
    store.close()
    store = open_store(path=str(tmp_path / "q"))
    try:
        (listed,) = store.documents("documents")
        assert listed.complete and hits(store, "Frist 17 Wochen") == before
        assert sorted(p.name for p in (tmp_path / "q" / EDGE_DIR / "documents").iterdir()) == ["collection.json",
                                                                                             "shard"]
    finally:
        store.close()
