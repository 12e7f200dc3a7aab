"""What the pages show of a chunk that continues a Markdown table (issue 39, item 6): the header rows it repeats, the
chunk that holds them, what the model reads, and the header each context block carries."""

from __future__ import annotations

from rag import reports
from rag.chunking import chunk_document
from rag.documents import load_document
from rag.retrieval.context import build_context
from rag.store import Hit

HEADER = "| Datentyp | Format | Beschreibung |\n|---|---|---|"
ROWS = "\n".join(f"| Feld{i} | `string` | Wert Nummer {i} beschreibt das Feld ausführlich genug. |" for i in range(40))
TEXT = f"# Datenformate\n\nDie Tabelle nennt jedes Feld.\n\n{HEADER}\n{ROWS}\n\nEnde.\n"


def _chunks():
    return chunk_document(load_document(TEXT.encode(), "formate.md"), 200, 20)


def test_a_continued_chunk_names_the_chunk_that_holds_its_header():
    chunks = _chunks()
    continued = [c for c in chunks if c.table_header]
    assert len(continued) >= 2 and HEADER in chunks[0].content
    for chunk in continued:
        assert reports.table_header(chunk) == HEADER
        assert reports.table_header_source(chunks, chunk.chunk_index) == 0
        assert reports.model_text(chunk) == f"{HEADER}\n{chunk.content}" == chunk.model_text
    assert reports.table_header_source(chunks, 0) is None and reports.model_text(chunks[0]) == chunks[0].content
    report = reports.chunk_reports(chunks)[continued[0].chunk_index]
    assert report.table_header == HEADER and reports.table_header_source(reports.chunk_reports(chunks),
                                                                        report.chunk_index) == 0


def test_a_stored_chunk_reads_its_header_from_the_payload():
    hit = Hit(None, "| Feld9 | x | y |", "d", "formate.md", "c", 3, (), None, None, 10, 27,
              payload={"table_header": HEADER})
    assert reports.table_header(hit) == HEADER
    assert reports.table_header(Hit(None, "x", "d", "t", "c", 0, (), None, None, 0, 1)) == ""


def test_each_context_block_says_which_table_header_it_repeats():
    chunks = _chunks()
    hits = [Hit(1.0 - i / 10, c.content, "d", "formate.md", f"c{i}", c.chunk_index, c.heading_path, None, None,
                c.start, c.end, payload={"table_header": c.table_header} if c.table_header else {})
            for i, c in enumerate(chunks[:3])]
    context = build_context(hits, max_tokens=5000)
    assert context.table_headers == ["" if not c.table_header else HEADER for c in chunks[:3]]
    for lead, piece in zip(context.table_headers, context.included, strict=True):
        if lead:
            assert f"{lead}\n{piece.content}" in context.text
