"""load_document on the real sample files (good and bad), text files, limits, and random bytes."""

from __future__ import annotations

import contextlib
import hashlib
import re

import pypdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.documents.loader import load_document
from rag.documents.model import PAGE_SEPARATOR, Document
from rag.documents.pdf import clean_pdf_text
from rag.errors import (
    CorruptDocumentError,
    DocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
    EncryptedDocumentError,
    IngestCancelled,
    NoTextLayerError,
    UnsupportedFileError,
)
from tests.conftest import make_pdf, read_shared


def load_pdf(shared_data, name: str, password: str | None = None) -> Document:
    return load_document(read_shared(shared_data, f"pdfs/{name}"), name, password)


def assert_well_formed(document: Document) -> None:
    assert document.text == PAGE_SEPARATOR.join(page.text for page in document.pages)
    for page in document.pages:
        assert page.text == page.text.strip() and page.text and "\n\n\n" not in page.text
    assert [h.start for h in document.headings] == sorted(h.start for h in document.headings)
    for heading in document.headings:
        assert heading.start == 0 or document.text[heading.start - 1] == "\n"


# ---- the real PDFs ---------------------------------------------------------------------------------------


def test_hausarbeit_text_is_clean(shared_data):
    raw = "\n".join(p.extract_text() for p in pypdf.PdfReader(shared_data / "pdfs/hausarbeit-jura.pdf").pages)
    assert "Textver-\narbeitungen" in raw and "Gliederungs-\nebenen" in raw and "Oﬃceprogrammen" in raw
    document = load_pdf(shared_data, "hausarbeit-jura.pdf")
    assert document.kind == "pdf" and document.title == "hausarbeit-jura.pdf" and len(document.pages) == 8
    text = document.text
    assert "Textverarbeitungen" in text and "Gliederungsebenen" in text and "vorausgesetzt." in text
    assert "Officeprogrammen" in text and "erfindet das Rad" in text and "noautomatter" in text
    assert not re.search(r"[ﬀ-ﬆ]|/f_|/t_t", text)  # no ligature characters, no unmapped glyph names
    assert "Juristische Hausarbeiten zeichnen sich" in text
    assert "\n" in document.pages[0].text  # printed lines stay lines
    assert not re.search(r"[ \t]\n|\n[ \t]|  ", text)
    assert not document.pages[0].text.endswith("\n1")  # the page number line is gone
    assert document.empty_pages == () and document.notes == ()
    assert_well_formed(document)


def test_hausarbeit_headings_come_from_the_outline(shared_data):
    document = load_pdf(shared_data, "hausarbeit-jura.pdf")
    found = {h.title: (h.level, document.page_at(h.start), h.source) for h in document.headings}
    assert len(document.headings) == 17
    assert found["Einleitung"] == (1, 1, "outline")
    assert found["Klassenoptionen"] == (1, 2, "outline")
    assert found["Schriftgrößen"] == (2, 2, "outline")
    assert found["Satzspiegel"] == (2, 3, "outline")
    assert found["Querverweise"] == (3, 4, "outline")
    assert found["Literatur"] == (3, 6, "outline")
    assert found["Ausblick"] == (1, 7, "outline")
    lines = [document.text[h.start :].split("\n", 1)[0] for h in document.headings]
    assert lines[:3] == ["1 Einleitung", "2 Verwendete Pakete", "3 Klassenoptionen"]
    assert "4.1.1 Querverweise" in lines and "4.4 Gliederungsebenen" in lines


def test_pdflatex_outline_headings_skip_the_table_of_contents(shared_data):
    document = load_pdf(shared_data, "pdflatex-outline.pdf")
    headings = document.headings
    assert [h.title for h in headings] == ["Foo", "Bar", "Baz"] * 3
    assert [document.page_at(h.start) for h in headings] == [2, 2, 2, 2, 3, 3, 3, 4, 4]
    assert [document.text[h.start :].split("\n", 1)[0] for h in headings][3] == "4 Foo"
    assert_well_formed(document)


def test_nested_outline_gives_levels_and_drops_titles_not_in_the_text():
    body = ["Some text of the first section that runs on.", "It ends here."]
    data = make_pdf(
        [["1 Results", *body, "1.1 Accuracy", *body], ["1.1.1 Per language", *body, "2 Outlook", *body]],
        outline=[("Results", 1, 0), ("Accuracy", 2, 0), ("Per Language", 3, 1), ("Ghost", 2, 1), ("2 Outlook", 1, 1)],
    )
    document = load_document(data, "nested.pdf")
    found = [(h.title, h.level, document.page_at(h.start)) for h in document.headings]
    assert found == [("Results", 1, 1), ("Accuracy", 2, 1), ("Per Language", 3, 2), ("2 Outlook", 1, 2)]
    assert all(h.source == "outline" for h in document.headings)
    assert any("1 of 5 bookmarks" in note for note in document.notes)


