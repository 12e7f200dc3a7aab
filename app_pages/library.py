"""Library: the documents of the collection with their chunk settings; delete a document or a collection."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rag.store import delete_collection, delete_document
from ui import errors, nav, resources, state, workspace
from ui.parts import library as parts
from ui.render import counted, md, plural

ws = workspace.current()
st.title("Library")
parts.sweeps(ws)

documents = workspace.documents_or_stop(
    ws, f"The collection '{md(ws.collection)}' is empty: nothing was ingested into it yet.")

st.caption(f"Collection '{md(ws.collection)}': {counted(len(documents), 'document')}, {counted(ws.points, 'chunk')}, "
           f"embedder {md(ws.spec)}.")
parts.defaults(ws)
index = parts.index(ws)
incomplete = [d for d in documents if not d.complete]
if incomplete:
    were = plural(len(incomplete), "was", "were")
    st.warning(f"{counted(len(incomplete), 'document')} {were} not stored completely (an ingest was interrupted, "
               "or is still running elsewhere): searches do not see those chunks. Select one to delete what was left "
               "or to ingest it again.", icon=":material/report:")
frame = pd.DataFrame([
    {"document": d.title, "complete": "yes" if d.complete else "NO", "chunks": d.chunks, "pages": d.pages,
     "chunk_size": d.chunk_size, "overlap": d.overlap, "strategy": d.strategy, "embedder": d.embedder,
     "ingested": d.ingested_at, "id": d.document_id[:12]}
    for d in documents
])
selection = st.dataframe(frame, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                         key=state.table_key("library_table", [ws.location, ws.collection,
                                                               *(d.document_id for d in documents)]),
                         column_config={"chunks": st.column_config.NumberColumn(width="small"),
                                        "pages": st.column_config.NumberColumn(width="small"),
                                        "ingested": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})
rows = selection.selection.rows if selection else []
# a row number from the previous run: the listing may have changed since (a delete, another process)
chosen = documents[rows[0]] if rows and rows[0] < len(documents) else None
if chosen is None:
    st.caption("Select a row to open or delete that document.")
elif not chosen.complete:
    parts.repair(ws, chosen)
else:
    open_column, delete_column = st.columns([1, 1])
    if open_column.button(f"Show the chunks of {md(chosen.title)}", icon=":material/view_agenda:", key="open_doc"):
        state.put(state.CHUNKS_DOCUMENT, chosen.document_id)
        st.switch_page(nav.CHUNKS.path)
    with delete_column.popover("Delete this document", icon=":material/delete:"):
        st.write(f"Delete {counted(chosen.chunks, 'chunk')} of '{md(chosen.title)}' from '{md(ws.collection)}'? "
                 "This cannot be undone.")
        # keyed by the document: a click confirms the document it was shown for, not whatever row 3 is now
        if st.button("Yes, delete the document", type="primary", key=f"confirm_delete_document_{chosen.document_id}"):
            with errors.reported() as report:
                deleted = delete_document(ws.store, resources.archive(ws.store), ws.collection, chosen.document_id)
            if not report.failed:
                resources.store_changed()
                state.announce(f"Deleted {counted(deleted, 'chunk')} of {md(chosen.title)}.")
                st.rerun()

st.divider()
st.subheader("Collections")
st.dataframe(pd.DataFrame([
    {"collection": c.name, "chunks": c.points, "embedder": c.embedder or "(not made by RAG Lab)",
     "dimension": c.dimension, "search": parts.search_kind(ws, c.name, index if c.name == ws.collection else None)}
    for c in ws.collections
]), hide_index=True, width="stretch")
# keyed by the collection: after a delete the next one's popover starts closed, its name field empty
with st.popover(f"Delete the collection '{md(ws.collection)}'", icon=":material/delete_forever:",
                key=f"delete_collection-{ws.collection}"):
    st.write(f"This deletes '{md(ws.collection)}' with {counted(ws.points, 'chunk')}. Type its name to confirm.")
    typed = st.text_input("Collection name", key=f"confirm_collection_name-{ws.collection}")
    if st.button("Delete the collection", type="primary", disabled=typed.strip() != ws.collection,
                 key="confirm_delete_collection"):
        with errors.reported() as report:
            delete_collection(ws.store, resources.archive(ws.store), ws.collection)
        if not report.failed:
            resources.store_changed()
            st.session_state.pop(f"confirm_collection_name-{ws.collection}", None)
            state.announce(f"Deleted the collection '{md(ws.collection)}' ({counted(ws.points, 'chunk')}).")
            st.rerun()
