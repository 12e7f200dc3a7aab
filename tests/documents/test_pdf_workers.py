"""PDF worker processes: they end with their parent, even after kill -9; what pypdf logs becomes a note."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag.documents.loader import load_document
from tests.conftest import make_pdf

ROOT = Path(__file__).resolve().parents[2]
PARENT = """
import os, sys, time
from pathlib import Path
from rag.documents import pdf
from rag.documents.loader import load_document
load_document(Path(sys.argv[1]).read_bytes(), "lang.pdf")
print(" ".join(str(p) for p in pdf._POOL._processes), flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is dead, only not reaped yet
        return stat.read().split(") ")[-1][0] != "Z"


@pytest.mark.timeout(120)
def test_workers_end_when_their_parent_is_killed(tmp_path: Path):
    file = tmp_path / "lang.pdf"
    file.write_bytes(make_pdf([[f"Seite {n}: Text über die Auftragsklärung."] for n in range(60)]))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAG_PDF_WORKERS": "2"}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(file)], stdout=subprocess.PIPE, text=True, env=env)
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(alive(pid) for pid in workers)
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 30  # a guard: they check every half second
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(pid) for pid in workers), "PDF workers outlived their killed parent"


def test_pypdf_log_lines_become_one_note_not_stderr(shared_data, capfd):
    data = b"garbage\n" + (shared_data / "pdfs" / "hausarbeit-jura.pdf").read_bytes()
    document = load_document(data, "junk.pdf")
    assert document.text
    (note,) = [n for n in document.notes if n.startswith("pypdf")]
    assert "invalid pdf header" in note
    assert capfd.readouterr().err == ""


MAIN_SCRIPT = """
import os, sys
from pathlib import Path
with open(os.environ["MARKER"], "a") as marker:
    marker.write(__name__ + "\\n")
if __name__ == "__main__":
    from rag.documents import pdf
    from rag.documents.loader import load_document
    document = load_document(Path(sys.argv[1]).read_bytes(), "lang.pdf")
    assert pdf._POOL is not None and len(pdf._POOL._processes) == 2, "the pages were not read by workers"
    print(len(document.pages))
"""


@pytest.mark.timeout(120)
def test_workers_never_run_the_main_script(tmp_path: Path):
    """Under Streamlit the main script is app.py: a spawned worker that re-imported it would run the whole app."""
    pdf_file, script, marker = tmp_path / "lang.pdf", tmp_path / "app.py", tmp_path / "imports.txt"
    pdf_file.write_bytes(make_pdf([[f"Seite {n}: Text über die Auftragsklärung."] for n in range(60)]))
    script.write_text(MAIN_SCRIPT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAG_PDF_WORKERS": "2", "MARKER": str(marker)}
    done = subprocess.run([sys.executable, str(script), str(pdf_file)], capture_output=True, text=True, env=env,
                          timeout=100)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "60"
    assert marker.read_text().split() == ["__main__"], "a PDF worker imported the main script"
