"""What a document may expand to (RAG_MAX_CHARS) and the child process a PDF is read in (issue 39).

The bombs are issue 39's, made small: a page whose FlateDecode content (zlib level 9) expands to
`(Wort und Text ) Tj` many times over. At full size (2,500,000 times, 122 KB) pdfium took 10.8 GB; here a test
lowers RAG_MAX_CHARS below a bomb of a few MB, and every run that could grow with a bomb goes to a process whose
address space is limited (as `prlimit --as`), whose peak memory (its own and its children's) is read back.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pypdf
import pytest
from pypdf.generic import ArrayObject, DictionaryObject, NameObject, NumberObject, StreamObject

import rag
from rag import settings
from rag.chunking import ChunkSettings
from rag.documents import PAGE_SEPARATOR, SourceFile, load_document
from rag.errors import DocumentTooLargeError, InvalidSettingsError
from tests.conftest import fake_embedder, read_shared, run

ROOT = Path(__file__).resolve().parents[2]
TEXT = "Wort und Text "
WORDS = f"({TEXT}) Tj ".encode()  # 14 characters of text a time
PAGE = len((TEXT * 300).strip())  # a page of bomb_pdf(300): its text as read (the last space goes)
ADDRESS_SPACE = 2_000_000_000  # bytes a bounded run may map (other tests share the machine's memory)


def _font() -> DictionaryObject:
    return DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})


def _stream(content: bytes) -> StreamObject:
    stream = StreamObject()
    stream._data = zlib.compress(content, 9)
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    return stream


def _written(writer: pypdf.PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def bomb_pdf(repeats: int, pages: int = 1) -> bytes:
    """Return issue 39's PDF: pages whose compressed content is `BT /F1 1 Tf 10 10 Td` + WORDS x repeats + `ET`."""
    writer = pypdf.PdfWriter()
    font = writer._add_object(_font())
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        fonts = DictionaryObject({NameObject("/F1"): font})
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
        page[NameObject("/Contents")] = writer._add_object(_stream(b"BT /F1 1 Tf 10 10 Td " + WORDS * repeats + b"ET"))
    return _written(writer)


def form_bomb_pdf(draws: int, repeats: int) -> bytes:
    """Return a page that draws one Form XObject (WORDS x repeats) `draws` times: the content check sees a few bytes
    of `/X0 Do`, while pdfium's work grows with draws squared (200 draws of 100: 2 s)."""
    writer = pypdf.PdfWriter()
    page = writer.add_blank_page(612, 792)
    form = _stream(b"BT /F1 1 Tf 10 10 Td " + WORDS * repeats + b"ET")
    form.update({NameObject("/Type"): NameObject("/XObject"), NameObject("/Subtype"): NameObject("/Form"),
                 NameObject("/BBox"): ArrayObject([NumberObject(0), NumberObject(0), NumberObject(612),
                                                   NumberObject(792)]),
                 NameObject("/Resources"): DictionaryObject({NameObject("/Font"): DictionaryObject(
                     {NameObject("/F1"): writer._add_object(_font())})})})
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/XObject"): DictionaryObject(
        {NameObject("/X0"): writer._add_object(form)})})
    page[NameObject("/Contents")] = writer._add_object(_stream(b"/X0 Do " * draws))
    return _written(writer)


# A process started from pytest inherits pytest's resident size as its peak (fork copies it, exec keeps the mark):
# a small launcher starts the measured process instead and prints that process's own peak (its reaped children,
# the PDF's reader, included) on its last stderr line.
LAUNCH = ("import os, subprocess, sys; p = subprocess.Popen(sys.argv[1:]); _, s, u = os.wait4(p.pid, 0); "
          "print(u.ru_maxrss, file=sys.stderr); sys.exit(os.waitstatus_to_exitcode(s))")


def bounded(argv: list[str], tmp_path: Path, **env: str) -> tuple[int, str, str, float]:
    """Return (exit code, stdout, stderr, peak MB) of argv, whose peak is its own and its children's."""
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        done = subprocess.run([sys.executable, "-c", LAUNCH, *argv], stdout=stdout, stderr=stderr, cwd=ROOT,
                              env={**os.environ, **env}, timeout=600, check=False)
    *lines, peak = err.read_text().splitlines()
    return done.returncode, out.read_text(), "".join(line + "\n" for line in lines), int(peak) / 1024


def bounded_rag(tmp_path: Path, *args: str, **env: str) -> tuple[int, str, str, float]:
    """Return (exit code, stdout, stderr, peak MB of it and its children) of `rag *args` in a process that may map
    at most ADDRESS_SPACE bytes."""
    boot = (f"import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE}, {ADDRESS_SPACE}))"
            "; sys.argv = ['rag', *sys.argv[1:]]; runpy.run_module('rag', run_name='__main__')")
    return bounded([sys.executable, "-c", boot, *args], tmp_path, **env)


