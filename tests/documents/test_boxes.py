"""Boxes: where a PDF chunk's text is on its pages, checked against pdfium's own bounded text (issue 42).

The measure is the issue's (bench/boxes.py, box_quality): per chunk, the share of its words read back inside its
boxes with get_text_bounded, and the share of the boxed words that belong to it. Medians must reach 0.95 and 0.85.
"""

from __future__ import annotations

import json
import re
import statistics

import numpy as np
import pypdfium2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.boxes import box_quality
from rag.chunking import chunk_document
from rag.cli import main
from rag.documents import Box, boxes_from_payload, load_document, span_boxes
from rag.documents.pdf_clean import clean_mapped, clean_pdf_text
from rag.errors import EncryptedDocumentError
from tests.conftest import read_shared, run
from tests.documents import layout_pdf

READABLE = ["hausarbeit-jura.pdf", "pdflatex-outline.pdf", "crazyones.pdf", "Seige_of_Vicksburg_Sample_OCR.pdf",
            "multipage.pdf"]


def quality(data: bytes, chunk_size: int = 350, overlap: int = 50) -> tuple[float, float, int]:
    """Return (median recall, median precision, chunks measured) of a PDF's chunks' boxes."""
    chunks = chunk_document(load_document(data, "a.pdf", boxes=True), chunk_size, overlap)
    rows = box_quality(data, chunks)
    assert rows, "no chunk has boxes"
    return statistics.median(r.recall for r in rows), statistics.median(r.precision for r in rows), len(rows)


def bounded(data: bytes, box: Box) -> str:
    document = pypdfium2.PdfDocument(data)
    try:
        return document[box.page - 1].get_textpage().get_text_bounded(box.left, box.bottom, box.right, box.top)
    finally:
        document.close()


# ---- the text keeps where it came from --------------------------------------------------------------------------

PIECES = ["Haus", "arbeit", "-\n", "\u00ad\n", " ", "  ", "\t", "\n", "\r\n", "\r", "\n \n\n\n", "ﬁ", "ﬂ", "ä",
          "a\u0308", "e\u0301\u0323", "\x00", "\x0c", "\u200d", "/f_i", "Ein-\nund", "7", "\n7", "Ä", "\ufeff", "ﬃ",
          "𝐀", "\ud835", "ǆ", "한", "\u1100\u1161", "x²", "½", "\u3000"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30), st.integers(0, 8))
def test_the_mapped_cleaning_gives_clean_pdf_text_and_a_map_into_the_raw_text(pieces, page_number):
    raw = "".join(pieces)
    mapped = clean_mapped(raw, page_number)
    assert mapped.text == clean_pdf_text(raw, page_number)
    assert len(mapped.map) == len(mapped.text)
    assert np.all(np.diff(mapped.map) >= 0) and (not len(mapped.map) or 0 <= mapped.map.min() <= mapped.map.max()
                                                 < len(raw))
    for at, char in enumerate(mapped.text):  # a letter maps to itself, or into what it was made of ("/f_i": fi)
        if char.isascii() and char.isalpha() and raw[mapped.map[at]].isascii():
            assert char in raw[mapped.map[at]:mapped.map[at] + 4]


@pytest.mark.parametrize("name", READABLE)
def test_a_read_with_boxes_has_the_text_of_one_without(shared_data, name):
    data = read_shared(shared_data, f"pdfs/{name}")
    assert load_document(data, name, boxes=True).pages == load_document(data, name).pages


def test_a_character_beyond_utf16_and_hyphenated_lines_keep_their_places():
    data = layout_pdf.hyphenated()
    document = load_document(data, "h.pdf", boxes=True)
    assert "Hauptstadt" in document.text and "Bundesland" in document.text
    at = document.text.index("Hauptstadt")
    boxes = document.span_boxes([(at, at + len("Hauptstadt"))])[0]
    assert [bounded(data, b).strip().rstrip("\x02-") for b in boxes] == ["Haupt", "stadt"]  # two lines, two boxes
    at = document.text.index("Formel:")  # after U+1D400, one Python character, two of pdfium's
    (box,) = document.span_boxes([(at, at + len("Formel:"))])[0]
    assert bounded(data, box).strip() == "Formel:"  # one character off, it would end at "Formel"


# ---- layouts: two columns, rotated pages, OCR, a German TeX PDF ------------------------------------------------

