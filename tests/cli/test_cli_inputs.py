"""Careless command-line input: each mistake is one line (exit 2 for a malformed flag, 1 for a bad file)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.documents import loader
from rag.errors import UnsupportedFileError
from tests.conftest import run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "zwei"])
def test_a_threshold_must_be_a_finite_number(value, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        run(capsys, "search", "Frage", "--store", str(tmp_path / "q"), f"--threshold={value}")
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "--threshold" in err and "number" in err


@pytest.mark.slow
def test_a_negative_threshold_is_a_number(capsys, tmp_path):
    code, _, err = run(capsys, "search", "Frage", "--store", str(tmp_path / "q"), "--threshold=-0.5")
    assert code == 1 and "does not exist" in err  # parsed; the missing collection is the only complaint


def test_a_huge_fake_dimension_is_one_line_not_a_memory_error(capsys, tmp_path):
    text = tmp_path / "kurz.txt"
    text.write_text("Ein kurzer Text über Passwörter.", encoding="utf-8")
    code, _, err = run(capsys, "chunk", str(text), "--embedder", "fake:99999999999")
    assert code == 1
    assert err.count("\n") == 1 and "65536" in err


@pytest.mark.slow
def test_a_pipe_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "notes.txt"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "rag", "chunk", str(fifo)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1
    assert "not a regular file" in done.stderr and "empty" not in done.stderr
    with pytest.raises(UnsupportedFileError, match="not a regular file"):
        loader.SourceFile("notes.txt", path=fifo).read()


def test_a_file_that_reports_zero_bytes_but_has_content_is_read():
    """Files in /proc say 0 bytes on stat; they were called "empty (0 bytes)"."""
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0
    assert b"Name:" in loader.read_file(status, "status")


def test_a_file_is_read_no_further_than_the_limit(tmp_path):
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * 5000)
    with pytest.raises(Exception, match="limit"):
        loader.read_file(big, "big.txt", max_bytes=4096)
