"""Chunking invariants over generated and real text: offsets, budget, words, overlap, coverage, headings."""

from __future__ import annotations

import dataclasses
import pickle
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.chunking import tokens
from rag.chunking.chunker import Chunk, chunk_document
from rag.documents.loader import load_document
from rag.documents.model import PAGE_SEPARATOR, Document, Heading, Page

WORDS = st.sampled_from(
    "der die das Auftragsklärung Straße Grüße über Kündigung Vertrag Ärger Öl Übung ß 2024 3,5 "
    "https://example.org/a/very/long/path?x=1 Donaudampfschifffahrtsgesellschaftskapitän z.B. "
    "Abs. 1. Januar <|endoftext|> 😀 naïve café e-mail (Klammer) „Zitat“ - – ; : ! ? .".split()
)
SEPARATORS = st.sampled_from([" ", " ", " ", " ", ". ", "\n", "\n\n", "  ", "\t", ".\n\n", "! "])


@st.composite
def texts(draw) -> str:
    parts = draw(st.lists(st.tuples(WORDS, SEPARATORS), min_size=0, max_size=300))
    return "".join(word + sep for word, sep in parts)


@st.composite
def documents(draw) -> Document:
    """A document of 1-3 pages with headings at line starts."""
    pages = draw(st.lists(texts(), min_size=1, max_size=3))
    pages = [p.strip() for p in pages]
    text = PAGE_SEPARATOR.join(pages)
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
    line_starts = [s for s in line_starts if s < len(text) and not text[s].isspace()]
    chosen = draw(st.lists(st.sampled_from(line_starts), unique=True, max_size=6)) if line_starts else []
    headings = tuple(
        Heading(title=f"H{i}", level=draw(st.integers(1, 3)), start=s, source="markdown")
        for i, s in enumerate(sorted(chosen))
    )
    return Document(
        id="doc", title="t.txt", kind="text",
        pages=tuple(Page(i + 1, p) for i, p in enumerate(pages)), text=text, headings=headings,
    )


def check_invariants(document: Document, chunk_size: int, overlap: int, strategy: str = "structure") -> list:
    text = document.text
    chunks = chunk_document(document, chunk_size=chunk_size, overlap=overlap, strategy=strategy)
    covered = bytearray(len(text))
    for i, chunk in enumerate(chunks):
        assert chunk.chunk_index == i
        assert text[chunk.start : chunk.end] == chunk.content
        assert chunk.content and not chunk.content[0].isspace() and not chunk.content[-1].isspace()
        assert chunk.token_count == tokens.count(chunk.content) <= chunk_size
        paged = document.kind == "pdf" or len(document.pages) > 1  # one-page text and Markdown: no page numbers
        assert chunk.page_start == (document.page_at(chunk.start) if paged else None)
        assert chunk.page_end == (document.page_at(chunk.end - 1) if paged else None)
        covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
    uncovered = [c for c, hit in zip(text, covered, strict=True) if not hit and not c.isspace()]
    assert not uncovered, f"non-whitespace text outside every chunk: {''.join(uncovered)[:80]!r}"
    if strategy == "structure":
        check_structure(document, chunks, chunk_size, overlap)
    return chunks


def word_at(text: str, pos: int) -> str:
    """Return the whitespace-delimited word that contains text[pos]."""
    start = pos
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    end = pos
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end]


def section_starts(document: Document) -> list[int]:
    """Return the headings that begin a section: not one right after a heading with no text of its own."""
    text = document.text
    heads = sorted({h.start for h in document.headings})
    cuts = sorted({0, *heads, len(text)})
    sections = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if text[a:b].strip()]
    alone = [a in heads and "\n" not in text[a:b].strip() for a, b in sections]
    found = [a for i, (a, _) in enumerate(sections) if a in heads and not (i and alone[i - 1])]
    if sections and alone[-1] and len(sections) > 1 and not alone[-2] and found and found[-1] == sections[-1][0]:
        found.pop()  # a heading at the very end joins the section before
    return found


def check_structure(document: Document, chunks: list, chunk_size: int, overlap: int) -> None:
    text = document.text
    heading_starts = section_starts(document)
    for chunk in chunks:
        # never inside a word, unless that one word is longer than chunk_size tokens
        if chunk.start > 0 and not text[chunk.start - 1].isspace():
            assert tokens.count(word_at(text, chunk.start)) > chunk_size
        if chunk.end < len(text) and not text[chunk.end].isspace():
            assert tokens.count(word_at(text, chunk.end - 1)) > chunk_size
        # a chunk never spans two sections
        assert not [s for s in heading_starts if chunk.start < s < chunk.end]
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert nxt.start > prev.start and nxt.end > prev.end
        same_section = not [s for s in heading_starts if prev.start < s <= nxt.start]
        if nxt.start < prev.end:
            assert same_section
            assert overlap > 0, "overlap 0 must share no text"
            assert tokens.count(text[nxt.start : prev.end]) <= overlap


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.integers(4, 300), st.data())
def test_structure_invariants_on_generated_text(document, chunk_size, data):
    overlap = data.draw(st.integers(0, chunk_size - 1))
    check_invariants(document, chunk_size, overlap)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.integers(4, 300), st.data())
