"""Markdown chunks without markup, cut between table rows, and a table's header before a chunk that continues it
(issue 34, item 7): an OpenAPI-shaped document, the real ASVS tables, the OpenAPI spec when it is in
tests/data/markdown, generated tables (Hypothesis), and what the embedder and the LLM context receive."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag import pipeline
from rag.chunking import tokens
from rag.chunking.chunker import ChunkSettings, chunk_document
from rag.chunking.tables import find_tables
from rag.documents.loader import SourceFile, load_document
from rag.documents.model import Document
from rag.embeddings.fake import FakeEmbedder
from rag.ingested import IngestOptions
from rag.retrieval.context import build_context
from rag.retrieval.records import Hit
from rag.store.open import open_store
from rag.store.rebuild import document_from_chunks
from tests.chunking.test_chunking import check_invariants

WORDS = "the API MUST SHOULD value object field server path operation request response schema string".split()


def openapi_like(objects: int = 30, rows: int = 12, seed: int = 1) -> str:
    """Return Markdown written like the OpenAPI spec: anchors in headings and before table rows, link targets
    into the document, a TOC between HTML comments, and tables of fixed fields longer than a chunk."""
    rnd = random.Random(seed)
    lines = ["# OpenAPI Specification", "", "## Table of Contents", "<!-- TOC depthFrom:1 depthTo:3 -->", ""]
    lines += [f"- [Object {i}](#object{i})" for i in range(objects)] + ["", "<!-- /TOC -->", ""]
    for i in range(objects):
        lines += [f'#### <a name="object{i}"></a>Object {i}', "",
                  f"The [Object {i}](#object{i}) follows [RFC3986](https://tools.ietf.org/html/rfc3986#section-4.2).",
                  "", "##### Fixed Fields", "", "Field Name | Type | Description", "---|:---:|---"]
        for r in range(rows):
            words = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(5, 60)))
            lines.append(f'<a name="o{i}f{r}"></a>field{r} | [Ref](#object{r}) | {words}. See [Other](#o{r}). '
                         + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 30))))
        lines += ["", "This object MAY be extended with [Specification Extensions](#specificationExtensions).", ""]
    return "\n".join(lines) + "\n"


def row_fits(text: str, pos: int, chunk_size: int) -> bool:
    """Return whether the line holding text[pos] fits a chunk (a longer row must be cut somewhere)."""
    line = text[text.rfind("\n", 0, pos) + 1 : (text.find("\n", pos) + 1 or len(text) + 1) - 1]
    return tokens.count(line) <= chunk_size


def table_faults(document: Document, chunks: list, chunk_size: int) -> list[str]:
    """Return what is wrong with the chunks around the document's tables (nothing: [])."""
    text, tables, faults = document.text, find_tables(document.text), []
    for chunk in chunks:
        end_table = next((t for t in tables if t.start < chunk.end < t.end), None)
        if end_table is not None and text[chunk.end] != "\n" and row_fits(text, chunk.end, chunk_size):
            faults.append(f"chunk {chunk.chunk_index} ends inside a row: {chunk.content[-40:]!r}")
        table = next((t for t in tables if t.start < chunk.start < t.end), None)
        if table is None:
            if chunk.table_header:
                faults.append(f"chunk {chunk.chunk_index} has a table header outside a table")
        elif chunk.start < table.body:  # between the header and the delimiter: only if the two do not fit a chunk
            if tokens.count(table.header) <= chunk_size:
                faults.append(f"chunk {chunk.chunk_index} starts inside the header rows: {chunk.content[:40]!r}")
        elif text[text.rfind("\n", 0, chunk.start) + 1 : chunk.start].strip() and row_fits(text, chunk.start,
                                                                                            chunk_size):
            faults.append(f"chunk {chunk.chunk_index} starts inside a row: {chunk.content[:40]!r}")
        elif chunk.table_header != table.header or not chunk.model_text.startswith(table.header + "\n"):
            faults.append(f"chunk {chunk.chunk_index} continues a table without its header")
    return faults


def assert_clean(document: Document, chunk_size: int = 350, overlap: int = 50) -> list:
    chunks = check_invariants(document, chunk_size, overlap)  # offsets, budget, coverage, overlap, headings
    assert [c.chunk_index for c in chunks if "<a name" in c.model_text] == []
    assert [c.chunk_index for c in chunks if "](#" in c.model_text] == []
    assert [c.chunk_index for c in chunks if "<!--" in c.model_text] == []
    assert table_faults(document, chunks, chunk_size) == []
    return chunks


def test_openapi_shaped_markdown_is_chunked_without_markup_and_between_rows():
    document = load_document(openapi_like().encode(), "openapi.md")
    for chunk_size, overlap in ((350, 50), (200, 30), (512, 64), (120, 0)):
        chunks = assert_clean(document, chunk_size, overlap)
        assert sum(bool(c.table_header) for c in chunks) >= 10  # the tables really continue across chunks
    assert "[RFC3986](https://tools.ietf.org/html/rfc3986#section-4.2)" in document.text  # absolute links stay
    assert [h.title for h in document.headings][2:4] == ["Object 0", "Fixed Fields"]  # no anchor in the path


