"""Where text lies on its PDF page: rectangles (Box) in PDF points, in the page's own coordinates.

STAND-IN: the `boxes` branch provides the real module (one rectangle per line fragment, mapped through the
extraction's character offsets). Until it lands, span_boxes gives, for every page a span touches, one rectangle
around that page's text: enough to draw a page and mark it, not to say where on the page the words are.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rag.documents.model import PAGE_SEPARATOR


@dataclass(frozen=True)
class Box:
    """One rectangle on a page: 1-based page number, PDF points in the page's own coordinates (y grows upwards)."""

    page: int
    left: float
    bottom: float
    right: float
    top: float

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Box:
        return cls(int(data["page"]), float(data["left"]), float(data["bottom"]), float(data["right"]),
                   float(data["top"]))


def span_boxes(data: bytes, spans: list[tuple[int, int]], *, password: str | None = None) -> list[list[Box]]:
    """Return for each character span of the document's text the boxes of its pages (see module: a stand-in)."""
    import pypdfium2

    from rag.documents.loader import load_document
    from rag.documents.pdf import pdfium_lock

    document = load_document(data, "document.pdf", password=password)
    starts = document.page_starts
    found: list[list[Box]] = []
    with pdfium_lock():
        pdf = pypdfium2.PdfDocument(data, password=password or None)
        try:
            for start, end in spans:
                pages = [p.number for p, s in zip(document.pages, starts, strict=True)
                         if s < end and s + len(p.text) + len(PAGE_SEPARATOR) > start and p.text]
                found.append([_text_area(pdf, number) for number in pages])
        finally:
            pdf.close()
    return found


def _text_area(pdf, number: int) -> Box:
    page = pdf[number - 1]
    text = page.get_textpage()
    try:
        boxes = [text.get_charbox(i) for i in range(text.count_chars())]
        boxes = [b for b in boxes if b[2] > b[0] and b[3] > b[1]] or [(0, 0, *page.get_size())]
        return Box(number, min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                   max(b[3] for b in boxes))
    finally:
        text.close()
        page.close()
