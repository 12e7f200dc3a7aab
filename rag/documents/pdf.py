"""PDF bytes -> pages of clean text, the outline, and notes: pdfium reads them, pypdf where pdfium cannot.

pdfium (pypdfium2) extracts text 10x or more faster than pypdf and keeps the spaces pypdf loses
("EsgibtauchBefehlederForm"); it also reads the outline and every encryption the shared PDFs use
(docs/benchmarks.md, "PDF text", has the measurements). pypdf (rag.documents.pypdf_text) is the fallback: for a
file pdfium refuses as damaged or cannot be loaded for, for a page pdfium fails on; and it reads the glyph names of
fonts without a ToUnicode table from their dictionaries (rag.documents.ligatures; never a page's text). pdfium is not
thread-safe: every call into it holds one lock, and every object is closed inside it, so no garbage collection
on another thread calls into it.
One process reads a PDF: 5,000 pages take about 15 s, and a long PDF's embedding takes hours. It is a child of bounded
memory and time (rag.documents.bounded), and the text is counted while it is read (RAG_MAX_CHARS, .expansion).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from rag.documents import bounded
from rag.documents.boxes import PageWords, page_words
from rag.documents.expansion import TextBudget
from rag.documents.ligatures import FontGlyphs, font_at, repair, repairs, symbol_brackets
from rag.documents.model import Page
from rag.documents.pdf_clean import clean, clean_pdf_text
from rag.documents.textmap import MappedText, Text
from rag.errors import CorruptDocumentError, DocumentError, DocumentTooLargeError, EmptyDocumentError, NoTextLayerError
from rag.words import counted, plural

ENGINES = ("pdfium", "pypdf")
PROGRESS_PAGES = 10  # pages between two progress calls (each may cancel the read)
_PDFIUM_HYPHEN = "\ufffe"  # pdfium's mark for a hyphen at a line end; the line break itself it leaves out
Outline = list[tuple[str, int, int]]
PageRead = tuple["str | None", "PageWords | None"]  # a page's clean text (None: unreadable) and its words
PagesRead = Callable[[int, int], None]  # (pages read, pages): may raise to stop the read
READERS = ("pypdfium2", "pypdf.filters", "rag.documents.pypdf_text")  # imported once, not in every read's child


def read_pdf(
    data: bytes, name: str, password: str | None, max_pages: int, *, engine: str = "pdfium",
    progress: PagesRead | None = None, max_chars: int | None = None, boxes: bool = False,
) -> tuple[list[Page], list[int], Outline, list[str]]:
    """Return (every page, numbers of pages without text, outline, notes) of a PDF's bytes.

    engine "pypdf" reads with pypdf alone (for comparison). progress(pages read, pages) is called every
    PROGRESS_PAGES pages; what it raises ends the read. The read runs in a child process that may use
    memory_limit(len(data), max_chars) bytes (rag.documents.bounded); DocumentTooLargeError when the text
    expands to more than max_chars characters (default RAG_MAX_CHARS; rag.documents.expansion) or the child
    runs out of memory or time. boxes: each page pdfium reads carries its words' rectangles (Page.words,
    rag.documents.boxes).
    """
    if max_chars is None:
        from rag.settings import limit

        max_chars = int(limit("RAG_MAX_CHARS"))
    read = functools.partial(_read, data, name, password, max_pages, max_chars, engine, boxes=boxes)
    return bounded.run(read, name, bounded.memory_limit(len(data), max_chars), _LOCK, progress, READERS)


def _read(data: bytes, name: str, password: str | None, max_pages: int, max_chars: int, engine: str,
          progress: PagesRead, boxes: bool = False) -> tuple[list[Page], list[int], Outline, list[str]]:
    """Return read_pdf's result, read in this process."""
    from rag.documents import pypdf_text

    with pypdf_text.library_messages() as messages:
        read = (_read_pdfium(data, name, password, max_pages, max_chars, progress, boxes) if engine == "pdfium"
                else None)
        if read is None:
            read = _read_pypdf(data, name, password, max_pages, max_chars, progress)
        texts, outline = read
    pages, empty, failed = [], [], []
    for number, (text, words) in enumerate(texts, 1):
        if text is None:
            failed.append(number)
        pages.append(Page(number, text or "", words))  # empty pages stay, so pages[i].number == i + 1
        if not text:
            empty.append(number)
    notes = _page_notes(name, len(texts), pages, empty, failed) + pypdf_text.library_note(messages)
    titled = [(" ".join(clean_pdf_text(title).split()), level, page) for title, level, page in outline]
    return pages, empty, [entry for entry in titled if entry[0]], notes


def _check_count(name: str, count: int, max_pages: int) -> None:
    if count > max_pages:
        raise DocumentTooLargeError(
            f"'{name}' has {count} pages; the limit is {max_pages}. "
            "Split it into smaller files, or raise the limit with RAG_MAX_PAGES.",
            name,
        )
    if count == 0:
        raise EmptyDocumentError(f"'{name}' has no pages. Choose a PDF with content.", name)


# ---- pdfium: one lock around every call --------------------------------------------------------------

