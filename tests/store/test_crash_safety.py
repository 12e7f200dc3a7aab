"""kill -9 during the store stage: the document is incomplete and visibly so, never searchable in part.

A real `python -m rag ingest` writes a large document into an embedded Qdrant folder and is killed with
SIGKILL while it stores its chunks; the folder is then read by fresh processes, as a user would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rag.store.open import open_store

pytestmark = pytest.mark.crash  # kills a process mid-write: not in make test-fast

ROOT = Path(__file__).resolve().parents[2]
PARAGRAPH = "Abschnitt {n}: Die Kündigungsfrist beträgt drei Monate zum Quartalsende, schriftlich."


def rag(store: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "rag", "--store", str(store), *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, check=check, timeout=300)


def kill_while_storing(store: Path, file: Path) -> None:
    """Start an ingest of file and SIGKILL it once it has stored some, not all, of its chunks."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "rag", "--store", str(store), "ingest", str(file), "--embedder", "fake",
               "--chunk-size", "40", "--overlap", "0"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        for line in process.stderr:
            if ": store " in line:
                done, total = map(int, line.split()[-1].split("/"))
                if 0 < done < total:
                    process.send_signal(signal.SIGKILL)
                    break
        else:
            pytest.fail("the ingest ended before its store stage could be interrupted")
    finally:
        process.wait(60)
    assert process.returncode == -signal.SIGKILL


@pytest.fixture
def big_file(tmp_path: Path) -> Path:
    file = tmp_path / "vertrag.txt"
    file.write_text("\n\n".join(PARAGRAPH.format(n=n) for n in range(1500)), encoding="utf-8")
    return file


def hits(store: Path, query: str) -> list[dict]:
    result = rag(store, "search", query, "--top-k", "50", "--json", "--mode", "sparse")
    return json.loads(result.stdout)["hits"]


@pytest.mark.timeout(600)
def test_killed_ingest_is_incomplete_hidden_and_repaired_by_the_next(tmp_path: Path, big_file: Path):
    store = tmp_path / "qdrant"
    other = tmp_path / "andere.md"
    other.write_text("# Andere\n\nDie Kündigungsfrist eines Mietvertrags ist anders geregelt.\n", encoding="utf-8")
    rag(store, "ingest", str(other), "--embedder", "fake")

    kill_while_storing(store, big_file)

    documents = {d["title"]: d for d in json.loads(rag(store, "documents", "--json").stdout)}
    assert documents["andere.md"]["complete"] is True
    assert documents["vertrag.txt"]["complete"] is False and documents["vertrag.txt"]["chunks"] > 0
    listing = rag(store, "documents").stdout
    assert "NO (interrupted)" in listing and "Ingest the file again" in listing
    found = hits(store, "Kündigungsfrist Quartalsende")
    assert found and {h["document_title"] for h in found} == {"andere.md"}  # no chunk of the partial document

    rag(store, "ingest", str(big_file), "--embedder", "fake", "--chunk-size", "40", "--overlap", "0")
    documents = {d["title"]: d for d in json.loads(rag(store, "documents", "--json").stdout)}
    assert documents["vertrag.txt"]["complete"] is True and documents["vertrag.txt"]["interrupted_chunks"] == 0
    assert "vertrag.txt" in {h["document_title"] for h in hits(store, "Quartalsende")}
    opened = open_store(path=str(store))
    try:
        assert opened.registry("documents") == {}  # the unfinished write was retired and deleted
        chunks = opened.document_chunks("documents", documents["vertrag.txt"]["document_id"])
        assert len(chunks) == documents["vertrag.txt"]["chunks"] == opened.collections()[0].points - 1
    finally:
        opened.close()


@pytest.mark.timeout(600)
def test_killed_update_keeps_the_old_version_whole(tmp_path: Path, big_file: Path):
    store = tmp_path / "qdrant"
    rag(store, "ingest", str(big_file), "--embedder", "fake", "--chunk-size", "40", "--overlap", "0")
    before = json.loads(rag(store, "documents", "--json").stdout)
    big_file.write_text(big_file.read_text(encoding="utf-8").replace("drei Monate", "sechs Wochen"), encoding="utf-8")

    kill_while_storing(store, big_file)

    versions = json.loads(rag(store, "documents", "--json").stdout)
    old = next(d for d in versions if d["document_id"] == before[0]["document_id"])
    assert old["complete"] and old["chunks"] == before[0]["chunks"]
    assert [d["complete"] for d in versions if d is not old] == [False]
    found = hits(store, "Monate Wochen")
    assert len(found) == 50 and all("drei Monate" in h["content"] for h in found)  # only the old text

    unfinished = next(d for d in versions if not d["complete"])
    deleted = rag(store, "delete", "--collection", "documents", "--document", unfinished["document_id"][:12],
                  "--interrupted")
    assert "deleted the unfinished write" in deleted.stdout
    opened = open_store(path=str(store))
    try:
        assert opened.registry("documents") == {}
        assert [d.title for d in opened.documents("documents")] == ["vertrag.txt"]
    finally:
        opened.close()
