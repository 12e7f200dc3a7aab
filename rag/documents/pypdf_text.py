"""pypdf, the fallback reader: opens what pdfium cannot, and names the glyphs pdfium leaves as control codes.

pdfium (rag.documents.pdf) reads the page text, the outline and encrypted files better and about 7x faster
(docs/benchmarks.md, "PDF text"). pypdf is kept for two things it still does better: it opens a file pypdfium2 cannot be
imported for or refuses, and it parses the font dictionaries whose glyph names ("f_i", "f_f_i") name the
codes pdfium returns for ligatures of fonts without a ToUnicode table ("er\\x1bndet"; rag.documents.ligatures).
What pypdf and fontTools log goes into the document's notes, never onto the user's terminal.
"""

from __future__ import annotations

import contextlib
import io
import logging
import threading
from collections.abc import Iterator

import pypdf

from rag.errors import CorruptDocumentError, EncryptedDocumentError

MAX_LIBRARY_NOTES = 3  # distinct pypdf messages kept in a document's notes
log = logging.getLogger(__name__)
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
def library_messages() -> Iterator[list[str]]:
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


def open_pdf(data: bytes, name: str, password: str | None) -> pypdf.PdfReader:
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
        raise corrupt(name, error) from error
    raise password_error(name, password)


def password_error(name: str, password: str | None) -> EncryptedDocumentError:
    """Return the error for an encrypted PDF that the password given (or none) does not open."""
    if password:
        return EncryptedDocumentError(
            f"The password for '{name}' is wrong. Enter the password that opens the PDF and try again.",
            name,
            wrong_password=True,
        )
    return EncryptedDocumentError(f"'{name}' is encrypted and opens only with its password. Enter its password "
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


def corrupt(name: str, error: Exception) -> CorruptDocumentError:
    """Return the error for a PDF that cannot be read."""
    detail = str(error).strip()[:200] or type(error).__name__
    return CorruptDocumentError(
        f"'{name}' could not be read as a PDF: it is damaged or incomplete ({detail}). "
        "Download or export it again and upload the new file.",
        name,
    )


def page_count(reader: pypdf.PdfReader, name: str) -> int:
    """Return the number of pages; CorruptDocumentError when the page tree is broken."""
    try:
        return len(reader.pages)
    except Exception as error:
        raise corrupt(name, error) from error


def raw_page_text(reader: pypdf.PdfReader, number: int) -> str:
    """Return page number's (1-based) text as pypdf extracts it; raises on a broken page."""
    return reader.pages[number - 1].extract_text() or ""


def outline(reader: pypdf.PdfReader) -> list[tuple[str, int, int]]:
    """Return the PDF's bookmarks as (raw title, level, 1-based page); [] when it has none or they are broken."""
    entries: list[tuple[str, int, int]] = []

    def walk(items: list, level: int) -> None:
        for item in items:
            if len(entries) >= 10_000 or level > 12:
                return
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            page = reader.get_destination_page_number(item)
            if page is not None and page >= 0:
                entries.append((str(item.title or ""), level, page + 1))

    try:
        walk(reader.outline, 1)
    except Exception:  # broken bookmarks are no reason to refuse the text
        return entries
    return entries
