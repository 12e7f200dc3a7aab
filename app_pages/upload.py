"""Upload: drop files, choose chunk settings and the target collection, watch each file go through."""

from __future__ import annotations

import streamlit as st

from rag.chunking import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_OVERLAP,
    MIN_CHUNK_SIZE,
    STRATEGIES,
    ChunkSettings,
    validate_settings,
)
from ui import errors, settings, state, workspace
from ui.parts import upload as parts
from ui.render import counted, md
from ui.sidebar import NEW

STRATEGY_HELP = ("structure: split at headings, then paragraphs and sentences, within chunk_size. "
                 "tokens: fixed windows of chunk_size tokens, overlap tokens apart (the usual baseline).")

ws = workspace.current()
st.title("Upload")
st.caption("PDF, Markdown and text files. Each file is read, chunked, embedded and stored; "
           "one bad file never stops the others.")

start_here = st.container(border=True) if ws.store_empty else None  # filled below, with the settings below it

left, middle, right, target_column = st.columns([1, 1, 1.2, 1.6])
chunk_size = left.number_input("chunk_size (tokens)", MIN_CHUNK_SIZE, 8192, DEFAULT_CHUNK_SIZE, step=50,
                               key="upload_chunk_size",
                               help="Largest chunk in cl100k tokens.")
overlap = middle.number_input("overlap (tokens)", 0, 4096, DEFAULT_OVERLAP, step=10, key="upload_overlap",
                              help="Tokens a chunk shares with the one before.")
strategy = right.segmented_control("strategy", STRATEGIES, default="structure", key="upload_strategy",
                                   help=STRATEGY_HELP) or "structure"
names = [c.name for c in workspace.pickable(ws)]
options = list(dict.fromkeys([*names, ws.collection])) + [NEW]
if state.get(state.UPLOAD_TARGET_OF) != ws.collection:  # another collection in the sidebar: the target follows
    state.put(state.UPLOAD_TARGET_OF, ws.collection)
    state.put(state.UPLOAD_TARGET, ws.collection)
state.keep(state.UPLOAD_TARGET, options, ws.collection)
target = target_column.selectbox("Target collection", options, key=state.UPLOAD_TARGET,
                                 format_func=lambda n: "+ New collection…" if n == NEW else n)
if target == NEW:
    target = target_column.text_input("New collection name", key=state.UPLOAD_NEW_TARGET).strip()

chunk_settings = errors.attempt(validate_settings, ChunkSettings(int(chunk_size), int(overlap), strategy))
if chunk_settings is not None and target:
    parts.upload_settings.chunking_note(ws, target, chunk_settings)  # the collection's documents chunked otherwise

round_ = state.get(state.UPLOADER_ROUND, 0)
uploads = st.file_uploader("Documents", type=["pdf", "txt", "md", "markdown"], accept_multiple_files=True,
                           key=f"uploader-{round_}")
keep_versions = parts.replacement_notice(ws, target, [u.name for u in uploads or []])
options = parts.new_collection_options(ws, target) if target else (None, None, None, None)
language, prompts, chunk_headers, child_size = options
ready = bool(uploads) and chunk_settings is not None and bool(target)
label = f"Ingest {counted(len(uploads), 'file')} into '{md(target)}'" if uploads and target else "Ingest"
if st.button(label, type="primary", disabled=not ready, icon=":material/play_arrow:", key="ingest"):
    files = [parts.source_file(u) for u in uploads]
    if parts.run(files, ws, target, chunk_settings, keep_versions, language, prompts, chunk_headers, child_size):
        state.bump(state.UPLOADER_ROUND)
        st.rerun()
if not target:
    st.caption("Name the new collection to ingest.")

parts.show_jobs(ws)

if start_here is not None:
    with start_here:
        st.subheader("Start here")
        st.markdown("The store is empty. **Drop files below**, or load the sample documents in one click.")
        parts.sample_section(ws, settings.sample_dir(), chunk_settings, target, options)
else:
    with st.expander("Sample documents"):
        parts.sample_section(ws, settings.sample_dir(), chunk_settings, target, options)