def test_token_window_invariants_on_generated_text(document, chunk_size, data):
    overlap = data.draw(st.integers(0, chunk_size - 1))
    check_invariants(document, chunk_size, overlap, strategy="tokens")


@settings(max_examples=60, deadline=None)
@given(documents(), st.data())
def test_heading_path_is_the_stack_of_headings_above(document, data):
    chunks = chunk_document(document, chunk_size=data.draw(st.integers(8, 200)), overlap=0)
    for chunk in chunks:
        anchor = opening_heading(document, chunk)
        above = [h for h in document.headings if h.start <= anchor]
        stack: list[Heading] = []
        for heading in above:
            while stack and stack[-1].level >= heading.level:
                stack.pop()
            stack.append(heading)
        assert chunk.heading_path == tuple(h.title for h in stack)


def opening_heading(document: Document, chunk) -> int:
    """Return where a chunk's path is read: the last of the heading lines it opens with (else its start)."""
    starts = {h.start for h in document.headings}
    if chunk.start not in starts:
        return chunk.start
    anchor, offset = chunk.start, chunk.start
    for line in document.text[chunk.start : chunk.end].split("\n")[:-1]:
        offset += len(line) + 1
        if offset in starts:
            anchor = offset
        elif document.text[offset : offset + 1] != "\n":
            break
    return anchor


def make_document(text: str, headings: tuple[Heading, ...] = ()) -> Document:
    return Document(id="d", title="d.txt", kind="text", pages=(Page(1, text),), text=text, headings=headings)


GERMAN = (
    "Die Auftragsklärung ist der erste Schritt. Sie legt fest, was zu tun ist und bis wann. "
    "Ohne sie entstehen Missverständnisse, die später teuer werden. "
) * 12


def test_overlap_is_as_close_to_the_setting_as_words_allow():
    document = make_document(GERMAN)
    chunks = check_invariants(document, chunk_size=120, overlap=30)
    assert len(chunks) > 3
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        shared = tokens.count(GERMAN[nxt.start : prev.end])
        assert 20 <= shared <= 30  # one more word back would exceed 30
        one_more_word = GERMAN.rfind(" ", 0, nxt.start - 1) + 1
        assert tokens.count(GERMAN[one_more_word : prev.end]) > 30


def test_prefers_paragraph_then_sentence_boundaries():
    paragraph = "Erster Satz hier. Zweiter Satz folgt dort. " * 5
    text = (paragraph.strip() + "\n\n") * 6
    chunks = check_invariants(make_document(text.strip()), chunk_size=200, overlap=0)
    assert len(chunks) > 1
    assert all(c.content.endswith(".") for c in chunks), [c.content[-20:] for c in chunks]
    assert all(text[c.end : c.end + 2] == "\n\n" or c.end >= len(text.strip()) for c in chunks)


def test_sentence_boundary_skips_abbreviations_and_dates():
    text = ("Gemäß Abs. 2 gilt z.B. am 1. Januar die Regel. " + "Noch ein ganz normaler Satz. " * 3) * 20
    chunks = check_invariants(make_document(text.strip()), chunk_size=60, overlap=0)
    assert len(chunks) > 1
    for chunk in chunks[:-1]:
        assert not re.search(r"(Abs\.|z\.B\.|1\.)$", chunk.content), chunk.content[-30:]
        assert chunk.content.endswith(".")


def test_word_longer_than_chunk_size_is_cut_between_tokens():
    word = "Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichen" * 4
    chunks = check_invariants(make_document(f"Vorher {word} nachher"), chunk_size=8, overlap=2)
    inside = [c for c in chunks if c.content in word]
    assert len(inside) >= tokens.count(word) // 8
    assert chunks[0].content == "Vorher" and chunks[-1].content.endswith("nachher")


def test_special_token_text_is_ordinary_text():
    document = make_document("Ein Satz mit <|endoftext|> mitten im Text. " * 30)
    chunks = check_invariants(document, chunk_size=50, overlap=10)
    assert any("<|endoftext|>" in c.content for c in chunks)


def test_headings_start_new_chunks():
    text = "# Kapitel 1\n\nText eins.\n\n## Auftragsklärung\n\nText zwei.\n\n# Kapitel 2\n\nText drei."
    headings = tuple(
        Heading(title, level, text.index(marker), "markdown")
        for title, level, marker in [("Kapitel 1", 1, "# Kapitel 1"), ("Auftragsklärung", 2, "## Auft"),
                                     ("Kapitel 2", 1, "# Kapitel 2")]
    )
    chunks = check_invariants(make_document(text, headings), chunk_size=600, overlap=80)
    assert [c.heading_path for c in chunks] == [("Kapitel 1",), ("Kapitel 1", "Auftragsklärung"), ("Kapitel 2",)]
    assert chunks[1].content == "## Auftragsklärung\n\nText zwei."


