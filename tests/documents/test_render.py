"""A page drawn with its boxes marked (rag.documents.render): real pdfium, real PDFs, pixels compared."""

from __future__ import annotations

import io
from dataclasses import replace

import pypdfium2
import pytest
from PIL import Image

from rag.documents import (
    CHUNK,
    MATCH,
    Box,
    Mark,
    load_document,
    page_count,
    place_spans,
    render_page,
    stack_pngs,
    unlocked_copy,
)
from rag.documents.render import COLOURS
from rag.errors import EncryptedDocumentError, InvalidSettingsError, NoPageImageError
from tests.conftest import make_pdf


def image(png: bytes) -> Image.Image:
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    return Image.open(io.BytesIO(png)).convert("RGB")


def changed(plain: Image.Image, marked: Image.Image) -> set[tuple[int, int]]:
    """Return the pixels that differ between two renders of one page."""
    a, b = plain.load(), marked.load()
    return {(x, y) for x in range(plain.width) for y in range(plain.height) if a[x, y] != b[x, y]}


def rotated(pdf: bytes, degrees: int) -> bytes:
    document = pypdfium2.PdfDocument(pdf)
    document[0].set_rotation(degrees)
    out = io.BytesIO()
    document.save(out)
    document.close()
    return out.getvalue()


def char_box(pdf: bytes, text: str) -> Box:
    """Return the box pdfium gives the first occurrence of text on page 1 (page coordinates)."""
    document = pypdfium2.PdfDocument(pdf)
    page = document[0]
    textpage = page.get_textpage()
    at = textpage.get_text_range().index(text)
    boxes = [textpage.get_charbox(i) for i in range(at, at + len(text))]
    document.close()
    return Box(1, min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
               max(b[3] for b in boxes))


def test_marks_fill_the_box_and_nothing_far_from_it(shared_data):
    data = (shared_data / "pdfs/hausarbeit-jura.pdf").read_bytes()
    box = Box(2, 150, 500, 400, 560)  # points: a block in the middle of page 2
    plain = image(render_page(data, 2, 612))
    marked = image(render_page(data, 2, 612, [Mark(CHUNK, (box,))]))
    assert plain.size == marked.size and plain.width == 612
    scale = 612 / pypdfium2.PdfDocument(data)[1].get_size()[0]
    left, right = box.left * scale, box.right * scale
    top, bottom = plain.height - box.top * scale, plain.height - box.bottom * scale
    diff = changed(plain, marked)
    assert diff, "nothing was marked"
    assert all(left - 4 <= x <= right + 4 and top - 4 <= y <= bottom + 4 for x, y in diff)
    centre = (int((left + right) / 2), int((top + bottom) / 2))
    assert centre in diff  # filled, not only outlined
    r, g, b = marked.getpixel((int(left) + 6, int(top) + 6))
    assert (r, g, b) != plain.getpixel((int(left) + 6, int(top) + 6)) and r > b  # amber over white: less blue
    assert marked.getpixel((int(left), int(top) + 10))[:3] == pytest.approx(COLOURS[CHUNK], abs=40)  # the outline


def test_two_kinds_get_two_colours_and_boxes_of_other_pages_are_left_out(shared_data):
    data = (shared_data / "pdfs/hausarbeit-jura.pdf").read_bytes()
    chunk, match, elsewhere = Box(3, 100, 400, 500, 600), Box(3, 200, 450, 300, 500), Box(4, 0, 0, 600, 800)
    plain = image(render_page(data, 3, 500))
    marked = image(render_page(data, 3, 500, [Mark(CHUNK, (chunk, elsewhere)), Mark(MATCH, (match,))]))
    scale = 500 / pypdfium2.PdfDocument(data)[2].get_size()[0]

    def at(x: float, y: float) -> tuple[int, int]:
        return int(x * scale), int(marked.height - y * scale)

    in_match, in_chunk_only, outside = at(250, 475), at(120, 420), at(50, 100)
    assert marked.getpixel(outside) == plain.getpixel(outside)
    assert marked.getpixel(in_match) != marked.getpixel(in_chunk_only)  # red over amber is not amber
    r, g, b = marked.getpixel(in_match)
    assert r > g and r > b