def test_pdf_without_outline_gets_numbered_headings():
    data = make_pdf([["Intro line.", "2.1 Auftragsklärung", "Der Auftrag wird geklärt.", "3. Ergebnisse", "Gut."]])
    document = load_document(data, "plain.pdf")
    assert [(h.title, h.level, h.source) for h in document.headings] == [
        ("2.1 Auftragsklärung", 2, "numbered"),
        ("3. Ergebnisse", 1, "numbered"),
    ]


def test_vicksburg_ocr_text_and_crazyones_english(shared_data):
    vicksburg = load_pdf(shared_data, "Seige_of_Vicksburg_Sample_OCR.pdf")
    assert len(vicksburg.pages) == 6 and "dangerous for use" in vicksburg.text and "However," in vicksburg.text
    crazy = load_pdf(shared_data, "crazyones.pdf")
    assert crazy.text.startswith("The Crazy Ones") and "misfits" in crazy.text and "ﬁ" not in crazy.text
    assert_well_formed(vicksburg)
    assert_well_formed(crazy)


@pytest.mark.parametrize(
    ("name", "password", "expected"),
    [("encrypted-file.pdf", "test", "Example"), ("encryption__r6-user-password.pdf", "asdfzxcv", "pdf encryption")],
)
def test_encrypted_pdf_needs_the_right_password(shared_data, name, password, expected):
    with pytest.raises(EncryptedDocumentError, match="enter its password|Enter its password") as missing:
        load_pdf(shared_data, name)
    assert not missing.value.wrong_password and name in str(missing.value)
    with pytest.raises(EncryptedDocumentError) as wrong:
        load_pdf(shared_data, name, "not-the-password")
    assert wrong.value.wrong_password and name in str(wrong.value)
    assert expected in load_pdf(shared_data, name, password).text


def test_empty_user_password_opens_silently(shared_data):
    document = load_pdf(shared_data, "encryption__r6-empty-password.pdf")
    assert "pdf encryption test" in document.text and document.notes == ()
    assert "pdf encryption test" in load_pdf(shared_data, "encryption__r6-empty-password.pdf", "anything").text


def test_scan_without_text_layer_needs_ocr(shared_data):
    with pytest.raises(NoTextLayerError, match="OCR") as error:
        load_pdf(shared_data, "c02-22.pdf")
    assert error.value.pages == 1 and "c02-22.pdf" in str(error.value) and "1 page" in str(error.value)


def test_mostly_empty_pdf_loads_and_lists_empty_pages(shared_data):
    document = load_pdf(shared_data, "multipage.pdf")
    assert document.empty_pages == (1, 2, 3, 5, 6)
    assert [page.number for page in document.pages] == [1, 2, 3, 4, 5, 6]
    assert [bool(page.text) for page in document.pages] == [False, False, False, True, False, False]
    assert document.page_at(document.text.index(document.pages[3].text[:20])) == 4
    assert any("1-3, 5-6" in note and "OCR" in note for note in document.notes)