def test_two_columns_each_span_stays_in_its_column():
    data = layout_pdf.two_columns()
    document = load_document(data, "cols.pdf", boxes=True)
    recall, precision, _ = quality(data, 60, 10)
    assert recall >= 0.95 and precision >= 0.85
    left = document.pages[0].text.index("Wien liegt")
    right = document.pages[0].text.index("gebaut. 1897", left)  # the right column holds WORDS reversed
    for start, column in ((left, (56, 300)), (right, (320, 595))):
        boxes = document.span_boxes([(start, start + 150)])[0]
        assert len(boxes) >= 3 and all(column[0] - 2 <= b.left and b.right <= column[1] for b in boxes)
        text = " ".join(bounded(data, b) for b in boxes)
        assert text.split()[:3] == document.text[start:start + 150].split()[:3]


def test_rotated_pages_and_text_running_up_the_page():
    data = layout_pdf.rotated()
    document = load_document(data, "turned.pdf", boxes=True)
    for page in (2, 3):  # /Rotate 90; text set with a turned matrix
        start = document.page_starts[page - 1]
        boxes = document.span_boxes([(start, start + len(document.pages[page - 1].text))])[0]
        assert boxes and {b.page for b in boxes} == {page}
        words = re.findall(r"\w+", " ".join(bounded(data, b) for b in boxes))
        assert words == re.findall(r"\w+", document.pages[page - 1].text)
        if page == 3:  # each line runs up the page: its box is taller than wide
            assert all(b.top - b.bottom > b.right - b.left for b in boxes)
            assert len(boxes) == document.pages[2].text.count("\n") + 1
    recall, precision, _ = quality(data, 60, 10)
    assert recall >= 0.95 and precision >= 0.85


@pytest.mark.parametrize("name", ["Seige_of_Vicksburg_Sample_OCR.pdf", "hausarbeit-jura.pdf",
                                  "pdflatex-outline.pdf"])
def test_chunks_boxes_hold_their_words(shared_data, name):
    recall, precision, measured = quality(read_shared(shared_data, f"pdfs/{name}"))
    assert measured >= 3 and recall >= 0.95 and precision >= 0.85


def test_every_chunk_of_a_pdf_has_boxes_on_its_pages(shared_data):
    data = read_shared(shared_data, "pdfs/hausarbeit-jura.pdf")
    chunks = chunk_document(load_document(data, "h.pdf", boxes=True), 200, 20)
    for chunk in chunks:
        assert chunk.boxes and {b.page for b in chunk.boxes} <= set(range(chunk.page_start, chunk.page_end + 1))
        assert all(b.left < b.right and b.bottom < b.top for b in chunk.boxes)
    assert all(not c.boxes for c in chunk_document(load_document(data, "h.pdf"), 200, 20))  # read without


# ---- span_boxes, payloads, bad input ------------------------------------------------------------------------------

def test_span_boxes_of_bytes_with_a_password_and_of_a_text_file(shared_data):
    data = read_shared(shared_data, "pdfs/encrypted-file.pdf")
    document = load_document(data, "e.pdf", password="test", boxes=True)
    spans = [(0, 40), (len(document.text) - 20, len(document.text))]
    assert span_boxes(data, spans, password="test") == document.span_boxes(spans)
    assert all(span_boxes(data, spans, password="test"))
    with pytest.raises(EncryptedDocumentError) as error:
        span_boxes(data, spans, password="wrong")
    assert "\n" not in str(error.value)
    assert span_boxes(b"Ein Text.\n\nNoch einer.", [(0, 9)], filename="a.txt") == [[]]
    assert chunk_document(load_document(b"# Titel\n\nText hier.", "a.md", boxes=True))[0].boxes == ()


def test_a_box_round_trips_and_old_or_broken_payloads_have_none():
    box = Box(3, 56.81, 700.0, 120.5, 712.25)
    assert Box.from_dict(box.as_dict()) == box and json.loads(json.dumps(box.as_dict())) == box.as_dict()
    assert box.as_dict() == {"page": 3, "left": 56.81, "bottom": 700.0, "right": 120.5, "top": 712.25}
    assert boxes_from_payload({"content": "ingested before boxes"}) == []
    assert boxes_from_payload(None) == [] and boxes_from_payload({"boxes": None}) == []
    assert boxes_from_payload({"boxes": [{"page": 0, "left": 1, "bottom": 1, "right": 2, "top": 2}]}) == []
    assert boxes_from_payload({"boxes": [{"page": "x"}]}) == [] and boxes_from_payload({"boxes": [box.as_dict()]}) == [
        box]


