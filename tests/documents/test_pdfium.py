"""pdfium in the app's threads and forks, the pypdf fallback, and what pdfium reads better than pypdf."""

from __future__ import annotations

import io
import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path

import pypdf
import pytest
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NumberObject

from rag.documents.ligatures import glyph_letters, page_resources, repair
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_pdfium_reads_what_pypdf_reads_with_its_spaces_and_ligatures(shared_data):
    data = (shared_data / "pdfs" / "hausarbeit-jura.pdf").read_bytes()
    pdfium, pypdf = (load_document(data, "hausarbeit-jura.pdf", pdf_engine=e) for e in ("pdfium", "pypdf"))
    assert [len(p.text) > 0 for p in pdfium.pages] == [len(p.text) > 0 for p in pypdf.pages]
    assert [h.title for h in pdfium.headings] == [h.title for h in pypdf.headings]
    # a TeX font without ToUnicode: pdfium returns its ligature glyphs as codes, named by the fonts' glyph names
    for word in ("erfindet", "Officeprogrammen", "definiert", "zurückgegriffen"):
        assert word in pdfium.text
    assert not any(ch < " " and ch != "\n" for ch in pdfium.text)


def test_pdfium_hyphen_marks_become_joined_words(shared_data):
    data = (shared_data / "pdfs" / "Seige_of_Vicksburg_Sample_OCR.pdf").read_bytes()
    document = load_document(data, "vicksburg.pdf")
    assert "dangerous for use" in document.text and "\ufffe" not in document.text


def _ligature_pdf(pages: list[list[tuple[str, bytes]]], second_helvetica: list[str] | None = None) -> bytes:
    """Return a PDF whose fonts name their codes 27, 28 ... in /Differences as TeX's do ("f_i"), no ToUnicode.

    F1 (Helvetica, subset-tagged) has f_i, f_f_i, T_h; F2 (Courier) f_t, Q_u; F3, when asked for, is a second
    Helvetica with the names given. pages: per page, (font key, line in the font's codes).
    """
    writer = pypdf.PdfWriter()

    def font(base: str, names: list[str]) -> DictionaryObject:
        encoding = {NameObject("/BaseEncoding"): NameObject("/WinAnsiEncoding"),
                    NameObject("/Differences"): ArrayObject([NumberObject(27), *(NameObject("/" + n) for n in names)])}
        return DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                                 NameObject("/BaseFont"): NameObject(base),
                                 NameObject("/Encoding"): DictionaryObject(encoding)})

    fonts = {"/F1": font("/ABCDEF+Helvetica", ["f_i", "f_f_i", "T_h"]), "/F2": font("/Courier", ["f_t", "Q_u"])}
    if second_helvetica:
        fonts["/F3"] = font("/GHIJKL+Helvetica", second_helvetica)
    resources = DictionaryObject({NameObject("/Font"): DictionaryObject(
        {NameObject(key): writer._add_object(value) for key, value in fonts.items()})})
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        stream = DecodedStreamObject()
        stream.set_data(b"\n".join([b"BT 14 TL 72 740 Td", *(f"/{key} 11 Tf (".encode() + line + b") Tj T*"
                                                              for key, line in lines), b"ET"]))
        page[NameObject("/Contents")] = writer._add_object(stream)
        del page["/Resources"]
    writer._root_object["/Pages"][NameObject("/Resources")] = resources  # inherited by every page
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _no_text_extraction(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("pypdf's text extraction ran")

    monkeypatch.setattr(pypdf.PageObject, "extract_text", refuse)


def test_glyph_codes_take_the_letters_of_their_own_fonts_glyph_names_without_pypdfs_text(monkeypatch):
    """pdfium returns the code of a glyph named "f_i" (no ToUnicode); one code is "fi" in one font and "ft" in
    another on the same page. The names come from the font dictionaries: pypdf never extracts the text."""
    data = _ligature_pdf([[("F1", b"Er er\x1bndet das O\x1cce nicht."), ("F2", b"Die So\x1bware ist \x1cick."),
                           ("F1", b"\x1de end, \x1b\x1b.")], [("F2", b"Nur ein \x1bp.")]])
    _no_text_extraction(monkeypatch)
    document = load_document(data, "ligatures.pdf")
    assert document.pages[0].text == "Er erfindet das Office nicht.\nDie Software ist Quick.\nThe end, fifi."
    assert document.pages[1].text == "Nur ein ftp."  # one coded word on a page is repaired too


def test_a_code_two_fonts_of_one_name_name_differently_is_left_out():
    data = _ligature_pdf([[("F1", b"er\x1bndet"), ("F3", b"\x1bnis, \x1de")]], second_helvetica=["f_l", "s_t", "T_h"])
    assert load_document(data, "clash.pdf").text == "erndet\nnis, The"  # 27 is fi or fl: dropped; 29 agrees


def test_hausarbeit_ligatures_come_from_glyph_names_alone(shared_data, monkeypatch):
    data = (shared_data / "pdfs" / "hausarbeit-jura.pdf").read_bytes()
    _no_text_extraction(monkeypatch)
    text = load_document(data, "hausarbeit-jura.pdf").text
    for word in ("erfindet", "Officeprogrammen", "definiert", "Modified"):
        assert word in text
    assert not any(ch < " " and ch != "\n" for ch in text)


def test_repair_asks_only_for_codes_and_takes_only_letters():
    asked: list[int] = []

    def letters_at(at: int) -> str | None:
        asked.append(at)
        return {3: "fi", 12: "\u2192"}.get(at)

    assert repair("Auf\x1b und \x05ab, \x1c", letters_at) == "Auffi und \x05ab, \x1c" and asked == [3, 9, 14]
    assert repair("kein Code", letters_at) == "kein Code" and len(asked) == 3
    assert repair("x = \x05 + \x06", letters_at) == "x = \x05 + \x06" and len(asked) == 3  # stray codes only


def test_glyph_names_become_letters_by_the_glyph_lists_rules():
    names = ("/f_f_i", "T_h", "Q_u", "uni00660069", "u1D49C", "f_i.alt", "germandbls", "/fi")
    assert [glyph_letters(n) for n in names] == ["ffi", "Th", "Qu", "fi", "\U0001d49c", "fi", "ß", "ﬁ"]
    assert glyph_letters("/x6D") is None and glyph_letters("f_xyz") is None


@pytest.mark.slow
def test_page_resources_walk_the_page_tree_as_pypdfs_pages_do(shared_data):
    for path in sorted((shared_data / "pdfs").glob("*.pdf")):
        try:
            reader = pypdf.PdfReader(path)
            pages = list(reader.pages)
        except Exception:  # damaged or encrypted: not this test's business
            continue
        for index, page in enumerate(pages):
            assert page_resources(reader, index) == page.get("/Resources"), (path.name, index)
        assert page_resources(reader, len(pages)) is None
