"""PDF bytes -> pages of clean text, the outline, and notes; every pypdf failure becomes a DocumentError."""

from __future__ import annotations

import contextlib
import io
import logging
import multiprocessing
import os
import re
import sys
import threading
import time
import types
import unicodedata
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pypdf

from rag.documents.model import Page
from rag.documents.text import BLANK_LINES, CONTROL_CHARS, INVISIBLE_IN_WORDS, SURROGATES
from rag.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
    EncryptedDocumentError,
    NoTextLayerError,
)

PARALLEL_MIN_PAGES = 24  # below this, starting worker processes costs more than it saves
_GLYPH_NAMES = re.compile(r"/(f_f_[il]|f_[bfhijklt]|t_t|s_t|c_t|T_h)")  # unmapped ligature glyphs
_SPACES = re.compile(r"[ \t]+")
_LINE_EDGE_SPACE = re.compile(r" ?\n ?")
_SOFT_HYPHEN_BREAK = re.compile("\u00ad\n")
_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])[-\u2010]\n(?=([^\W_]+))")
_SUSPENDED = frozenset({"und", "oder", "bzw", "sowie", "bis", "als", "and", "or", "nor", "to"})
MAX_LIBRARY_NOTES = 3  # distinct pypdf messages kept in a document's notes
log = logging.getLogger(__name__)


# ---- what pypdf and fontTools log: into the document's notes, never onto the user's terminal ---------------

_CAPTURE = threading.local()


class _Capture(logging.Handler):
    """Routes library log records to the read running in this thread (its notes), else to our debug log."""

    def emit(self, record: logging.LogRecord) -> None:
        messages = getattr(_CAPTURE, "messages", None)
        text = " ".join(record.getMessage().split())[:200]
        if messages is None:
            log.debug("%s: %s", record.name, text)
        elif text not in messages:
            messages.append(text)


for _library in ("pypdf", "fontTools"):
    _logger = logging.getLogger(_library)
    _logger.addHandler(_Capture())
    _logger.propagate = False  # "EOF marker not found" next to our one-line error helps no one


@contextlib.contextmanager
def _library_messages() -> Iterator[list[str]]:
    """Yield the list that collects what pypdf logs in this thread meanwhile (nested reads share it)."""
    outer = getattr(_CAPTURE, "messages", None)
    _CAPTURE.messages = outer if outer is not None else []
    try:
        yield _CAPTURE.messages
    finally:
        _CAPTURE.messages = outer


def library_note(messages: list[str]) -> list[str]:
    """Return a note naming what pypdf repaired or skipped while reading (empty when it said nothing)."""
    if not messages:
        return []
    shown = "; ".join(messages[:MAX_LIBRARY_NOTES]) + (" …" if len(messages) > MAX_LIBRARY_NOTES else "")
    return [f"pypdf reported problems it worked around: {shown}. If text is missing, export the PDF again."]