_LOCK = threading.RLock()


def _new_lock() -> None:
    global _LOCK
    _LOCK = threading.RLock()  # a fork while another thread held it would leave the child's copy locked forever


os.register_at_fork(after_in_child=_new_lock)


def pdfium_lock() -> AbstractContextManager:
    """Return the lock every call into pdfium holds (a page drawn in rag.documents.render holds it too)."""
    return _LOCK


def _read_pdfium(data: bytes, name: str, password: str | None, max_pages: int, max_chars: int, progress: PagesRead,
                 boxes: bool = False) -> tuple[list[PageRead], Outline] | None:
    """Return (per page: its text, None when unreadable, and its words when asked; raw outline), or None when
    pdfium cannot read the file."""
    try:
        import pypdfium2
    except ImportError:  # no wheel for this platform: pypdf reads everything
        return None
    fallback = _Fallback(data, name, password)
    with _LOCK:
        document = _open_pdfium(pypdfium2, data, name, password)
        if document is None:
            return None
        try:
            count = len(document)
            _check_count(name, count, max_pages)
            texts, budget = [], TextBudget(name, max_chars, fallback.reader)
            for index in range(count):
                if index % PROGRESS_PAGES == 0:
                    progress(index, count)
                budget.check_page(index + 1)  # before pdfium spends ~260 bytes a character on it
                texts.append(_pdfium_page(document, index, fallback, boxes))
                budget.add(index + 1, texts[-1][0])
            return texts, _pdfium_outline(document)
        finally:
            document.close()


def page_count(data: bytes, password: str | None = None) -> int | None:
    """Return the PDF's number of pages without reading their text (an ingest's plan); None when pdfium cannot open
    it (damaged, encrypted with another password, no pdfium) in a child of a read's memory and time."""
    count = functools.partial(_count_pages, data, password)
    try:
        return bounded.run(count, "", bounded.memory_limit(len(data), 0), _LOCK, modules=READERS)
    except DocumentError:  # out of memory or time: its read says why
        return None


def _count_pages(data: bytes, password: str | None, progress: PagesRead) -> int | None:
    try:
        import pypdfium2
    except ImportError:
        return None
    with _LOCK:
        try:
            document = pypdfium2.PdfDocument(data, password=password or None)
        except pypdfium2.PdfiumError:
            return None
        try:
            return len(document)
        finally:
            document.close()


def _open_pdfium(pypdfium2: Any, data: bytes, name: str, password: str | None) -> Any:
    """Return the opened pdfium document, None when pdfium refuses it as damaged; raise EncryptedDocumentError."""
    from rag.documents.pypdf_text import password_error

    for attempt in dict.fromkeys([password or None, None]):  # an empty user password opens without one
        try:
            return pypdfium2.PdfDocument(data, password=attempt)
        except pypdfium2.PdfiumError as error:
            if getattr(error, "err_code", None) != pypdfium2.raw.FPDF_ERR_PASSWORD:
                return None
    raise password_error(name, password)


def _pdfium_page(document: Any, index: int, fallback: _Fallback, boxes: bool = False) -> PageRead:
    """Return page index's clean text: pdfium's, its glyph codes named by the fonts; pypdf's when pdfium fails;
    with boxes, pdfium's words and their rectangles too (None where pypdf read the page)."""
    try:
        if boxes:
            return pdfium_page_words(document, index, fallback)
        raw = pdfium_page_text(document, index, fallback)
    except Exception:  # one broken page must not cost the others
        return fallback.page_text(index + 1), None
    return clean_pdf_text(raw.replace(_PDFIUM_HYPHEN, "-\n"), index + 1), None


def pdfium_page_words(document: Any, index: int, fonts: _Fallback) -> tuple[str, PageWords | None]:
    """Return page index's clean text (as _pdfium_page's) and its words' rectangles; the caller holds the lock."""
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            raw = textpage.get_text_range()
            bracketed = symbol_brackets(textpage, raw)  # as long as raw: one map for both
            edits = repairs(bracketed, lambda at: fonts.letters(index + 1, font_at(textpage, at, bracketed[at]),
                                                                bracketed[at]))
            try:
                return _words_of(textpage, raw, MappedText(bracketed), edits, index + 1)
            except MemoryError:
                raise
            except Exception:  # noqa: BLE001 - the page keeps the text a read without boxes gives it, and no boxes
                return _words_of(None, raw, Text(bracketed), edits, index + 1)
        finally:
            textpage.close()
    finally:
        page.close()


def _words_of(textpage: Any, raw: str, text: Text, edits: list[tuple[int, str]], number: int
              ) -> tuple[str, PageWords | None]:
    """Return the clean text of a page's raw text with repairs' edits, and its words when textpage is given."""
    text.edit(edits)
    text.replace(_PDFIUM_HYPHEN, "-\n")
    clean(text, number)
    if textpage is None or not isinstance(text, MappedText):
        return text.text, None
    return text.text, page_words(textpage, raw, text.text, text.map)


