"""chunk_document gives byte-identical chunks to the chunker before issue 25's speed-up (reference_chunker.py).

Every field of every chunk is compared (content, offsets, token count, heading path, pages, flags) on the
shared PDFs and Markdown, on the German XQuAD articles as one Markdown document, and on generated documents
made of what cuts are made of: line breaks of every kind, space runs, long words, punctuation and headings.

Markdown is the one change since (issue 34): its pipe tables are cut only between rows and a chunk that
continues a table carries the table's header (rag.chunking.tables). A Markdown document is therefore compared
twice: read as plain text (same text, same headings) every chunk is the reference's, and read as Markdown
every section without a table is too (the sections with tables are checked by tests/chunking/test_tables.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.chunking import tokens
from rag.chunking.chunker import _sections, chunk_document
from rag.chunking.tables import find_tables
from rag.documents.loader import load_document
from rag.documents.model import PAGE_SEPARATOR, Document, Heading, Page
from tests.chunking import reference_chunker
from tests.chunking.test_chunking import documents

SETTINGS = [(350, 50), (512, 64), (100, 20), (600, 80), (200, 0), (30, 5), (8, 2)]
REAL = ["pdfs/hausarbeit-jura.pdf", "pdfs/pdflatex-outline.pdf", "pdfs/Seige_of_Vicksburg_Sample_OCR.pdf",
        "pdfs/crazyones.pdf", "pdfs/multipage.pdf", "pdfs/encryption__r6-empty-password.pdf",
        "markdown/asvs-de-V2-Authentication.md", "markdown/asvs-de-Using-ASVS.md",
        "markdown/LICENSE-ASVS.md"]  # fmt: skip


def assert_identical(document: Document, chunk_size: int, overlap: int, strategy: str) -> list:
    tokens._count_short.cache_clear()  # a new document, as the first run in a process sees it
    new = chunk_document(document, chunk_size, overlap, strategy)
    old = reference_chunker.chunk_document(document, chunk_size, overlap, strategy)
    assert len(new) == len(old)
    for mine, theirs in zip(new, old, strict=True):
        assert mine == theirs
    return new


def assert_identical_outside_tables(document: Document, chunk_size: int, overlap: int) -> None:
    """Markdown: the chunks of every section without a table are the reference's (their index aside)."""
    tables = find_tables(document.text)
    plain = [(a, b) for a, b in _sections(document) if not any(a <= t.start < b for t in tables)]
    new = chunk_document(document, chunk_size, overlap, "structure")
    old = reference_chunker.chunk_document(document, chunk_size, overlap, "structure")

    def by_section(chunks: list) -> dict:
        return {(a, b): [replace(c, chunk_index=0) for c in chunks if a <= c.start < b] for a, b in plain}

    assert by_section(new) == by_section(old)


@pytest.mark.parametrize("relative", REAL)
def test_chunks_of_real_documents_are_todays(shared_data, relative):
    path = shared_data / relative
    document = load_document(path.read_bytes(), path.name)
    markdown = document.kind == "markdown"
    as_text = replace(document, kind="text") if markdown else document  # the splitter itself, unchanged
    for chunk_size, overlap in SETTINGS:
        for strategy in ("structure", "tokens"):
            assert assert_identical(as_text, chunk_size, overlap, strategy)
        if markdown:
            assert_identical(document, chunk_size, overlap, "tokens")  # token windows know no tables
            assert_identical_outside_tables(document, chunk_size, overlap)


def test_chunks_of_german_prose_are_todays(shared_data):
    """The 24 German XQuAD articles as one Markdown document: headings, pages of prose, 100 kB."""
    articles = json.loads((shared_data / "xquad-de/xquad.de.dev.json").read_bytes())["data"]
    text = "\n\n".join(f"# {a['title']}\n\n" + "\n\n".join(p["context"] for p in a["paragraphs"]) for a in articles)
    document = load_document(text.encode(), "xquad.md")
    assert len(document.headings) == len(articles) and len(text) > 100_000
    for chunk_size, overlap in SETTINGS[:5]:
        chunks = assert_identical(document, chunk_size, overlap, "structure")
        assert {c.heading_path for c in chunks} == {(a["title"],) for a in articles}
    assert_identical(document, 350, 50, "tokens")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.integers(4, 300), st.data())
def test_chunks_of_generated_documents_are_todays(document, chunk_size, data):
    overlap = data.draw(st.integers(0, chunk_size - 1))
    for strategy in ("structure", "tokens"):
        assert_identical(document, chunk_size, overlap, strategy)


# where token counts and cuts are decided: line breaks of every kind, space runs, words, punctuation, digits
EDGES = st.sampled_from(
    ["Wort", "Auftragsklärung", "die", "Straße", "ß", "über", "2024", "12345", "3,5", "z.B.", "Abs.", "1.", "'s",
     "e-mail", "(Klammer)", "„Zitat“", "😀", "<|endoftext|>", "…", ".", "...", "!", "?", ";", "-", "#", "##", "*",
     "|", "x" * 80, "Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichen", "https://example.org/a?b=1",
     " ", " ", " ", "  ", "   ", "\t", " \t", "\n", "\n", "\n\n", "\n\n\n", " \n", "\n ", "\r", "\r\n", "\xa0",
     "\u2028", "\x85", "\x0b", "\x0c", "\u3000", " " * 40, "\n" * 6]
)


@st.composite
def edge_documents(draw) -> Document:
    """A document of 1-3 pages of edge pieces, with headings at some line starts."""
    pages = [draw(st.lists(EDGES, max_size=250).map("".join)) for _ in range(draw(st.integers(1, 3)))]
    text = PAGE_SEPARATOR.join(pages)
    line_starts = [m.end() for m in re.finditer("\n", text) if m.end() < len(text)]
    chosen = draw(st.lists(st.sampled_from(line_starts), unique=True, max_size=5)) if line_starts else []
    headings = tuple(Heading(f"H{i}", draw(st.integers(1, 3)), start, "markdown")
                     for i, start in enumerate(sorted(chosen)))  # fmt: skip
    kind = draw(st.sampled_from(["text", "pdf"]))
    return Document("d", f"d.{'pdf' if kind == 'pdf' else 'txt'}", kind,
                    tuple(Page(i + 1, page) for i, page in enumerate(pages)), text, headings)  # fmt: skip


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edge_documents(), st.sampled_from([4, 5, 8, 12, 20, 50, 120]), st.data())
def test_chunks_of_documents_made_of_edges_are_todays(document, chunk_size, data):
    overlap = data.draw(st.integers(0, chunk_size - 1))
    for strategy in ("structure", "tokens"):
        assert_identical(document, chunk_size, overlap, strategy)