@pytest.mark.parametrize("degrees", [0, 90, 180, 270])
def test_a_rotated_page_marks_where_its_words_are_drawn(degrees):
    pdf = rotated(make_pdf([["Erste Zeile ohne Bedeutung", "Die Frist betraegt drei Monate.", "Letzte Zeile"]]),
                  degrees)
    box = char_box(pdf, "drei Monate")
    plain = image(render_page(pdf, 1, 600))
    marked = image(render_page(pdf, 1, 600, [Mark(MATCH, (box,))]))
    diff = changed(plain, marked)
    xs, ys = [x for x, _ in diff], [y for _, y in diff]
    region = (min(xs), min(ys), max(xs), max(ys))
    ink = plain.convert("L").load()
    dark = [(x, y) for x in range(region[0], region[2] + 1) for y in range(region[1], region[3] + 1)
            if ink[x, y] < 100]
    assert len(dark) > 20  # the words' ink lies inside the marked rectangle, whichever way the page is turned
    assert max(region[2] - region[0], region[3] - region[1]) < min(plain.size) / 3  # two words, not the page
    assert (region[2] - region[0] > region[3] - region[1]) == (degrees in (0, 180))  # a line runs along the page


def test_a_page_past_the_end_an_encrypted_file_and_a_bad_width_say_what_to_do(shared_data):
    data = (shared_data / "pdfs/hausarbeit-jura.pdf").read_bytes()
    with pytest.raises(NoPageImageError, match=r"has 8 pages; page 9 is past its end. Choose a page from 1 to 8"):
        render_page(data, 9, 400, name="hausarbeit-jura.pdf")
    with pytest.raises(InvalidSettingsError, match="pixels wide"):
        render_page(data, 1, 20)
    locked = (shared_data / "pdfs/encryption__r6-user-password.pdf").read_bytes()
    with pytest.raises(EncryptedDocumentError, match="opens only with its password"):
        render_page(locked, 1, 400, name="locked.pdf")
    with pytest.raises(EncryptedDocumentError, match="password for 'locked.pdf' is wrong"):
        render_page(locked, 1, 400, password="nope", name="locked.pdf")
    assert image(render_page(locked, 1, 400, password="asdfzxcv")).width == 400
    unlocked = unlocked_copy(locked, "asdfzxcv")
    assert page_count(unlocked) == page_count(locked, password="asdfzxcv")  # opens without the password


def test_pages_stack_into_one_image(shared_data):
    data = (shared_data / "pdfs/hausarbeit-jura.pdf").read_bytes()
    one, two = render_page(data, 1, 300), render_page(data, 2, 300)
    stacked = image(stack_pngs([one, two]))
    assert stacked.width == 300 and stacked.height == image(one).height + image(two).height + 16
    assert stack_pngs([one]) == one


@pytest.mark.parametrize("name", ["hausarbeit-jura.pdf", "Seige_of_Vicksburg_Sample_OCR.pdf", "pdflatex-outline.pdf"])
def test_spans_placed_from_their_pages_alone_are_the_whole_reads(shared_data, name):
    data = (shared_data / "pdfs" / name).read_bytes()
    whole = load_document(data, name, boxes=True)
    saved = load_document(data, name)  # as the archive keeps it: text, no words
    text = whole.text
    spans = [(0, 40), (len(text) // 3, len(text) // 3 + 500), (len(text) - 300, len(text)),
             (whole.page_starts[-1] - 50, whole.page_starts[-1] + 50)]
    placed = place_spans(data, saved, spans, key=f"test-{name}")
    assert placed == whole.span_boxes(spans)
    assert all(placed)


def test_a_page_that_reads_differently_is_not_placed(shared_data):
    data = (shared_data / "pdfs/hausarbeit-jura.pdf").read_bytes()
    saved = load_document(data, "a.pdf")
    changed_text = replace(saved, pages=(replace(saved.pages[0], text=saved.pages[0].text + " x"), *saved.pages[1:]))
    assert place_spans(data, changed_text, [(0, 30)], key="test-changed") is None


def test_a_page_is_drawn_in_a_child_of_bounded_memory(monkeypatch):
    """A page that needs more memory than a drawing may map ends in one line; the drawing process (the app) goes on."""
    from rag.documents import bounded, render
    from rag.errors import DocumentTooLargeError

    pdf = make_pdf(["Ein Satz auf der Seite."])
    monkeypatch.setattr(bounded, "BASE_MEMORY", 8 << 20)
    monkeypatch.setattr(render, "DRAW_MEMORY", 8 << 20)  # a 4000-pixel page's bitmap alone takes about 80 MB
    with pytest.raises(DocumentTooLargeError, match=r"^'seite.pdf' needs more than"):
        render_page(pdf, 1, 4000, name="seite.pdf")
    monkeypatch.undo()
    assert image(render_page(pdf, 1, 4000, name="seite.pdf")).width == 4000  # the same page, within the bound