def page_words_of(data: bytes, index: int, name: str = "the PDF") -> tuple[str, PageWords | None] | None:
    """Return page index's (0-based) clean text and its words' rectangles (None when pdfium gives none) as a read
    with boxes gives them, read in this process from that page alone (a kept file, read whole once already); None
    when pdfium cannot read it."""
    import pypdfium2

    with _LOCK:
        try:
            document = pypdfium2.PdfDocument(data)
        except pypdfium2.PdfiumError:
            return None
        try:
            if not 0 <= index < len(document):
                return None
            return pdfium_page_words(document, index, _Fallback(data, name, None))
        except Exception:  # a page pdfium fails on: the caller reads the file as an ingest does
            return None
        finally:
            document.close()


def pdfium_page_text(document: Any, index: int, fonts: _Fallback | None = None) -> str:
    """Return page index's (0-based) text as pdfium extracts it, angle brackets of TeX's symbol font named and,
    with fonts, the codes of unnamed glyphs replaced by their glyph names' letters; the caller holds the lock."""
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            text = symbol_brackets(textpage, textpage.get_text_range())
            if fonts is None:
                return text
            return repair(text, lambda at: fonts.letters(index + 1, font_at(textpage, at, text[at]), text[at]))
        finally:
            textpage.close()
    finally:
        page.close()


def _pdfium_outline(document: Any) -> Outline:
    """Return the bookmarks as (raw title, level 1 = top, 1-based page); [] when broken."""
    entries: Outline = []
    try:
        for bookmark in document.get_toc(max_depth=12):
            if len(entries) >= 10_000:
                break
            destination = bookmark.get_dest()
            index = destination.get_index() if destination is not None else None
            if index is not None and index >= 0:
                entries.append((bookmark.get_title() or "", bookmark.level + 1, index + 1))
    except Exception:  # broken bookmarks are no reason to refuse the text
        return entries
    return entries


# ---- pypdf: the fallback --------------------------------------------------------------------------------

class _Fallback:
    """pypdf on the same bytes, opened on first need (None when it cannot open them either): a page's text
    where pdfium fails, and the glyph names of a page's fonts (its font dictionaries only, not its text)."""

    def __init__(self, data: bytes, name: str, password: str | None):
        self.data, self.name, self.password = data, name, password
        self._reader: Any = None
        self._opened = False
        self._glyphs = FontGlyphs()

    def reader(self) -> Any:
        """Return the pypdf reader, None when pypdf cannot open the bytes."""
        from rag.documents import pypdf_text

        if not self._opened:
            self._opened = True
            try:
                self._reader = pypdf_text.open_pdf(self.data, self.name, self.password)
            except Exception:  # pypdf cannot help either: pdfium's text stays
                self._reader = None
        return self._reader

    def page_text(self, number: int) -> str | None:
        """Return page number's (1-based) clean text as pypdf reads it; None when it cannot."""
        from rag.documents import pypdf_text

        if self.reader() is None:
            return None
        try:
            return clean_pdf_text(pypdf_text.raw_page_text(self._reader, number), number)
        except Exception:
            return None

    def letters(self, number: int, font: str | None, code: str) -> str | None:
        """Return the letters glyph code of font stands for on page number (1-based); None when unknown."""
        if font is None or self.reader() is None:
            return None
        try:
            return self._glyphs.letters(self._reader, number, font, ord(code))
        except Exception:  # broken font dictionaries: the code stays
            return None


def _read_pypdf(data: bytes, name: str, password: str | None, max_pages: int, max_chars: int, progress: PagesRead
                ) -> tuple[list[PageRead], Outline]:
    """Return (page texts, None for an unreadable page; raw outline) as pypdf reads them; raise for a bad file."""
    from rag.documents import pypdf_text

    reader = pypdf_text.open_pdf(data, name, password)
    count = pypdf_text.page_count(reader, name)
    _check_count(name, count, max_pages)
    texts: list[PageRead] = []
    budget = TextBudget(name, max_chars, lambda: reader)
    for number in range(1, count + 1):
        if number % PROGRESS_PAGES == 1:
            progress(number - 1, count)
        budget.check_page(number)
        try:
            texts.append((clean_pdf_text(pypdf_text.raw_page_text(reader, number), number), None))
        except Exception:  # one broken page must not cost the others: it is reported as unreadable
            texts.append((None, None))
        budget.add(number, texts[-1][0])
    return texts, pypdf_text.outline(reader)


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
            f"'{name}' has no text layer: none of its {counted(count, 'page')} contains text, it is probably a scan. "
            "OCR is needed: run it through OCR, e.g. ocrmypdf, and upload the result.",
            name,
            pages=count,
        )
    notes = []
    if failed:
        notes.append(f"Page {_numbers(failed)} could not be read (damaged) and is left empty." if len(failed) == 1
                     else f"Pages {_numbers(failed)} could not be read (damaged) and are left empty.")
    if no_text := [number for number in empty if number not in failed]:
        notes.append(
            f"{len(no_text)} of {count} pages have no text ({plural(len(no_text), 'page')} "
            f"{_numbers(no_text)}), probably scanned "
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
