"""Chunks: how one document was cut: table, histogram, flags, the text with boundaries, live tuning, headings."""

from __future__ import annotations

import streamlit as st

from rag import reports as chunk_report
from ui import errors, resources, state, workspace
from ui.parts import chunks as parts
from ui.render import counted, md

ws = workspace.current()
st.title("Chunks")

documents = workspace.documents_or_stop(ws, f"The collection '{md(ws.collection)}' holds no documents yet.")
by_id = {d.document_id: d for d in documents}
state.keep(state.CHUNKS_DOCUMENT, list(by_id), documents[0].document_id)  # a label with a chunk count is no id
document_id = st.selectbox("Document", list(by_id), key=state.CHUNKS_DOCUMENT, persist_state="session",
                           format_func=lambda i: f"{by_id[i].title} · {counted(by_id[i].chunks, 'chunk')}")
info = by_id[document_id]
settings_text = (f"chunk_size {info.chunk_size}, overlap {info.overlap}, {info.strategy}"
                 if info.chunk_size else "chunk settings unknown")
pages = counted(info.pages, "page") if info.pages else "? pages"
st.caption(f"Stored with {settings_text} · {pages} · embedder {md(info.embedder or ws.spec)}")

with errors.reported(stop=True):
    chunks = ws.document_chunks(document_id)
    embedder = ws.embedder()
    with st.spinner(f"Counting tokens with {md(embedder.model_id)}'s tokenizer (the model loads once)…"):
        model_counts = resources.model_token_counts(embedder, embedder.model_id,
                                                  tuple(chunk_report.model_text(c) for c in chunks))
    limit = embedder.max_input_tokens

reports = chunk_report.chunk_reports(chunks, model_counts, limit, info.chunk_size, chunk_report.overflow_flag(embedder))
summary = chunk_report.flag_summary(reports, limit)
stats = chunk_report.chunk_stats([r.tokens for r in reports], info.chunk_size)
columns = st.columns(6)
columns[0].metric("chunks", stats.count)
cl100k = "cl100k tokens, the unit of chunk_size (the table's \"tokens\" column and the histogram)"
columns[1].metric("mean (cl100k)", f"{stats.mean:.0f}", help=f"mean {cl100k}")
columns[2].metric("max (cl100k)", stats.largest, help=f"most {cl100k}")
columns[3].metric(chunk_report.overflow_flag(embedder), summary.over_limit,
                  help=f"longer than {embedder.model_id}'s input limit ({limit:,} of its own tokens: the table's "
                  "\"model tok.\" column), tables of contents too")
columns[4].metric("tiny", summary.tiny, help=f"under {chunk_report.tiny_limit(info.chunk_size)} cl100k tokens")
columns[5].metric("no heading", summary.no_heading)
parts.flags_banner(summary, embedder, info.chunk_size)

key = (ws.location, ws.collection, document_id, resources.version())
table_tab, text_tab, tuning_tab, tree_tab = st.tabs(["Chunk table", "Document", "Live tuning", "Heading tree"])
with table_tab:
    parts.chunk_table(reports, info.chunk_size, embedder.model_id, ws.store, chunks)
with text_tab:
    document = resources.stored_document(chunks, key, document_id, info.title, "text")
    parts.document_view(document, chunks, embedder)
    st.caption("Rebuilt from the stored chunks: whitespace between chunks is shown as line breaks.")
with tuning_tab:
    parts.tuning_view(ws, document, info, reports, embedder, key)
with tree_tab:
    parts.tree_view(chunks, reports)
