"""kill -9 during `rag migrate`: the next open moves the folder once, keeps exactly one complete backup and no staging
folder (rag.store.edge.migrate). A real `python -m rag migrate` of a folder written by qdrant-client's local mode is
SIGKILLed at points of the copy: before the first, second and last old file goes into the backup, while the marker
that says the backup is complete is written, while the first collection goes into the staging folder, and right
after the staging folder's collections were renamed into place; the folder is then opened afresh."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag.store.edge import migrate as migration
from rag.store.open import migrate_folder, open_store
from tests.conftest import ROOT, fake_embedder
from tests.store.test_migrate import answers, fingerprint, old_folder

pytestmark = pytest.mark.crash  # kills a process mid-write: not in make test-fast

# Runs `rag migrate` and kills itself (SIGKILL) at KILL_AT: "copy:N" before the N-th file is copied into the backup,
# "marker" as the backup's marker is to say complete, "staging" at the first write into the staging folder, "renamed"
# right after the staging folder's collections replaced edge/.
KILLER = """
import os, runpy, shutil, signal, sys
where, copies = os.environ["KILL_AT"], [0]

def die():
    os.kill(os.getpid(), signal.SIGKILL)

real_copy, real_rename = shutil.copy2, os.rename

def copying(source, target, *args, **kwargs):
    if "local-backup-" in str(target):
        copies[0] += 1
        if where == f"copy:{copies[0]}":
            die()
    return real_copy(source, target, *args, **kwargs)

def renaming(source, target, *args, **kwargs):
    real_rename(source, target, *args, **kwargs)
    if where == "renamed" and ".migrating-" in str(source) and str(target).endswith(os.sep + "edge"):
        die()

shutil.copy2, os.rename = copying, renaming
from rag.store.edge import migrate
from rag.store.edge.client import EdgeClient
real_marker, real_upsert = migrate._write_marker, EdgeClient.upsert

def marking(backup, data):
    if where == "marker" and data.get("complete"):
        die()
    real_marker(backup, data)

def upserting(self, *args, **kwargs):
    if where == "staging" and ".migrating-" in self.path:
        die()
    return real_upsert(self, *args, **kwargs)

migrate._write_marker, EdgeClient.upsert = marking, upserting
sys.argv = ["rag", "migrate", "--store", sys.argv[1]]
runpy.run_module("rag", run_name="__main__", alter_sys=True)
"""
POINTS = ("copy:1", "copy:2", "copy:3", "marker", "staging", "renamed")


@pytest.fixture(scope="module")
def origin(tmp_path_factory) -> tuple[Path, dict]:
    """A folder in qdrant-client's local format (three old files) and what it answers."""
    folder = tmp_path_factory.mktemp("origin") / "qdrant"
    with pytest.MonkeyPatch.context() as monkeypatch:
        before = old_folder(folder, monkeypatch)
    assert len([f for f in fingerprint(folder) if not f.startswith("edge")]) == 3
    return folder, before


def backups(folder: Path) -> list[Path]:
    return sorted(folder.glob(migration.BACKUP_PREFIX + "*"))


@pytest.mark.parametrize("kill_at", POINTS)
def test_a_killed_move_is_done_once_with_one_complete_backup_and_no_staging_folder(tmp_path: Path, monkeypatch,
                                                                                   origin, kill_at: str) -> None:
    source, before = origin
    folder = tmp_path / "qdrant"
    shutil.copytree(source, folder)
    old_files = {k: v for k, v in fingerprint(folder).items() if not k.startswith("edge")}
    monkeypatch.setenv("RAG_QDRANT_ENGINE", "edge")
    killed = subprocess.run([sys.executable, "-c", KILLER, str(folder)], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "KILL_AT": kill_at}, timeout=300)
    assert killed.returncode == -9, killed.stderr  # killed where asked, not finished
    if kill_at != "renamed":
        assert migration.has_local_format(str(folder)) and backups(folder)  # what the kill left to clean up

    report = migrate_folder(str(folder))  # the next open
    (backup,) = backups(folder)
    assert report["backup"] == str(backup)
    marker = json.loads((backup / migration.MARKER).read_text(encoding="utf-8"))
    assert marker["complete"] is True and sorted(marker["files"]) == sorted(old_files)
    assert {k: v for k, v in fingerprint(backup).items() if k != migration.MARKER} == old_files
    assert not list(folder.glob(".migrating-*")) and not migration.has_local_format(str(folder))
    store = open_store(path=str(folder))
    try:
        assert answers(store, fake_embedder()) == before
    finally:
        store.close()
    assert backups(folder) == [backup]
