"""PDFs of known layout for the box tests, written without a PDF library: two columns, rotated pages, rotated text,
hyphenated lines, a character beyond UTF-16's basic plane.

Each line is placed with its own text matrix, so where every word is on the page is known from the layout; the
14 standard fonts need no embedding (Helvetica, WinAnsiEncoding). F2 is Helvetica whose ToUnicode table maps the
code of "A" to U+1D400 (MATHEMATICAL BOLD CAPITAL A), a character pdfium returns as a UTF-16 surrogate pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.documents.sample_pdf import assemble, escape

WIDTH, HEIGHT = 595, 842
_TO_UNICODE = b"""/CIDInit /ProcSet findresource begin 12 dict begin begincmap
/CMapName /Bold-A def 1 begincodespacerange <00> <FF> endcodespacerange
1 beginbfchar <41> <D835DC00> endbfchar endcmap CMapName currentdict /CMap defineresource pop end end"""


@dataclass
class Line:
    text: str
    x: float
    y: float
    size: float = 11
    font: str = "F1"
    angle: int = 0  # 0 or 90: text running up the page


@dataclass
class Sheet:
    lines: list[Line] = field(default_factory=list)
    rotate: int = 0  # the page's /Rotate


def _content(sheet: Sheet) -> bytes:
    out = [b"BT"]
    for line in sheet.lines:
        matrix = b"0 1 -1 0" if line.angle == 90 else b"1 0 0 1"
        out.append(b"/%s %g Tf %s %g %g Tm (%s) Tj" % (line.font.encode(), line.size, matrix, line.x, line.y,
                                                        escape(line.text)))
    out.append(b"ET")
    return b"\n".join(out)


def pdf_bytes(sheets: list[Sheet]) -> bytes:
    """Return a PDF of the sheets, one page each, A4."""
    n = len(sheets)
    kids = b" ".join(b"%d 0 R" % (6 + 2 * i) for i in range(n))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, n),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding /ToUnicode 5 0 R >>",
               b"<< /Length %d >>\nstream\n%s\nendstream" % (len(_TO_UNICODE), _TO_UNICODE)]
    for i, sheet in enumerate(sheets):
        stream = _content(sheet)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Rotate %d /Resources << /Font << "
                       b"/F1 3 0 R /F2 4 0 R >> >> /Contents %d 0 R >>" % (WIDTH, HEIGHT, sheet.rotate, 7 + 2 * i))
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    return assemble(objects)


def column(words: list[str], x: float, top: float, width: int = 36, size: float = 10) -> list[Line]:
    """Return words set as a ragged column of about width characters a line, from top down."""
    lines, current = [], ""
    for word in words:
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    lines.append(current)
    return [Line(text, x, top - i * size * 1.3, size) for i, text in enumerate(lines)]


WORDS = ("Der Fernsehturm am Alexanderplatz ist 368 Meter hoch und wurde 1969 eröffnet. Die Spree fließt durch "
         "die Stadt und mündet bei Spandau in die Havel. Wien liegt an der Donau und ist die Hauptstadt von "
         "Österreich. Der Stephansdom ist das Wahrzeichen der Stadt; sein Südturm misst 136 Meter. Das Riesenrad "
         "im Prater wurde 1897 gebaut. Hamburg hat den größten Hafen Deutschlands, Köln einen Dom mit zwei Türmen, "
         "München die Frauenkirche und den Englischen Garten, Dresden die Frauenkirche am Neumarkt.").split()


def two_columns() -> bytes:
    """Return a page of two columns of WORDS (left column at 56 pt, right at 320 pt), then a second of one."""
    left, right = WORDS * 2, list(reversed(WORDS)) * 2
    return pdf_bytes([Sheet(column(left, 56, 780) + column(right, 320, 780)), Sheet(column(WORDS, 56, 780, 80))])


def rotated() -> bytes:
    """Return three pages: upright, the same turned by /Rotate 90, and one whose text runs up the page."""
    upright = column(WORDS, 56, 780, 70)
    turned = [Line(line.text, 300 + i * 14, 80, 10, angle=90) for i, line in enumerate(upright)]
    return pdf_bytes([Sheet(upright), Sheet(column(WORDS, 56, 780, 70), rotate=90), Sheet(turned)])


def hyphenated() -> bytes:
    """Return a page whose lines end in hyphenated words ("Haupt-" / "stadt") and a line with U+1D400."""
    lines = [Line("Berlin ist die Haupt-", 56, 780), Line("stadt von Deutschland und hat rund", 56, 766),
             Line("3,7 Millionen Einwohner; sie ist ein Bundes-", 56, 752), Line("land.", 56, 738),
             Line("A", 56, 710, font="F2"), Line("Formel: der Vektor hat zwei Teile", 70, 710),
             Line("Zum Schluss ein Satz nach der Formel.", 56, 696)]
    return pdf_bytes([Sheet(lines)])