def clean_pdf_text(raw: str, page_number: int = 0) -> str:
    """Return a PDF page's text as a reader expects it: ligatures, hyphenation and whitespace fixed.

    Line breaks inside paragraphs stay; a trailing line that is just the page number goes.
    """
    text = unicodedata.normalize("NFKC", SURROGATES.sub("", raw))
    text = _GLYPH_NAMES.sub(lambda m: m.group(1).replace("_", ""), text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(CONTROL_CHARS)
    text = _LINE_EDGE_SPACE.sub("\n", _SPACES.sub(" ", text))
    text = _SOFT_HYPHEN_BREAK.sub("", text).translate(INVISIBLE_IN_WORDS)
    text = _HYPHEN_BREAK.sub(_join_hyphenated, text)
    text = BLANK_LINES.sub("\n\n", text).strip()
    last_break = text.rfind("\n")
    if page_number and text[last_break + 1 :] == str(page_number):
        text = text[:last_break].rstrip() if last_break >= 0 else ""
    return text


def _join_hyphenated(match: re.Match[str]) -> str:
    """Return what replaces a hyphen + line break: nothing (soft break), "-" (compound) or itself."""
    word = match.group(1)
    if word.lower() in _SUSPENDED:  # "Ein-\nund Ausgang": a suspended compound, not a word split
        return match.group(0)
    return "" if word[0].islower() else "-"


def read_pdf(
    data: bytes, name: str, password: str | None, max_pages: int
) -> tuple[list[Page], list[int], list[tuple[str, int, int]], list[str]]:
    """Return (every page, numbers of pages without text, outline, notes) of a PDF's bytes."""
    with _library_messages() as messages:
        pages, empty, outline, notes = _read_pdf(data, name, password, max_pages)
    return pages, empty, outline, notes + library_note(messages)


def _read_pdf(
    data: bytes, name: str, password: str | None, max_pages: int
) -> tuple[list[Page], list[int], list[tuple[str, int, int]], list[str]]:
    reader = _open_pdf(data, name, password)
    try:
        count = len(reader.pages)
    except Exception as error:
        raise _corrupt(name, error) from error
    if count > max_pages:
        raise DocumentTooLargeError(
            f"'{name}' has {count} pages; the limit is {max_pages}. "
            "Split it into smaller files, or raise the limit with RAG_MAX_PAGES.",
            name,
        )
    if count == 0:
        raise EmptyDocumentError(f"'{name}' has no pages. Choose a PDF with content.", name)
    pages, empty, failed = [], [], []
    for number, text in enumerate(extract_pages(reader, data, name, password, count), 1):
        if text is None:
            failed.append(number)
        pages.append(Page(number, text or ""))  # empty pages stay, so pages[i].number == i + 1
        if not text:
            empty.append(number)
    return pages, empty, _read_outline(reader), _page_notes(name, count, pages, empty, failed)


def extract_pages(reader: pypdf.PdfReader, data: bytes, name: str, password: str | None, count: int) -> list:
    """Return each page's clean text (None for a page pypdf fails on), on several processes for long PDFs.

    pypdf is pure Python, so threads would not help: a PDF of PARALLEL_MIN_PAGES pages or more is split into
    page ranges that worker processes (a pool kept for the process's life) read from the same bytes.
    """
    workers = min(pdf_workers(), count // PARALLEL_MIN_PAGES + 1)
    if workers > 1:
        bounds = [count * k // workers for k in range(workers + 1)]
        try:
            with _workers_without_main():
                futures = [_pool().submit(_extract_range, data, name, password, a + 1, b)
                           for a, b in zip(bounds, bounds[1:], strict=False)]
            texts = []
            for future in futures:
                part, messages = future.result()
                texts.extend(part)
                for message in messages:  # what pypdf logged in the worker joins this thread's notes
                    logging.getLogger("pypdf").warning(message)
            return texts
        except (OSError, RuntimeError, BrokenProcessPool):  # no worker processes here: read in this one
            _drop_pool()
    return [_page_text(reader, number) for number in range(1, count + 1)]


def pdf_workers() -> int:
    """Return how many processes read one long PDF: RAG_PDF_WORKERS, else the cores (at most 4)."""
    configured = os.environ.get("RAG_PDF_WORKERS", "")
    return max(int(configured), 1) if configured.isdigit() else min(os.cpu_count() or 1, 4)


def _page_text(reader: pypdf.PdfReader, number: int) -> str | None:
    try:
        return clean_pdf_text(reader.pages[number - 1].extract_text() or "", number)
    except Exception:  # one broken page must not cost the others: it is reported as unreadable
        return None


def _extract_range(data: bytes, name: str, password: str | None, first: int, last: int
                   ) -> tuple[list[str | None], list[str]]:
    """Return the texts of pages first..last (1-based, inclusive) and what pypdf logged; runs in a worker."""
    with _library_messages() as messages:
        reader = _open_pdf(data, name, password)
        return [_page_text(reader, number) for number in range(first, last + 1)], messages


_POOL: ProcessPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ProcessPoolExecutor:
    """Return the process pool for page extraction, started on first use ("spawn": safe beside torch threads)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ProcessPoolExecutor(pdf_workers(), mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_die_with_parent, initargs=(os.getpid(),))
        return _POOL


PARENT_CHECK_SECONDS = 0.5
_MAIN_LOCK = threading.Lock()
_NO_MAIN = types.ModuleType("__main__")  # no __file__, no __spec__: a spawned worker imports no main script


@contextlib.contextmanager
def _workers_without_main() -> Iterator[None]:
    """Start worker processes (submit starts them, under "spawn") without the main script.

    A spawned process first re-imports the parent's __main__ from its file. Under Streamlit, __main__ is app.py:
    each worker would run the whole app without a session (one "missing ScriptRunContext" warning per call).
    multiprocessing reads sys.modules["__main__"] when it starts a process, so it sees a bare module instead.
    """
    with _MAIN_LOCK:
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = _NO_MAIN
        try:
            yield
        finally:
            if main is not None:
                sys.modules["__main__"] = main


def _die_with_parent(parent: int) -> None:
    """Start a thread that ends this worker when its parent is gone (after a kill -9 nobody shuts the pool down).

    A worker waits for work on a pipe and would otherwise live on for minutes. prctl(PR_SET_PDEATHSIG) is
    no help: it fires when the *thread* that started the worker ends, and that is any Streamlit script run.
    """
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _drop_pool() -> None:
    """Forget a broken pool, so the next long PDF starts a new one."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None:
            _POOL.shutdown(wait=False, cancel_futures=True)
        _POOL = None


def _open_pdf(data: bytes, name: str, password: str | None) -> pypdf.PdfReader:
    """Return an opened (and decrypted) pypdf reader; raise Corrupt/EncryptedDocumentError."""
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if not reader.is_encrypted:
            return reader
        if password and reader.decrypt(password) != pypdf.PasswordType.NOT_DECRYPTED:
            return reader
        if _empty_user_password(reader) and reader.decrypt("") != pypdf.PasswordType.NOT_DECRYPTED:
            return reader
    except pypdf.errors.DependencyError as error:
        raise CorruptDocumentError(
            f"'{name}' uses an encryption this installation cannot read ({error}). "
            "Install the 'cryptography' package, or save the PDF without encryption.",
            name,
        ) from error
    except Exception as error:
        raise _corrupt(name, error) from error
    if password:
        raise EncryptedDocumentError(
            f"The password for '{name}' is wrong. Enter the password that opens the PDF and try again.",
            name,
            wrong_password=True,
        )
    raise EncryptedDocumentError(f"'{name}' is encrypted and opens only with its password. Enter its password "
                                 "(in the app's password field, or --password on the command line).", name)


def _empty_user_password(reader: pypdf.PdfReader) -> bool:
    """Return whether the PDF opens without a password: its *user* password is empty.

    reader.decrypt("") is not enough: pypdf tries the owner password first, and an empty owner password
    (as in encryption__r6-user-password.pdf) would open a file that viewers ask a password for.
    """
    from pypdf._encryption import AlgV4, AlgV5  # no public API checks the user password alone

    try:
        enc = reader._encryption
        if enc.V <= 4:
            values = (enc.R, enc.Length, enc.values.O, enc.values.U, enc.P, enc.id1_entry, enc.EncryptMetadata)
            return bool(AlgV4.verify_user_password(b"", *values))
        return bool(AlgV5.verify_user_password(enc.R, b"", enc.values.U, enc.values.UE))
    except (AttributeError, TypeError):  # pypdf internals changed: accept what decrypt("") says
        return True


def _corrupt(name: str, error: Exception) -> CorruptDocumentError:
    """Return the error for a PDF that pypdf cannot read."""
    detail = str(error).strip()[:200] or type(error).__name__
    return CorruptDocumentError(
        f"'{name}' could not be read as a PDF: it is damaged or incomplete ({detail}). "
        "Download or export it again and upload the new file.",
        name,
    )


def _page_notes(name: str, count: int, pages: list[Page], empty: list[int], failed: list[int]) -> list[str]:
    """Return the notes about empty and unreadable pages; raise when no page has text."""
    if len(empty) == count and failed:
        raise CorruptDocumentError(
            f"'{name}' is damaged: the text of none of its {count} pages could be read. "
            "Download or export it again and upload the new file.",
            name,
        )
    if len(empty) == count:
        raise NoTextLayerError(
            f"'{name}' has no text layer: none of its {count} page(s) contains text, it is probably a scan. "
            "OCR is needed: run it through OCR, e.g. ocrmypdf, and upload the result.",
            name,
            pages=count,
        )
    notes = []
    if failed:
        notes.append(f"Page(s) {_numbers(failed)} could not be read (damaged) and are left empty.")
    if no_text := [number for number in empty if number not in failed]:
        notes.append(
            f"{len(no_text)} of {count} pages have no text (page(s) {_numbers(no_text)}), probably scanned "
            "images; they add nothing to the chunks. Run the file through OCR (e.g. ocrmypdf) to include them."
        )
    return notes


def _numbers(numbers: list[int]) -> str:
    """Return page numbers as short ranges, e.g. "1-3, 5"."""
    ranges: list[list[int]] = []
    for number in numbers:
        if ranges and number == ranges[-1][1] + 1:
            ranges[-1][1] = number
        else:
            ranges.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def _read_outline(reader: pypdf.PdfReader) -> list[tuple[str, int, int]]:
    """Return the PDF's bookmarks as (title, level, 1-based page); [] when it has none or they are broken."""
    entries: list[tuple[str, int, int]] = []

    def walk(items: list, level: int) -> None:
        for item in items:
            if len(entries) >= 10_000 or level > 12:
                return
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            page = reader.get_destination_page_number(item)
            title = " ".join(clean_pdf_text(str(item.title or "")).split())
            if title and page is not None and page >= 0:
                entries.append((title, level, page + 1))

    try:
        walk(reader.outline, 1)
    except Exception:  # broken bookmarks are no reason to refuse the text
        return entries
    return entries
