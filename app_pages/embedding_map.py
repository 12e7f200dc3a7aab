"""Embedding map: a collection's chunks in 2-D (PCA, or t-SNE / UMAP when installed), a query and its hits marked."""

from __future__ import annotations

import streamlit as st

from rag import pipeline
from rag.evaluation import SearchMode, parse_mode
from rag.reports import DEFAULT_SAMPLE, available_methods
from rag.retrieval import SearchRequest
from rag.store import parse_fusion
from ui import errors, resources, state, workspace
from ui.parts import embedding_map as parts
from ui.parts.embedding_map import COLOUR_FIELDS, METHOD_LABELS
from ui.render import COMPARED_MODES, MODE_LABELS, md

ws = workspace.current()
st.title("Embedding map")
st.caption("Each dot is a chunk placed by its embedding: chunks about the same thing sit together, and a query "
           "lands near the chunks most like it.")


def _switch_collection() -> None:
    state.put(state.PENDING_COLLECTION, st.session_state["map_collection"])


mappable = workspace.collections_or_stop(ws, "There is nothing to map yet.")
st.session_state["map_collection"] = ws.collection
last = workspace.last_search(ws)
state.default(state.MAP_QUERY, last.query if last else "")
keyword = bool(ws.info and ws.info.sparse)
modes = list(COMPARED_MODES) if keyword else ["dense"]
searched = last.request if last else pipeline.search_defaults(ws.store, ws.collection, SearchRequest())
last_mode = SearchMode(searched.searched_mode, parse_fusion(searched.searched_fusion).method).label  # as Search did
state.default(state.MAP_MODE, last_mode if last_mode in modes else "dense")
if state.get(state.MAP_MODE) not in modes:
    state.put(state.MAP_MODE, "dense")
methods = available_methods()
if state.get(state.MAP_METHOD) not in methods:
    state.put(state.MAP_METHOD, "pca")

top = st.columns([1.1, 1.25, 1.15, 1.3])
top[0].selectbox("Collection", list(dict.fromkeys([ws.collection, *mappable])), key="map_collection",
                 on_change=_switch_collection,
                 format_func=lambda n: n if n in mappable else f"{n} (empty)")
method = top[1].segmented_control("Projection", methods, format_func=METHOD_LABELS.get, key=state.MAP_METHOD,
                                  help="PCA: fast, and distances along the axes mean something. t-SNE / UMAP "
                                       "keep neighbours together but distort the distances between groups."
                                  ) or "pca"
colour_by = top[2].segmented_control("Colour by", list(COLOUR_FIELDS), key=state.MAP_COLOUR, default="document",
                                     format_func=str.capitalize, help=parts.COLOUR_HELP) or "document"
sample = top[3].slider("Sample size", 100, 5000, DEFAULT_SAMPLE, step=100, key=state.MAP_SAMPLE,
                       help="Larger collections are drawn as a random sample of this many chunks (always with "
                            "the query's hits).")
query_column, k_column, mode_column = st.columns([2.5, 1, 1.3])
query = query_column.text_input("Mark a query (optional)", key=state.MAP_QUERY,
                                placeholder="e.g. Welche Schriftgröße verwendet die Klasse?").strip()
top_k = k_column.slider("top_k", 1, 20, 5, key=state.MAP_TOP_K, disabled=not query)
mode = mode_column.selectbox("Hits from", modes, format_func=MODE_LABELS.get, key=state.MAP_MODE,
                             disabled=not query, help="The search mode that finds the hits to mark.")

search = parse_mode(mode)
with errors.reported(stop=True):
    embedder = ws.embedder()
    count = min(ws.points, sample)
    with st.spinner(f"Projecting {count:,} embeddings with {METHOD_LABELS[method]}…" + (
            " (t-SNE and UMAP take seconds per thousand points; the first run also loads their package)"
            if method != "pca" else ""), show_time=True):
        emap = parts.compute(ws.store, embedder, (ws.location, resources.version(), embedder.model_id),
                                 ws.collection, ws.points, sample, method, query or None, top_k, search.mode,
                                 search.fusion)
if not emap.points:
    st.info(f"'{md(ws.collection)}' holds no chunks to map.")
    st.stop()
data = parts.frame(emap, colour_by)
event = st.altair_chart(parts.chart(emap, data, colour_by), width="stretch", on_select="rerun",
                        selection_mode="chunk", key="map_chart")
st.caption(parts.caption(emap, data, colour_by, MODE_LABELS[mode], top_k))
for note in emap.notes:
    st.caption(md(note))
parts.picked_chunk(ws, event)