def test_chunks_are_what_chunk_init_builds():
    """chunk_document builds its Chunks without Chunk.__init__ (for speed): each equals the one __init__ builds."""
    document = Document("d", "d.pdf", "pdf", (Page(1, GERMAN), Page(2, GERMAN)), GERMAN + PAGE_SEPARATOR + GERMAN,
                        (Heading("Kapitel", 1, 0, "outline"),))  # fmt: skip
    chunks = chunk_document(document, chunk_size=60, overlap=10)
    assert len(chunks) > 5 and chunks[-1].page_end == 2
    for chunk in chunks:
        assert list(vars(chunk)) == [field.name for field in dataclasses.fields(Chunk)]  # every field, no other
        built = Chunk(**vars(chunk))
        assert chunk == built and hash(chunk) == hash(built) and repr(chunk) == repr(built)
        assert pickle.loads(pickle.dumps(chunk)) == built
        with pytest.raises(dataclasses.FrozenInstanceError):
            chunk.content = "x"


def test_empty_and_whitespace_documents_have_no_chunks():
    assert chunk_document(make_document("   \n\n  ")) == []


@pytest.mark.parametrize(
    ("chunk_size", "overlap", "strategy"), [(3, 0, "structure"), (100, 100, "structure"), (100, -1, "tokens"),
                                            (100, 10, "sentences")]
)
def test_bad_settings_say_what_is_allowed(chunk_size, overlap, strategy):
    with pytest.raises(ValueError, match="chunk_size|overlap|strategy"):
        chunk_document(make_document("Text"), chunk_size=chunk_size, overlap=overlap, strategy=strategy)


def test_pages_of_chunks_span_page_breaks():
    pages = ("Seite eins. " * 40).strip(), ("Seite zwei. " * 40).strip()
    text = PAGE_SEPARATOR.join(pages)
    document = Document("d", "d.pdf", "pdf", (Page(1, pages[0]), Page(2, pages[1])), text)
    chunks = check_invariants(document, chunk_size=300, overlap=0)
    assert chunks[0].page_start == 1 and chunks[-1].page_end == 2
    assert any(c.page_start == 1 and c.page_end == 2 for c in chunks)


# Real documents from tests/data


@pytest.mark.parametrize("chunk_size,overlap", [(600, 80), (200, 50), (50, 0)])
@pytest.mark.parametrize(
    "relative", ["pdfs/hausarbeit-jura.pdf", "pdfs/pdflatex-outline.pdf", "markdown/asvs-de-V2-Authentication.md",
                 "markdown/asvs-de-Using-ASVS.md", "pdfs/Seige_of_Vicksburg_Sample_OCR.pdf", "pdfs/multipage.pdf"]
)
def test_invariants_on_real_documents(shared_data, relative, chunk_size, overlap):
    path = shared_data / relative
    document = load_document(path.read_bytes(), path.name)
    for strategy in ("structure", "tokens"):
        chunks = check_invariants(document, chunk_size, overlap, strategy)
        assert chunks


def test_real_pdf_heading_paths_and_pages(shared_data):
    path = shared_data / "pdfs/hausarbeit-jura.pdf"
    document = load_document(path.read_bytes(), path.name)
    chunks = chunk_document(document, chunk_size=600, overlap=80)
    by_heading = {h.start: h for h in document.headings}
    assert document.headings, "hausarbeit-jura.pdf has an outline"
    assert any(c.start in by_heading for c in chunks)
    for chunk in chunks:
        if chunk.start in by_heading:
            heading = by_heading[opening_heading(document, chunk)]  # the last heading the chunk opens with
            assert chunk.heading_path[-1] == heading.title
            assert chunk.page_start == document.page_at(heading.start)
    assert sum(1 for c in chunks if c.heading_path) >= len(chunks) - 1
    assert max(c.page_end for c in chunks) == len(document.pages)


def test_real_markdown_heading_paths(shared_data):
    path = shared_data / "markdown/asvs-de-V2-Authentication.md"
    document = load_document(path.read_bytes(), path.name)
    chunks = chunk_document(document, chunk_size=400, overlap=50)
    depths = {len(c.heading_path) for c in chunks}
    assert {2, 3} <= depths  # "# V2 Authentifizierung" has no text of its own: it opens the chunk of "## Ziel"
    assert chunks[0].heading_path == ("V2 Authentifizierung", "Ziel")
    assert any(c.content.startswith("#") for c in chunks)
    for chunk in chunks:
        heading_lines = [line for line in chunk.content.split("\n") if line.startswith("#")]
        if chunk.content.startswith("#"):  # the path ends in the last heading the chunk opens with
            opening = [line for line in chunk.content.split("\n\n") if line.startswith("#")]
            assert opening and heading_lines
            assert any(line.lstrip("#").strip().startswith(chunk.heading_path[-1][:20]) for line in opening)
