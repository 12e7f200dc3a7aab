"""pdfium in the app's threads and forks, the pypdf fallback, and what pdfium reads better than pypdf."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rag.documents.ligatures import repair
from rag.documents.loader import load_document
from tests.conftest import make_pdf

ROOT = Path(__file__).resolve().parents[2]
THREADS = """
import sys, threading
from pathlib import Path
from rag.documents.loader import load_document
files = [(p.name, p.read_bytes()) for p in sorted(Path(sys.argv[1]).glob("*.pdf"))]
files = [(name, data) for name, data in files if not name.startswith(("encrypt", "invalid", "c02", "hausarbeit"))]
alone = {name: load_document(data, name).text for name, data in files}
wrong = []
def work():
    for _ in range(30):
        for name, data in files:
            if load_document(data, name).text != alone[name]:
                wrong.append(name)
threads = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(files), len(wrong))
"""


@pytest.mark.timeout(300)
def test_pdfs_read_on_four_threads_at_once_equal_one_read_each(shared_data):
    """pdfium is not thread-safe: without the lock this crashes the process (SIGSEGV) in about half the runs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", THREADS, str(shared_data / "pdfs")], capture_output=True, text=True,
                          env=env, timeout=280)
    assert done.returncode == 0, f"crashed ({done.returncode}): {done.stderr[-2000:]}"
    files, wrong = map(int, done.stdout.split())
    assert files >= 4 and wrong == 0


def _read_in_child(data: bytes, queue) -> None:
    queue.put(load_document(data, "child.pdf").text)


@pytest.mark.timeout(120)
def test_a_forked_child_reads_pdfs_while_a_parent_thread_held_the_lock():
    from rag.documents import pdf

    data = make_pdf([[f"Seite {n}: Text über die Auftragsklärung."] for n in range(5)])
    expected = load_document(data, "parent.pdf").text
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with pdf._LOCK:
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_read_in_child, args=(data, queue))
        child.start()
        text = queue.get(timeout=60)
        child.join(30)
    finally:
        release.set()
        holder.join()
    assert text == expected and child.exitcode == 0


def test_without_pypdfium2_pypdf_reads_and_its_log_lines_become_one_note(shared_data, capfd, monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdfium2", None)  # import fails, as on a platform without its wheel
    data = b"garbage\n" + (shared_data / "pdfs" / "hausarbeit-jura.pdf").read_bytes()
    document = load_document(data, "junk.pdf")
    assert len(document.pages) == 8 and "Hausarbeiten" in document.text
    (note,) = [n for n in document.notes if n.startswith("pypdf")]
    assert "invalid pdf header" in note
    assert capfd.readouterr().err == ""


def test_pdfium_reads_what_pypdf_reads_with_its_spaces_and_ligatures(shared_data):
    data = (shared_data / "pdfs" / "hausarbeit-jura.pdf").read_bytes()
    pdfium, pypdf = (load_document(data, "hausarbeit-jura.pdf", pdf_engine=e) for e in ("pdfium", "pypdf"))
    assert [len(p.text) > 0 for p in pdfium.pages] == [len(p.text) > 0 for p in pypdf.pages]
    assert [h.title for h in pdfium.headings] == [h.title for h in pypdf.headings]
    # a TeX font without ToUnicode: pdfium returns its ligature glyphs as codes, named from pypdf's text
    for word in ("erfindet", "Officeprogrammen", "definiert", "zurückgegriffen"):
        assert word in pdfium.text
    assert not any(ch < " " and ch != "\n" for ch in pdfium.text)


def test_pdfium_hyphen_marks_become_joined_words(shared_data):
    data = (shared_data / "pdfs" / "Seige_of_Vicksburg_Sample_OCR.pdf").read_bytes()
    document = load_document(data, "vicksburg.pdf")
    assert "dangerous for use" in document.text and "\ufffe" not in document.text


def test_repair_learns_each_code_from_the_other_reader_and_asks_it_only_when_needed():
    asked = []

    def reference() -> str:
        asked.append(1)
        return "Er erfindet das Rad nicht; die Software nutzt Officeprogramme, die flaws."

    coded = "Er er\x1bndet das Rad nicht; die So\x1cware nutzt O\x1dceprogramme, die \x1eaws."
    assert repair(coded, reference) == "Er erfindet das Rad nicht; die Software nutzt Officeprogramme, die flaws."
    assert repair("one stray \x1f code", reference) == "one stray \x1f code" and len(asked) == 1
    assert repair("zwei W\x1brter, \x1bber", lambda: None) == "zwei W\x1brter, \x1bber"
    two_fonts = "pagele\x1c, O\x1cce, o\x1ccial, Lu\x1c, \x1cx"  # \x1c: "ft" in a typewriter font, "ffi" in text
    assert repair(two_fonts, lambda: "pageleft, Office, official, Luft") == "pageleft, Office, official, Luft, ffix"