def test_real_asvs_tables_repeat_their_header(shared_data):
    path = shared_data / "markdown/asvs-de-V2-Authentication.md"
    document = load_document(path.read_bytes(), path.name)
    assert len(find_tables(document.text)) >= 10
    for chunk_size, overlap in ((350, 50), (200, 20), (100, 10)):
        chunks = assert_clean(document, chunk_size, overlap)
        assert any(c.table_header.startswith("| # | Beschreibung") for c in chunks)


@st.composite
def markdown_tables(draw) -> Document:
    """A Markdown document of prose paragraphs and pipe tables (cells of words, code, links, anchors)."""
    cell = st.lists(st.sampled_from(WORDS + ["`x`", "[L](#l)", '<a name="a"></a>', "1.", "z.B.", "|x"]),
                    min_size=1, max_size=25).map(" ".join)
    blocks = []
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            blocks.append(" ".join(draw(st.lists(st.sampled_from(WORDS + ["."]), min_size=1, max_size=80))))
        else:
            columns = draw(st.integers(1, 4))
            pipes = draw(st.booleans())
            row = (lambda cells: f"| {' | '.join(cells)} |") if pipes else " | ".join
            rows = [row([f"H{c}" for c in range(columns)]), row(["---"] * columns)]
            rows += [row(draw(st.lists(cell, min_size=columns, max_size=columns)))
                     for _ in range(draw(st.integers(0, 12)))]
            blocks.append("\n".join(rows))
    return load_document("\n\n".join(blocks).encode(), "t.md")


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdown_tables(), st.sampled_from([20, 40, 80, 150, 350]), st.data())
def test_generated_tables_are_cut_between_rows(document, chunk_size, data):
    overlap = data.draw(st.integers(0, chunk_size // 2))
    chunks = check_invariants(document, chunk_size, overlap)
    assert table_faults(document, chunks, chunk_size) == []


def test_the_llm_context_and_the_embedder_read_the_header(tmp_path):
    document = load_document(openapi_like(objects=3, rows=30).encode(), "openapi.md")
    chunk = next(c for c in chunk_document(document, 200, 20) if c.table_header)
    assert chunk.model_text == f"Field Name | Type | Description\n---|:---:|---\n{chunk.content}"
    hit = Hit(score=0.9, content=chunk.content, document_id=document.id, document_title=document.title,
              chunk_id="c", chunk_index=chunk.chunk_index, heading_path=chunk.heading_path, page_start=None,
              page_end=None, start=chunk.start, end=chunk.end, payload={"table_header": chunk.table_header})
    context = build_context([hit], max_tokens=3000)
    assert context.text.split("\n", 1)[1] == chunk.model_text  # under the [Quelle 1: ...] line


class RecordingEmbedder(FakeEmbedder):
    """The fake embedder, keeping every text it was asked to embed."""

    def __init__(self):
        super().__init__(16)
        self.texts: list[str] = []

    def embed_documents(self, texts):
        self.texts.extend(texts)
        return super().embed_documents(texts)


def test_a_stored_markdown_table_reaches_the_embedder_the_context_and_a_rechunk_with_its_header():
    """Real store (Qdrant Edge in memory): the embedder reads the header, the payload keeps it, the context
    shows it, and the document rebuilt from its chunks (live tuning, sweeps on a collection) is Markdown again."""
    store, embedder = open_store(":memory:"), RecordingEmbedder()
    data = openapi_like(objects=3, rows=30).encode()
    # the chunks alone reach the embedder (children: tests/store/test_children.py)
    pipeline.ingest([SourceFile("openapi.md", data)], "c", ChunkSettings(200, 20), embedder, store=store,
                    options=IngestOptions(child_size=0))
    original = chunk_document(load_document(data, "openapi.md"), 200, 20)
    continued = [c for c in original if c.table_header]
    assert continued and sorted(embedder.texts) == sorted(c.model_text for c in original)  # batched by length
    hits = store.document_chunks("c", original[0].document_id)
    assert [h.payload.get("table_header", "") for h in hits] == [c.table_header for c in original]
    context = build_context([h for h in hits if h.chunk_index == continued[0].chunk_index], max_tokens=3000)
    assert context.text.split("\n", 1)[1] == continued[0].model_text
    rebuilt = document_from_chunks(original[0].document_id, "openapi.md", hits)
    assert rebuilt.kind == "markdown"
    assert [(c.start, c.end, c.table_header) for c in chunk_document(rebuilt, 300, 30)] == [
        (c.start, c.end, c.table_header) for c in chunk_document(load_document(data, "openapi.md"), 300, 30)]
    store.close()
