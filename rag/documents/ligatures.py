"""Control codes pdfium returns for unnamed glyphs -> the letters the font's glyph names give ("er\\x1bndet").

A TeX font without a ToUnicode table names its ligatures in its /Encoding /Differences: "f_i", "f_f_i", "T_h",
"Q_u" ... pdfium maps only the names of the Adobe Glyph List and returns the glyph's code for the others, a
code that differs from font to font (\\x1b is "fi" in one, \\x1c "ft" in another; one page can hold both).
So each code on a page with such words is looked up in the glyph names of its own font (FontGlyphs: the
page's font dictionaries, read with pypdf's object parser, never its text extraction) and named by the Glyph
List's rules: components joined by "_", "uniXXXX", "uXXXX". Only names that spell letters replace a code; codes
without such a name stay (text cleaning drops them). The same font question restores TeX's ⟨⟩ brackets,
which pdfium reads as the letters h and i of the math symbol font (symbol_brackets).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

CODES = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0/C1 controls but tab, line feed, carriage return
_CODE = re.compile(f"[{CODES}]")
_CODE_BY_LETTER = re.compile(rf"[^\W\d_][{CODES}]|[{CODES}][^\W\d_]")
_UNI = re.compile(r"uni((?:[0-9A-F]{4})+)")
_U = re.compile(r"u([0-9A-F]{4,6})")
_SUBSET = re.compile(r"^[A-Z]{6}\+")  # "IBFCLK+LinLibertineT": the subset tag pdfium leaves out of the name
Letters = Callable[[int], "str | None"]  # text index of a code -> the letters its glyph stands for, or None


def repair(text: str, letters_at: Letters) -> str:
    """Return text with each control code replaced by letters_at(its index) where that is letters.

    letters_at is asked only on a page where a code touches a letter (a word like "er\x1bndet"): most pages
    have no code, and stray codes alone (a math table's symbols) are not worth reading the fonts for.
    """
    edits = repairs(text, letters_at)
    if not edits:
        return text
    chars = list(text)
    for at, letters in edits:
        chars[at] = letters
    return "".join(chars)


def repairs(text: str, letters_at: Letters) -> list[tuple[int, str]]:
    """Return repair's changes: (index of a control code, the letters that replace it), ascending."""
    if not _CODE.search(text) or not _CODE_BY_LETTER.search(text):
        return []
    return [(match.start(), letters) for match in _CODE.finditer(text)
            if (letters := letters_at(match.start())) and letters.isalpha()]


def glyph_letters(name: str) -> str | None:
    """Return the text a glyph name stands for by the Adobe Glyph List's rules ("f_f_i" -> "ffi"); None if unknown."""
    from pypdf._codecs import adobe_glyphs  # the Adobe Glyph List, {"/fi": "ﬁ", ...}

    parts = []
    for part in name.lstrip("/").split(".", 1)[0].split("_"):  # "f_i.alt": a variant of f_i
        if (known := adobe_glyphs.get("/" + part)) is not None:
            parts.append(known)
        elif match := _UNI.fullmatch(part):
            parts.append("".join(chr(int(match[1][i:i + 4], 16)) for i in range(0, len(match[1]), 4)))
        elif (match := _U.fullmatch(part)) and int(match[1], 16) <= 0x10FFFF:
            parts.append(chr(int(match[1], 16)))
        else:
            return None
    return "".join(parts) or None


def font_name(name: str) -> str:
    """Return a font's base name without its subset tag, as pdfium reports it."""
    return _SUBSET.sub("", name.lstrip("/"))


class FontGlyphs:
    """code -> letters for each font of a page, from its /Encoding /Differences; fonts read once per document.

    Two fonts of one name on a page that name a code differently leave that code out (it cannot be told apart).
    """

    MAX_DEPTH = 4  # form XObjects inside form XObjects

    def __init__(self) -> None:
        self._fonts: dict[Any, dict[int, str]] = {}  # font object (by reference) -> its codes
        self._pages: dict[int, dict[str, dict[int, str]]] = {}

    def letters(self, reader: Any, number: int, font: str, code: int) -> str | None:
        """Return the letters of code in font (pdfium's name) on page number (1-based) of a pypdf reader."""
        if number not in self._pages:
            self._pages[number] = self._page_fonts(page_resources(reader, number - 1))
        return self._pages[number].get(font_name(font), {}).get(code)

    def _page_fonts(self, resources: Any) -> dict[str, dict[int, str]]:
        named: dict[str, dict[int, str]] = {}
        clashes: set[tuple[str, int]] = set()
        for font in self._fonts_of(resources, 0, set()):
            name = font_name(str(font.get_object().get("/BaseFont", "")))
            codes = named.setdefault(name, {})
            for code, letters in self._codes(font).items():
                if codes.setdefault(code, letters) != letters:
                    clashes.add((name, code))
        for name, code in clashes:
            named[name].pop(code, None)
        return named

    def _fonts_of(self, resources: Any, depth: int, seen: set) -> list:
        if resources is None or depth > self.MAX_DEPTH:
            return []
        resources = resources.get_object()
        fonts = list((resources.get("/Font") or {}).get_object().values()) if resources.get("/Font") else []
        for xobject in (resources.get("/XObject") or {}).get_object().values() if resources.get("/XObject") else []:
            key = getattr(xobject, "idnum", None) or id(xobject)
            if key not in seen and xobject.get_object().get("/Subtype") == "/Form":
                seen.add(key)
                fonts += self._fonts_of(xobject.get_object().get("/Resources"), depth + 1, seen)
        return fonts

    def _codes(self, font: Any) -> dict[int, str]:
        key = (font.idnum, font.generation) if hasattr(font, "idnum") else id(font)
        if key not in self._fonts:
            self._fonts[key] = _differences(font.get_object())
        return self._fonts[key]


def page_resources(reader: Any, index: int) -> Any:
    """Return the /Resources of page index (0-based), inherited ones included; None when there is no such page.

    The page tree is walked down by its /Count entries, so only the nodes on the way are read: pypdf's
    reader.pages reads every page object first (a second or more for a long PDF in object streams).
    """
    node = reader.trailer["/Root"].get_object()["/Pages"].get_object()
    resources = node.get("/Resources")
    for _ in range(64):  # a page tree deeper than this is broken (or a loop)
        kids = node.get("/Kids")
        if kids is None:
            return resources
        for kid in kids.get_object():
            kid = kid.get_object()
            count = int(kid.get("/Count", 1)) if "/Kids" in kid else 1
            if index < count:
                node, resources = kid, kid.get("/Resources", resources)
                break
            index -= count
        else:
            return None
    return None


def _differences(font: Any) -> dict[int, str]:
    """Return code -> letters of the names in a font's /Encoding /Differences that spell letters."""
    encoding = font.get("/Encoding")
    encoding = encoding.get_object() if encoding is not None else None
    differences = encoding.get("/Differences") if hasattr(encoding, "get") else None
    codes: dict[int, str] = {}
    code = 0
    for item in differences.get_object() if differences is not None else []:
        item = item.get_object()
        if isinstance(item, int):
            code = item
            continue
        if (letters := glyph_letters(str(item))) and letters.isalpha():
            codes[code] = letters
        code += 1
    return codes


# ---- pdfium's view of a character's font: the pdf module holds the lock ----------------------------------

def font_at(textpage: Any, at: int, char: str) -> str | None:
    """Return the base name of the font of char at text index at; None when pdfium's index is not aligned."""
    import ctypes

    from pypdfium2 import raw

    if raw.FPDFText_GetUnicode(textpage.raw, at) != ord(char):  # a character beyond UTF-16 came before
        return None
    size = raw.FPDFText_GetFontInfo(textpage.raw, at, None, 0, None)
    buffer = ctypes.create_string_buffer(max(size, 1))
    raw.FPDFText_GetFontInfo(textpage.raw, at, buffer, size, None)
    return buffer.value.decode("latin-1")


# the h first, so re looks for it alone (a leading look-behind tried at every character was 15x slower)
_ANGLED = re.compile(r"h(?<![^\W\d_]h)[^\W\d_][^\s⟨⟩]{0,40}?i(?![^\W\d_])")
_SYMBOL_FONT = re.compile(r"^(?:[A-Z]{6}\+)?(?:CMB?SY\d|LMMathSymbols)", re.IGNORECASE)
_FONT_NAME = 64


def symbol_brackets(textpage: Any, text: str) -> str:
    """Return text with TeX's ⟨argument⟩ brackets back where pdfium read them as letters ("hSprachei").

    The math symbol font (CMSY, Latin Modern's MathSymbols) has no ToUnicode table in many TeX PDFs, and pdfium
    then returns its codes as letters: 0x68 "h" is ⟨, 0x69 "i" is ⟩ (the OMS encoding). Only an h and an i
    of such a font are changed; the font of a character is asked only where the text has the h...i shape.
    """
    import ctypes

    from pypdfium2 import raw

    buffer = ctypes.create_string_buffer(_FONT_NAME)

    def symbol(at: int, letter: str) -> bool:
        if raw.FPDFText_GetUnicode(textpage.raw, at) != ord(letter):  # not aligned (a character beyond UTF-16)
            return False
        raw.FPDFText_GetFontInfo(textpage.raw, at, buffer, _FONT_NAME, None)
        return bool(_SYMBOL_FONT.match(buffer.value.decode("latin-1")))

    chars = None
    for match in _ANGLED.finditer(text):
        for at, letter, bracket in ((match.start(), "h", "⟨"), (match.end() - 1, "i", "⟩")):
            if symbol(at, letter):
                chars = chars or list(text)
                chars[at] = bracket
    return "".join(chars) if chars else text
