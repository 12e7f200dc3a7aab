"""rag.files.write_atomic, the one atomic writer: whole files, the mode kept, file and folder fsynced, no temporary
file left by a failure; and no other module of rag writes a file through a rename of its own."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from rag import files
from rag.files import write_atomic
from tests.conftest import ROOT


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_gets_the_umasks_mode_and_an_existing_one_keeps_its_own(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        fresh = write_atomic(tmp_path / "new.json", "Kündigung")
        kept = tmp_path / "kept.json"
        kept.write_text("old", encoding="utf-8")
        kept.chmod(0o640)
        write_atomic(kept, b"new")
    finally:
        os.umask(previous)
    assert fresh.read_text(encoding="utf-8") == "Kündigung" and mode(fresh) == 0o644
    assert kept.read_bytes() == b"new" and mode(kept) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.json", "new.json"]


def test_a_given_mode_is_the_files_from_the_start_even_over_a_readable_one(tmp_path: Path, monkeypatch) -> None:
    secret = tmp_path / "reads.json"
    secret.write_text("{}", encoding="utf-8")
    secret.chmod(0o644)
    modes = []
    fsync = os.fsync

    def watched(descriptor: int) -> None:  # the temporary file holds the secret by now
        if stat.S_ISREG(os.fstat(descriptor).st_mode):
            modes.append(stat.S_IMODE(os.fstat(descriptor).st_mode))
        fsync(descriptor)

    monkeypatch.setattr(os, "fsync", watched)
    write_atomic(secret, '{"token": "t"}', mode=0o600)
    monkeypatch.undo()
    assert mode(secret) == 0o600 and secret.read_text(encoding="utf-8") == '{"token": "t"}'
    assert modes and set(modes) == {0o600}  # never readable by others, not even while it was written


def test_the_file_and_its_folder_are_fsynced_before_and_after_the_rename(tmp_path: Path, monkeypatch) -> None:
    synced = []
    fsync = os.fsync

    def recorded(descriptor: int) -> None:
        target = os.readlink(f"/proc/self/fd/{descriptor}")
        synced.append((Path(target).name, (tmp_path / "a.txt").exists()))
        fsync(descriptor)

    monkeypatch.setattr(os, "fsync", recorded)
    write_atomic(tmp_path / "a.txt", "x")
    assert len(synced) == 2
    (temporary, placed_then), (folder, placed_after) = synced
    assert re.fullmatch(r"\.a\.txt\.[0-9a-f]+\.tmp", temporary) and not placed_then
    assert folder == tmp_path.name and placed_after


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("old", encoding="utf-8")

    def full(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="No space"):
        write_atomic(path, "new")
    assert [p.name for p in tmp_path.iterdir()] == ["q.jsonl"] and path.read_text(encoding="utf-8") == "old"


def test_no_module_of_rag_renames_a_file_into_place_by_itself() -> None:
    own = re.compile(r"os\.replace\(|NamedTemporaryFile|mkstemp")
    found = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "rag").rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if own.search(line)]
    allowed = {"rag/files.py", "rag/embeddings/cache.py"}  # cache.py moves a broken cache aside, it writes nothing
    assert any(f.startswith("rag/files.py:") for f in found), "the scan finds nothing: it is broken"
    assert [f for f in found if f.split(":")[0] not in allowed] == []
    assert files.TEMPORARY.format(name="reads.json") == ".reads.json.*.tmp"
