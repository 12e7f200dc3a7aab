"""Writes rag/samples/incident-response.pdf: a two-page PDF with a real text layer, made without a PDF library.

    .venv/bin/python -m tests.documents.sample_pdf      # rewrites the sample (tests check it is this output)

Helvetica with WinAnsiEncoding (the 14 standard fonts need no embedding), one text object per page, no
compression: the file stays a few kilobytes and its bytes depend only on the text below.
"""

from __future__ import annotations

from pathlib import Path

PATH = Path(__file__).resolve().parents[2] / "rag" / "samples" / "incident-response.pdf"
TITLE = "Incident response in five steps"
PAGES = [
    [(18, TITLE), (11, ""),
     (11, "This guide says what to do when you suspect a security incident, for example a laptop that"),
     (11, "behaves strangely after opening an e-mail attachment, or a colleague's account sending spam."),
     (11, ""), (14, "1. Report"),
     (11, "Call the IT service desk on extension 4444 at once, day or night. Do not wait until you are"),
     (11, "sure: a false alarm costs minutes, a late report can cost days."),
     (11, ""), (14, "2. Contain"),
     (11, "Disconnect the affected device from the network by unplugging the cable or switching off"),
     (11, "Wi-Fi. Do not switch the device off: the memory may hold traces the analysts need."),
     (11, ""), (14, "3. Preserve"),
     (11, "Write down what you saw and when, with the exact time. Keep suspicious e-mails; do not"),
     (11, "forward them to colleagues.")],
    [(14, "4. Recover"),
     (11, "The security team decides when a device may return to the network. Passwords that may have"),
     (11, "been exposed are changed within 24 hours."),
     (11, ""), (14, "5. Learn"),
     (11, "Within two weeks of every incident the team meets for a review without blame. Its findings"),
     (11, "go into this guide and into the next security training.")],
]


def escape(line: str) -> bytes:
    """Return a line as a PDF string's bytes (cp1252, the WinAnsi of the fonts), backslashes and brackets escaped."""
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("cp1252")


def assemble(objects: list[bytes], header: bytes = b"%PDF-1.4\n", trailer: bytes = b"") -> bytes:
    """Return a PDF of objects (numbered from 1, the catalog first) with its cross-reference table and trailer
    (trailer: more entries of the trailer's dictionary, e.g. b" /Info 9 0 R")."""
    out, offsets = bytearray(header), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, trailer, xref)
    return bytes(out)


def _content(lines: list[tuple[int, str]]) -> bytes:
    """Return a page's content stream: the lines top down from 770 pt, each in its own font size."""
    out, y = [b"BT"], 770
    for size, line in lines:
        out.append(b"/F1 %d Tf 1 0 0 1 56 %d Tm (%s) Tj" % (size, y, escape(line)))
        y -= size + 6
    out.append(b"ET")
    return b"\n".join(out)


def sample_pdf_bytes() -> bytes:
    """Return the bytes of the sample PDF."""
    pages = len(PAGES)
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(pages)),
                                                            pages),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
    for i, lines in enumerate(PAGES):
        stream = _content(lines)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
                       b"/Contents %d 0 R >>" % (5 + 2 * i))
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    info = b"<< /Title (%s) /Producer (RAG Lab tests/documents/sample_pdf.py) >>" % escape(TITLE)
    objects.append(info)
    return assemble(objects, b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", b" /Info %d 0 R" % len(objects))


if __name__ == "__main__":
    PATH.write_bytes(sample_pdf_bytes())
    print(f"wrote {PATH} ({PATH.stat().st_size} bytes)")