# ---- RAG_MAX_CHARS, counted while a PDF is read ----------------------------------------------------------------

def test_a_page_whose_content_expands_past_the_limit_is_refused_before_its_text_is_extracted(monkeypatch):
    monkeypatch.setenv("RAG_MAX_CHARS", "10000")
    with pytest.raises(DocumentTooLargeError) as refused:
        load_document(bomb_pdf(2_000), "bombe.pdf")  # 28,000 characters on one page
    assert str(refused.value) == ("'bombe.pdf' expands to more than 10,000 characters of text (page 1 alone holds "
                                  "more). Split it into smaller files, or raise the limit with RAG_MAX_CHARS.")
    assert refused.value.filename == "bombe.pdf"
    with pytest.raises(DocumentTooLargeError, match=f"page 3 holds more than the {10_000 - 2 * PAGE:,} left after "
                                                    f"the {2 * PAGE:,} of the pages before"):
        load_document(bomb_pdf(300, pages=5), "seiten.pdf")  # 4,199 a page
    with pytest.raises(DocumentTooLargeError, match="more than 10,000 characters"):
        load_document(bomb_pdf(2_000), "bombe.pdf", pdf_engine="pypdf")  # the fallback reader is counted too
    page = (TEXT * 300).strip()
    assert load_document(bomb_pdf(300, pages=2), "zwei.pdf").text == PAGE_SEPARATOR.join([page, page])  # as before


def test_the_characters_of_the_pages_read_are_counted_where_the_content_shows_too_few(monkeypatch):
    from rag.documents import expansion

    monkeypatch.setattr(expansion, "content_text", lambda reader, number, left: 0)  # inherited by the child
    for engine in ("pdfium", "pypdf"):
        with pytest.raises(DocumentTooLargeError, match=rf"than 10,000 characters of text \({3 * PAGE:,} by page 3\)"):
            load_document(bomb_pdf(300, pages=5), "seiten.pdf", pdf_engine=engine, max_chars=10_000)


def test_text_files_are_held_to_the_limit_and_it_is_a_checked_setting(monkeypatch):
    with pytest.raises(DocumentTooLargeError, match=r"'lang.txt' expands to more than 100 characters of text "
                                                    r"\(it holds 119\)"):  # the last space goes
        load_document(b"Wort " * 24, "lang.txt", max_chars=100)
    assert load_document(b"Wort " * 20, "kurz.md", max_chars=100).text.startswith("Wort")
    assert settings.load({}).max_chars == 20_000_000
    assert settings.load({"RAG_MAX_CHARS": "5000"}).max_chars == 5000
    with pytest.raises(InvalidSettingsError, match="RAG_MAX_CHARS='2.5' is not a whole number.*e.g. 20000000"):
        settings.load({"RAG_MAX_CHARS": "2.5"})


# ---- the child process: same text, bounded memory and time ------------------------------------------------------

@pytest.mark.parametrize("relative", ["pdfs/hausarbeit-jura.pdf", "pdfs/encrypted-file.pdf", "sample"])
def test_a_normal_pdf_is_read_in_a_child_with_the_text_of_a_read_in_this_process(shared_data, monkeypatch, relative):
    from rag.documents import pdf

    data = (ROOT / "rag/samples/incident-response.pdf").read_bytes() if relative == "sample" else read_shared(
        shared_data, relative)
    password = "test" if "encrypted" in relative else None
    here = pdf._read(data, "a.pdf", password, 5000, 20_000_000, "pdfium", lambda done, pages: None)
    read = pdf._read
    monkeypatch.setattr(pdf, "_read", lambda *args, **kw: (*read(*args, **kw)[:3], [f"pid {os.getpid()}"]))
    progress: list[tuple[int, int]] = []
    pages, empty, outline, notes = pdf.read_pdf(data, "a.pdf", password, 5000, progress=lambda *p: progress.append(p))
    assert notes != [f"pid {os.getpid()}"] and notes[0].startswith("pid "), "read in another process"
    assert (pages, empty, outline) == here[:3] and progress[0] == (0, len(pages))
    monkeypatch.undo()
    assert load_document(data, "a.pdf", password).pages == tuple(here[0])