def test_invalid_and_truncated_pdfs_are_corrupt(shared_data):
    with pytest.raises(CorruptDocumentError, match="invalid.pdf"):
        load_pdf(shared_data, "invalid.pdf")
    data = read_shared(shared_data, "pdfs/hausarbeit-jura.pdf")
    try:
        document = load_document(data[: len(data) // 2], "half.pdf")
    except CorruptDocumentError as error:
        assert "half.pdf" in str(error)
    else:
        assert document.notes


def test_a_page_pdfium_fails_on_is_read_by_pypdf_else_left_empty_with_a_note(monkeypatch):
    from rag.documents import pdf

    data = make_pdf([["Erste Seite."], ["Zweite Seite."], ["Dritte Seite."]])
    pdfium_text, pypdf_text = pdf.pdfium_page_text, pypdf.PageObject.extract_text

    def pdfium_fails_on_page_2(document, index, fonts=None):
        if index == 1:
            raise RuntimeError("broken content stream")
        return pdfium_text(document, index, fonts)

    def pypdf_fails(self, *args, **kwargs):
        text = pypdf_text(self, *args, **kwargs)
        if "Zweite" in text or (pypdf_fails.all and "Erste" in text):
            raise pypdf.errors.PdfReadError("broken content stream")
        return text

    monkeypatch.setattr(pdf, "pdfium_page_text", pdfium_fails_on_page_2)
    assert load_document(data, "flaky.pdf").pages[1].text == "Zweite Seite."  # pypdf read the page
    pypdf_fails.all = False
    monkeypatch.setattr(pypdf.PageObject, "extract_text", pypdf_fails)
    document = load_document(data, "flaky.pdf")
    assert [page.number for page in document.pages] == [1, 2, 3] and document.empty_pages == (2,)
    assert document.pages[1].text == "" and document.text == "Erste Seite.\n\n\n\nDritte Seite."
    assert document.page_at(document.text.index("Dritte")) == 3
    assert any("Page 2 could not be read" in note for note in document.notes)
    monkeypatch.setattr(pdf, "pdfium_page_text", lambda document, index, *_: pdfium_fails_on_page_2(document, 1))
    pypdf_fails.all = True
    with pytest.raises(CorruptDocumentError, match="flaky.pdf"):
        load_document(make_pdf([["Erste Seite."], ["Zweite Seite."]]), "flaky.pdf")


def test_pdf_is_sniffed_without_a_pdf_extension(shared_data):
    document = load_document(read_shared(shared_data, "pdfs/crazyones.pdf"), "download.bin")
    assert document.kind == "pdf"


def test_id_is_the_sha256_of_the_bytes(shared_data):
    data = read_shared(shared_data, "pdfs/crazyones.pdf")
    assert load_document(data, "crazyones.pdf").id == hashlib.sha256(data).hexdigest()


# ---- cleaning ----------------------------------------------------------------------------------------------


def test_clean_pdf_text_rules():
    raw = "Auftrags-\nklärung im Max-\nPlanck-Institut, Ein-\nund Ausgang\x00\n\n\n\nNeuer\t\t Absatz  \n ﬁnal\n7"
    cleaned = clean_pdf_text(raw, page_number=7)
    assert cleaned == "Auftragsklärung im Max-Planck-Institut, Ein-\nund Ausgang\n\nNeuer Absatz\nfinal"
    assert clean_pdf_text("dan- \ngerous und Bundes\u00ad\nrepublik") == "dangerous und Bundesrepublik"
    assert clean_pdf_text("Seite -\nnicht getrennt") == "Seite -\nnicht getrennt"
    invisible = "Pass\u200dwort, Zeit\u2060raum, Auf\u200clage, Ge\u00adhalt"
    assert clean_pdf_text(invisible) == "Passwort, Zeitraum, Auflage, Gehalt"


# ---- text and Markdown files -------------------------------------------------------------------------------


def test_markdown_file(shared_data):
    document = load_document(read_shared(shared_data, "markdown/asvs-de-Using-ASVS.md"), "Using-ASVS.MD")
    assert document.kind == "markdown" and len(document.pages) == 1
    assert [(h.title, h.level) for h in document.headings][:4] == [
        ("Verwendung des ASVS", 1),
        ("Stufen zur Verifizierung der Anwendungssicherheit", 2),
        ("Verwendung dieses Standards", 2),
        ("Stufe 1 - Erste Schritte oder das absolute Minimum", 3),
    ]
    assert_well_formed(document)


def test_text_in_cp1252_decodes_with_a_note():
    document = load_document("Größe und Übermaß: 5 €\r\n".encode("cp1252"), "alt.txt")
    assert document.kind == "text" and document.text == "Größe und Übermaß: 5 €"
    assert any("cp1252" in note for note in document.notes)


def test_undecodable_cp1252_falls_back_to_latin1():
    document = load_document(b"caf\xe9 \x81", "odd.txt")
    assert document.text.startswith("café") and any("Latin-1" in note for note in document.notes)


def test_utf8_bom_is_stripped_and_blank_lines_collapse():
    document = load_document("\ufeffErste Zeile\n\n\n\n\nZweite  Zeile   \n".encode(), "bom.txt")
    assert document.text == "Erste Zeile\n\nZweite  Zeile" and document.notes == ()


def test_utf16_with_bom_and_binary_text_files():
    document = load_document("Grüße\naus Köln".encode("utf-16"), "win.txt")
    assert document.text == "Grüße\naus Köln" and any("UTF-16" in note for note in document.notes)
    with pytest.raises(UnsupportedFileError, match="binary"):
        load_document(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image.txt")


@pytest.mark.parametrize(("data", "name"), [(b"", "a.txt"), (b"", "a.pdf"), (b" \n\t\r\n ", "blank.md")])
def test_empty_files(data, name):
    with pytest.raises(EmptyDocumentError, match=re.escape(name)):
        load_document(data, name)


@pytest.mark.parametrize("name", ["report.docx", "notes"])
def test_unsupported_types_name_the_supported_ones(name):
    with pytest.raises(UnsupportedFileError, match=r"PDF.*\.txt.*\.md") as error:
        load_document(b"PK\x03\x04 some zip", name)
    assert name in str(error.value)


# ---- limits ------------------------------------------------------------------------------------------------


def test_size_and_page_limits(shared_data, monkeypatch):
    data = read_shared(shared_data, "pdfs/hausarbeit-jura.pdf")
    with pytest.raises(DocumentTooLargeError, match="hausarbeit-jura.pdf"):
        load_document(data, "hausarbeit-jura.pdf", max_bytes=1000)
    with pytest.raises(DocumentTooLargeError, match="8 pages.*limit is 5"):
        load_document(data, "hausarbeit-jura.pdf", max_pages=5)
    monkeypatch.setenv("RAG_MAX_PAGES", "7")
    with pytest.raises(DocumentTooLargeError, match="RAG_MAX_PAGES"):
        load_document(data, "hausarbeit-jura.pdf")
    monkeypatch.setenv("RAG_MAX_FILE_MB", "0.1")
    with pytest.raises(DocumentTooLargeError, match="RAG_MAX_FILE_MB"):
        load_document(data, "hausarbeit-jura.pdf")
    monkeypatch.setenv("RAG_MAX_FILE_MB", "1")
    monkeypatch.setenv("RAG_MAX_PAGES", "8")
    assert len(load_document(data, "hausarbeit-jura.pdf").pages) == 8


# ---- never a traceback -------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.one_of(st.binary(max_size=2000), st.binary(max_size=2000).map(lambda b: b"%PDF-1.4\n" + b)),
    name=st.sampled_from(["x.pdf", "x.txt", "x.md", "x.bin"]),
)
def test_random_bytes_give_a_document_or_a_document_error(data, name):
    try:
        document = load_document(data, name)
    except DocumentError as error:
        assert name in str(error)
    else:
        assert document.text.strip() and document.text == PAGE_SEPARATOR.join(p.text for p in document.pages)


def test_damaged_pdf_bytes_never_escape_as_other_errors(shared_data):
    data = bytearray(read_shared(shared_data, "pdfs/hausarbeit-jura.pdf"))
    for position in range(1000, len(data), len(data) // 10):
        damaged = bytes(data[:position]) + b"\x00garbage)>>endobj" + bytes(data[position + 17 :])
        with contextlib.suppress(DocumentError):
            load_document(damaged, "damaged.pdf")


def test_pdfium_and_pypdf_read_a_long_pdf_alike_and_tell_their_progress():
    pages = [[f"Seite {n}: Die Auftragsklärung im Abschnitt {n}.", "Zweite Zeile mit Umlauten äöü."] for n in range(30)]
    pages[0].insert(0, "Kapitel 1")
    pages[15].insert(0, "Kapitel 2")
    pages[7] = []  # one page without text
    data = make_pdf(pages, outline=[("Kapitel 1", 1, 0), ("Kapitel 2", 1, 15)])
    told: dict[str, list[tuple[int, int]]] = {"pdfium": [], "pypdf": []}
    read = {engine: load_document(data, "lang.pdf", pdf_engine=engine,
                                  pages_read=lambda done, total, e=engine: told[e].append((done, total)))
            for engine in told}
    assert read["pdfium"] == read["pypdf"]
    assert len(read["pdfium"].pages) == 30 and read["pdfium"].empty_pages == (8,)
    assert [h.title for h in read["pdfium"].headings] == ["Kapitel 1", "Kapitel 2"]
    assert told["pdfium"] == told["pypdf"] == [(0, 30), (10, 30), (20, 30)]


def test_what_pages_read_raises_stops_the_read():
    data = make_pdf([[f"Seite {n}."] for n in range(25)])

    def stop(done: int, total: int) -> None:
        if done:
            raise IngestCancelled("stopped")

    with pytest.raises(IngestCancelled):
        load_document(data, "lang.pdf", pages_read=stop)
    assert len(load_document(data, "lang.pdf").pages) == 25  # the lock and the pdfium document were let go
