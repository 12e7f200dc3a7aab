"""The Library's repair of a document that an interrupted ingest left incomplete: delete the rest, or ingest again."""

from __future__ import annotations

import streamlit as st

from rag import pipeline
from rag.chunking.chunker import DEFAULT_CHUNK_SIZE, ChunkSettings
from rag.errors import RagError
from rag.store.records import DocumentInfo
from ui import errors, resources
from ui.render import md
from ui.workspace import Workspace


def repair(workspace: Workspace, document: DocumentInfo) -> None:
    """Explain what an unfinished write left of document and offer to delete it or to ingest it again."""
    kept = "its earlier complete version stays searchable" if document.interrupted else "no version is searchable"
    st.warning(f"'{md(document.title)}' was not stored completely: {kept}. Ingest it again to repair it (from the "
               "archive kept at ingest, no upload needed), or delete what the interrupted ingest left.")
    size, overlap, strategy = document.unfinished_settings or (document.chunk_size, document.overlap, document.strategy)
    settings = ChunkSettings(size or DEFAULT_CHUNK_SIZE, overlap or 0, strategy or "structure")
    st.caption(f"Ingesting again uses the settings of the interrupted ingest: chunk_size {settings.chunk_size}, "
               f"overlap {settings.overlap}, {settings.strategy}.")
    again, delete = st.columns(2)
    if again.button(f"Ingest '{md(document.title)}' again", icon=":material/restart_alt:", key="repair_reingest",
                    type="primary"):
        try:
            with st.spinner("Ingesting again…"):
                (result,) = pipeline.reingest([document.document_id], workspace.collection, settings,
                                              workspace.embedder(), store=workspace.store,
                                              archive=resources.archive(workspace.store))
        except RagError as error:
            errors.show(error)
            return
        finally:
            resources.store_changed()
        if result.ok:
            st.toast(f"Stored {result.chunks} chunks of {md(document.title)}.")
            st.rerun()
        st.error(md(result.error or "The ingest failed."))
    if delete.button("Delete what the interrupted ingest left", icon=":material/delete:", key="repair_delete"):
        try:
            removed = workspace.store.delete_document(workspace.collection, document.document_id,
                                                      only_interrupted=True)
        except RagError as error:
            errors.show(error)
            return
        resources.store_changed()
        st.toast(f"Deleted {removed} chunks left by the interrupted ingest of {md(document.title)}.")
        st.rerun()
