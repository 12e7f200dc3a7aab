"""Clean text: the decoding of text files and the characters removed from every page (text, Markdown, PDF).

Every pattern here is linear in the length of its input: hostile files (megabytes of spaces) stay bounded.
"""

from __future__ import annotations

import re
import unicodedata

from rag.documents.model import SUPPORTED
from rag.errors import UnsupportedFileError

CONTROL_CHARS = {c: None for c in (*range(32), *range(0x7F, 0xA0)) if chr(c) not in "\n\t"}
CONTROL_CHARS |= {0xFEFF: None, 0x200B: None}  # BOM / zero-width space inside text
CONTROL_CHARS |= {0x0B: "\n", 0x0C: "\n", 0x85: "\n", 0x2028: "\n", 0x2029: "\n"}
# Invisible inside a word: a soft hyphen, zero-width (non-)joiners, the word joiner. Left in, "Pass\u00adwort"
# is two words for keyword search and "Passwort" does not find it; removed, the word reads as it displays.
INVISIBLE_IN_WORDS = {0x00AD: None, 0x200C: None, 0x200D: None, 0x2060: None}
SURROGATES = re.compile("[\ud800-\udfff]")
BLANK_LINES = re.compile(r"\n{3,}")


def decode_text(data: bytes, name: str) -> tuple[str, list[str]]:
    """Return the text of a text file and notes; UTF-8 (BOM stripped), else cp1252, else latin-1."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), [f"'{name}' was decoded as UTF-16."]
        except UnicodeDecodeError:
            pass
    if b"\x00" in data[:4096]:
        raise UnsupportedFileError(
            f"'{name}' looks like a binary file, not text. RAG Lab reads {SUPPORTED} files; "
            "upload the document in one of these formats.",
            name,
        )
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError:
        pass
    for encoding, label in (("cp1252", "Windows-1252 (cp1252)"), ("latin-1", "Latin-1 (ISO-8859-1)")):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        return text, [f"'{name}' is not UTF-8; it was decoded as {label}. Check umlauts and special characters."]
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


def clean_plain_text(text: str) -> str:
    """Return a text file's text with Unix line ends, no control characters and at most one blank line."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(CONTROL_CHARS).translate(INVISIBLE_IN_WORDS)
    text = unicodedata.normalize("NFC", SURROGATES.sub("", text))
    # line by line, not `[ \t]+$` with MULTILINE: that regex retries every space of a long run (quadratic)
    text = "\n".join(line.rstrip(" \t") for line in text.split("\n"))
    return BLANK_LINES.sub("\n\n", text).strip()

