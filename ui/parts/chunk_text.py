"""A chunk's text as the pages show it: first the header rows of the Markdown table it continues, marked as repeated
(the model, the keyword index and the LLM read them before the chunk's text: rag.chunking.tables), then the text.
Both as plain text, never Markdown or HTML."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from rag import reports as chunk_report
from rag.chunking import Chunk
from rag.errors import RagError
from rag.reports import ChunkReport
from rag.store import Hit
from ui.workspace import Workspace

ChunkText = Hit | Chunk | ChunkReport


def repeated_header(chunk: ChunkText, chunks: Sequence[ChunkText] = (), plain: bool = False) -> None:
    """Draw the table header rows chunk repeats, under a caption that says so and where they come from (the chunk of
    chunks, its document's, that holds them, when known); nothing when it repeats none."""
    header = chunk_report.table_header(chunk)
    if not header:
        return
    source = chunk_report.table_header_source(chunks, chunk.chunk_index) if chunk.chunk_index is not None else None
    where = f"chunk #{source}" if source is not None else "the start of the table, in an earlier chunk"
    st.caption(f"Table header repeated from {where}: the model, the keyword index and the LLM read it before this "
               "chunk's text.")
    if plain:
        st.text(header)
    else:
        st.code(header, language=None, wrap_lines=True)


def show(chunk: ChunkText, chunks: Sequence[ChunkText] = (), plain: bool = False, height: int | None = None) -> None:
    """Draw a chunk's text (st.code, or st.text when plain) after the table header rows it repeats; chunks: the
    document's chunks, to name the one that holds the header."""
    repeated_header(chunk, chunks, plain)
    if plain:
        st.text(chunk.content)
    else:
        st.code(chunk.content, language=None, wrap_lines=True, **({"height": height} if height else {}))


def document_chunks(workspace: Workspace | None, chunk: ChunkText) -> list[Hit]:
    """Return the chunks of chunk's document when chunk repeats a table header (to name the chunk that holds it), else
    none: the store is read only for such chunks."""
    if workspace is None or not chunk_report.table_header(chunk) or not isinstance(chunk, Hit):
        return []
    try:
        return workspace.document_chunks(chunk.document_id)
    except RagError:
        return []