def test_cli_chunk_json_and_search_json_carry_boxes(shared_data, tmp_path, capsys):
    pdf = str(shared_data / "pdfs/hausarbeit-jura.pdf")
    code, out, _ = run(capsys, "chunk", pdf, "--json")
    chunks = json.loads(out)["chunks"]
    assert code == 0 and all(c["boxes"] for c in chunks)
    assert all(set(b) == {"page", "left", "bottom", "right", "top"} and c["page_start"] <= b["page"] <= c["page_end"]
               for c in chunks for b in c["boxes"])
    md = tmp_path / "a.md"
    md.write_text("# Titel\n\nText hier.", encoding="utf-8")
    assert json.loads(run(capsys, "chunk", str(md), "--json")[1])["chunks"][0]["boxes"] == []
    store = str(tmp_path / "qdrant")
    assert main(["ingest", pdf, str(md), "--collection", "t", "--embedder", "fake:32", "--store", store,
                 "--child-size", "32"]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "search", "Gliederungsebenen Text hier", "--collection", "t", "--store", store,
                       "--json", "--top-k", "100", "--mode", "dense")
    hits = json.loads(out)["hits"]
    assert code == 0 and {h["document_title"] for h in hits} == {"hausarbeit-jura.pdf", "a.md"}
    for hit in hits:
        pdf_hit = hit["document_title"].endswith(".pdf")
        assert bool(hit["boxes"]) == pdf_hit
        if pdf_hit:  # the same chunks (default settings) with the same boxes as `rag chunk` gave
            assert next(c["boxes"] for c in chunks if c["content"] == hit["content"]) == hit["boxes"]


def test_children_of_a_pdf_chunk_get_their_boxes_in_the_parents_payload(shared_data, store):
    from rag import IngestOptions, pipeline
    from rag.chunking import ChunkSettings
    from rag.documents import SourceFile
    from rag.embeddings import get_embedder

    data = read_shared(shared_data, "pdfs/hausarbeit-jura.pdf")
    pipeline.ingest([SourceFile("h.pdf", data)], "kids", ChunkSettings(200, 20), get_embedder("fake:32"),
                    store=store, options=IngestOptions(child_size=32))
    document = load_document(data, "h.pdf", boxes=True)
    hits = store.document_chunks("kids", document.id)
    with_children = [h for h in hits if h.payload.get("child_boxes")]
    assert with_children
    for hit in with_children:
        assert hit.payload["boxes"] == [b.as_dict() for b in document.span_boxes([(hit.start, hit.end)])[0]]
        assert all(group for group in hit.payload["child_boxes"])
        pages = {b["page"] for group in hit.payload["child_boxes"] for b in group}
        assert pages <= set(range(hit.page_start, hit.page_end + 1))


def test_a_page_whose_words_fail_keeps_its_text_and_has_no_boxes(shared_data, monkeypatch):
    from rag.documents import pdf

    data = read_shared(shared_data, "pdfs/pdflatex-outline.pdf")
    words = pdf.page_words

    def fails_on_page_2(textpage, raw, text, to_raw):
        if text.startswith("1 Foo") and not fails_on_page_2.seen:
            fails_on_page_2.seen = True
            raise ValueError("no rectangles")
        return words(textpage, raw, text, to_raw)

    fails_on_page_2.seen = False
    monkeypatch.setattr(pdf, "page_words", fails_on_page_2)
    monkeypatch.setattr(pdf.bounded, "ISOLATED", False)  # read here, where the patch is
    document = load_document(data, "o.pdf", boxes=True)
    assert fails_on_page_2.seen and document.pages == load_document(data, "o.pdf").pages
    missing = [page.number for page in document.pages if page.words is None]
    assert len(missing) == 1 and document.has_boxes
    start = document.page_starts[missing[0] - 1]
    assert document.span_boxes([(start, start + len(document.pages[missing[0] - 1].text))]) == [[]]


def test_chunks_ingested_before_boxes_have_none(shared_data, store):
    from rag import pipeline
    from rag.chunking import ChunkSettings
    from rag.cli.store import hit_json
    from rag.documents import SourceFile
    from rag.embeddings import get_embedder

    data = read_shared(shared_data, "pdfs/crazyones.pdf")
    pipeline.ingest([SourceFile("c.pdf", data)], "old", ChunkSettings(100, 10), get_embedder("fake:32"), store=store)
    document_id = load_document(data, "c.pdf").id
    assert all(hit_json(h)["boxes"] for h in store.document_chunks("old", document_id))
    ids = [h.chunk_id for h in store.document_chunks("old", document_id)]
    store.client.delete_payload("old", keys=["boxes"], points=ids, wait=True)  # as chunks were before boxes
    hits = store.document_chunks("old", document_id)
    assert hits and all("boxes" not in h.payload and hit_json(h)["boxes"] == [] for h in hits)
    assert all(boxes_from_payload(h.payload) == [] for h in hits)
