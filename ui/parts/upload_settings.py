"""The Upload page's word on settings before an ingest: what an existing collection keeps (drawn disabled), when
its documents are chunked otherwise than the page's fields, and the settings the sample documents are loaded with."""

from __future__ import annotations

import streamlit as st

from rag.chunking import ChunkSettings
from rag.errors import RagError
from rag.store import CollectionInfo
from ui import errors, resources
from ui.render import md
from ui.workspace import Workspace


def kept_options(workspace: Workspace, info: CollectionInfo, labels: dict[str, str]) -> None:
    """Draw the settings an existing collection keeps (its keyword language, chunk headers, child size, prompts) as
    disabled fields holding its values: documents added to it follow them."""
    if info.foreign:
        return
    language = errors.attempt(workspace.store.collection_meta, info.name) or {}
    language = str(language.get("language") or "none")
    shown = "detected per document" if language == "auto" else labels.get(language, language)
    words = (f"keyword language {shown}, chunk headers "
             f"{'on' if info.chunk_headers else 'off'}, child size {info.child_size or '0 (off)'}")
    with st.expander(f"'{md(info.name)}' keeps its own: {words}", icon=":material/lock:"):
        st.caption(f"'{md(info.name)}' was made with these settings and the documents added to it follow them, so "
                   "all its chunks are indexed alike. To use others, choose '+ New collection…' as the target.")
        left, middle, right = st.columns(3)
        left.selectbox("Keyword language", [language], format_func=lambda v: labels.get(v, v), disabled=True)
        middle.toggle("Chunk headers", info.chunk_headers, disabled=True)
        right.number_input("Child size (tokens, 0 = off)", value=info.child_size, disabled=True)
        query, document = info.prompts
        st.caption(md(f"Prompts: query {query!r}, document {document!r}."))


def chunking_note(workspace: Workspace, collection: str, settings: ChunkSettings) -> None:
    """Say when collection holds documents chunked otherwise than settings, the page's: the new files follow the
    page, so the collection will mix settings (its documents keep theirs until re-chunked)."""
    if collection not in {c.name for c in workspace.collections}:
        return
    try:
        documents = resources.documents(workspace.store, workspace.location, collection, resources.version())
    except RagError:
        return
    stored = {(d.chunk_size, d.overlap, d.strategy) for d in documents if d.complete and d.chunk_size}
    shown = (settings.chunk_size, settings.overlap, settings.strategy)
    if not stored or shown in stored:
        return
    kept = " and ".join(f"{size} / {overlap} / {strategy}" for size, overlap, strategy in sorted(stored))
    st.info(f"'{md(collection)}' holds documents chunked {kept} (chunk_size / overlap / strategy); these files will "
            f"be chunked {shown[0]} / {shown[1]} / {shown[2]} as set here, so the collection will mix settings. To "
            f"keep one, set {kept.split(' and ')[0]} here; to change the whole collection, re-chunk it on the Chunks "
            "page (Live tuning, every document) or choose a new collection.", icon=":material/tune:")


def settings_words(workspace: Workspace, collection: str, settings: ChunkSettings, options: tuple) -> str:
    """Return the settings an ingest into collection uses, in words: the page's chunk settings, and a new collection's
    child size and chunk headers (an existing collection keeps its own)."""
    words = f"chunk_size {settings.chunk_size}, overlap {settings.overlap}, {settings.strategy}"
    if any(c.name == collection for c in workspace.collections):
        return words + f"; '{md(collection)}' keeps its own keyword language, chunk headers and child size"
    _, _, chunk_headers, child_size = options
    return ", ".join([words, f"child size {child_size}" if child_size else "no children",
                      "chunk headers" if chunk_headers else "no chunk headers"])