def test_a_kind_of_bomb_the_count_misses_meets_the_readers_memory_limit(monkeypatch):
    from rag.documents import bounded

    monkeypatch.setattr(bounded, "BASE_MEMORY", 64 << 20)  # pdfium needs ~400 MB for this page's 1.4 M characters
    with pytest.raises(DocumentTooLargeError, match=r"^'bombe.pdf' needs more than 0.1 GB of memory to read: it "
                                                    r"expands to far more than its size suggests\. Split"):
        load_document(bomb_pdf(100_000), "bombe.pdf", max_chars=2_000_000)
    assert load_document(bomb_pdf(3), "klein.pdf").text == "Wort und Text Wort und Text Wort und Text"


@pytest.mark.slow
def test_a_read_that_stays_silent_is_stopped_and_a_cancel_ends_the_child(monkeypatch):
    from rag.documents import bounded

    monkeypatch.setattr(bounded, "SILENT_SECONDS", 1)
    with pytest.raises(DocumentTooLargeError, match=r"^Reading 'formen.pdf' was stopped after 1 s without progress"):
        load_document(form_bomb_pdf(300, 100), "formen.pdf")  # 4.2 M characters drawn by 300 "/X0 Do": ~5 s

    class Cancel(Exception):
        pass

    def cancel(done: int, pages: int) -> None:
        raise Cancel

    with pytest.raises(Cancel):
        load_document(form_bomb_pdf(300, 100), "formen.pdf", pages_read=cancel)


# ---- the API, the CLI and an ingest: one line, the process stays up, the other files are stored ------------------

def test_an_ingest_stores_the_good_file_beside_a_bomb(store, monkeypatch):
    monkeypatch.setenv("RAG_MAX_CHARS", "10000")
    files = [SourceFile("bombe.pdf", bomb_pdf(2_000)), SourceFile("gut.md", b"# Frist\n\nDrei Monate.\n")]
    bad, good = rag.ingest(files, "t", ChunkSettings(chunk_size=100, overlap=0), fake_embedder(), store=store)
    assert not bad.ok and bad.error_type == "DocumentTooLargeError" and "more than 10,000 characters" in bad.error
    assert good.ok and [d.title for d in store.documents("t")] == ["gut.md"]


@pytest.mark.slow
def test_load_document_of_a_bomb_ends_in_one_line_within_bounded_memory(tmp_path):
    bomb = tmp_path / "bombe.pdf"
    bomb.write_bytes(bomb_pdf(300_000))  # 4.2 M characters: pdfium alone would take ~1.3 GB
    code = ("import sys, rag\ntry:\n    rag.load_document(open(sys.argv[1], 'rb').read(), 'bombe.pdf')\n"
            "except rag.RagError as error:\n    print(type(error).__name__, error)")
    boot = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE}, {ADDRESS_SPACE}))\n{code}"
    code, output, _, peak = bounded([sys.executable, "-c", boot, str(bomb)], tmp_path, RAG_MAX_CHARS="1000000")
    assert code == 0 and output == (
        "DocumentTooLargeError 'bombe.pdf' expands to more than 1,000,000 characters of text (page 1 alone holds "
        "more). Split it into smaller files, or raise the limit with RAG_MAX_CHARS.\n")
    assert peak < 400, f"peak {peak:.0f} MB"


@pytest.mark.slow
def test_rag_chunk_and_ingest_of_a_bomb_say_one_line_within_bounded_memory(tmp_path, capsys):
    bomb, good = tmp_path / "bombe.pdf", tmp_path / "gut.md"
    bomb.write_bytes(bomb_pdf(300_000))
    good.write_text("# Frist\n\nDie Kündigungsfrist beträgt drei Monate.\n", encoding="utf-8")
    code, out, err, peak = bounded_rag(tmp_path, "chunk", str(bomb), RAG_MAX_CHARS="1000000")
    assert code == 1 and out == "" and peak < 400, f"peak {peak:.0f} MB"
    assert err == ("error: 'bombe.pdf' expands to more than 1,000,000 characters of text (page 1 alone holds more). "
                   "Split it into smaller files, or raise the limit with RAG_MAX_CHARS.\n")
    store = str(tmp_path / "q")
    code, out, err, peak = bounded_rag(tmp_path, "ingest", str(bomb), str(good), "--collection", "t", "--embedder",
                                       "fake:32", "--store", store, "--json", RAG_MAX_CHARS="1000000")
    (line,) = [line for line in err.splitlines() if line.startswith("error: ")]  # beside the progress lines
    assert code == 1 and line.startswith("error: 'bombe.pdf' expands to more than 1,000,000 characters of text")
    assert [r["ok"] for r in json.loads(out)["results"]] == [False, True] and peak < 400, f"peak {peak:.0f} MB"
    code, out, _ = run(capsys, "documents", "--collection", "t", "--store", store, "--json")
    assert code == 0 and [d["title"] for d in json.loads(out)] == ["gut.md"]
