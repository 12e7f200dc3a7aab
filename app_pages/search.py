"""Search: a query against the collection, top_k, threshold and document filter; hits and scores per source."""

from __future__ import annotations

import streamlit as st

from rag import pipeline
from rag import reports as hit_report
from rag.retrieval import RERANK_DEPTH, SearchRequest
from rag.store import FUSIONS, MODES, Fusion, parse_fusion
from ui import errors, state, workspace
from ui.parts import rerank as rerank_part
from ui.parts import search as parts
from ui.parts import search_inputs
from ui.render import MODE_LABELS, md

MODE_HELP = ("Dense: embedding similarity (cosine). Keyword: BM25 on the words, good for names, numbers and "
             "§ references. Hybrid: both lists fused.")

FUSION_HELP = ("How hybrid search merges the two lists: convex adds both normalised scores (the dense share is the "
               "weight), rrf by rank, dbsf by scores normalised by their spread.")

ws = workspace.current()
st.title("Search")
search_inputs.restore()  # a new session (a reload, a link): the inputs and the query from the URL


def _switch_collection() -> None:
    state.put(state.PENDING_COLLECTION, st.session_state["search_collection"])


searchable = workspace.collections_or_stop(ws, "There is nothing to search yet.")
options = list(dict.fromkeys([ws.collection, *searchable]))
st.session_state["search_collection"] = ws.collection
with errors.reported(stop=True):
    documents = ws.documents()
titles = {d.document_id: d.title for d in documents}

keyword_search = bool(ws.info and ws.info.sparse)
collection_column, mode_column, fusion_column = st.columns([1.4, 1.6, 1])
collection_column.selectbox("Collection", options, key="search_collection", on_change=_switch_collection,
                            format_func=lambda n: n if n in searchable else f"{n} (empty)")
if not ws.points:  # a collection to come, or one emptied: nothing to search, whatever its vectors
    st.info(f"The collection '{md(ws.collection)}' holds no chunks: pick another one above, or upload documents.")
    st.stop()
modes = list(MODES) if keyword_search else ["dense"]
defaults = pipeline.search_defaults(ws.store, ws.collection, SearchRequest())
default_mode, default_fusion = defaults.mode, parse_fusion(defaults.fusion)
state.default(state.SEARCH_MODE, default_mode)
if state.get(state.SEARCH_MODE) not in modes:
    state.put(state.SEARCH_MODE, modes[-1])
mode = mode_column.segmented_control("Search mode", modes, format_func=MODE_LABELS.get, key=state.SEARCH_MODE,
                                     persist_state="session", help=MODE_HELP) or default_mode
state.default(state.FUSION, default_fusion.method)
state.default(state.FUSION_WEIGHT, default_fusion.weight)
method = fusion_column.selectbox("Fusion", FUSIONS, key=state.FUSION, persist_state="session",
                                 disabled=mode != "hybrid", help=FUSION_HELP)
weight = fusion_column.slider("dense weight", 0.0, 1.0, key=state.FUSION_WEIGHT, step=0.05, persist_state="session",
                              disabled=mode != "hybrid" or method == "dbsf",
                              help="The dense list's share of the fused score (convex) or rank weight (rrf).")
fusion = Fusion(method, round(weight, 2), default_fusion.k).spec
if not keyword_search:
    st.caption("This collection has no keyword (BM25) vectors, so only dense search works; ingest the documents "
               "again into a new collection for keyword and hybrid search.")
with st.form("search_form", border=False):  # the query is searched on Enter or Search; the controls act at once
    query_column, button_column = st.columns([6, 1], vertical_alignment="bottom")
    query = query_column.text_input("Query", key=state.QUERY, persist_state="session",
                                    placeholder="e.g. Welche Schriftgröße verwendet die Klasse?")
    submitted = button_column.form_submit_button("Search", type="primary", icon=":material/search:", width="stretch")
rerank = rerank_part.control(ws=ws)
if submitted:  # searched by the results below in this run; a later run of theirs alone cuts what it found
    state.put(state.SUBMITTED_QUERY, query)


@st.fragment
def controls_and_results(ws: workspace.Workspace, titles: dict[str, str], mode: str, method: str, fusion: str,
                         rerank: tuple[str, int]) -> None:
    """Draw the controls that cut the ranking (top_k, threshold, documents) and everything they change.

    A fragment: a change of these controls reruns only this part, not the sidebar and the controls above it (their
    values come in as arguments, as of the page's last run), so a top_k step redraws the hits and nothing else.
    """
    left, middle, right = st.columns([1.2, 1, 1.6])
    state.default(state.TOP_K, 5)  # a value or a session-state entry (from the URL), never both
    top_k = left.slider("top_k", 1, 50, key=state.TOP_K, persist_state="session")
    scale = hit_report.threshold_scale(mode, method)
    use_threshold = middle.checkbox(f"Score threshold ({scale.name})", key=state.USE_THRESHOLD,
                                    persist_state="session", disabled=bool(rerank[0]),
                                    help="Off while reranking: the reranker's scale is its own."
                                    if rerank[0] else None) and not rerank[0]
    threshold_key = f"{state.THRESHOLD}-{scale.name}"  # a field per scale: each keeps its own minimum
    state.default(threshold_key, scale.default)
    threshold = middle.number_input("minimum score", 0.0, scale.maximum, step=scale.step,
                                    format=scale.format, key=threshold_key,
                                    persist_state="session", label_visibility="collapsed", help=scale.help)
    chosen = state.get(state.DOCUMENT_FILTER) or []
    if any(d not in titles for d in chosen):  # kept for the session: a document deleted since drops out
        state.put(state.DOCUMENT_FILTER, [d for d in chosen if d in titles])
    document_ids = right.multiselect("Only these documents", list(titles), format_func=titles.get,
                                     key=state.DOCUMENT_FILTER, persist_state="session", placeholder="all documents")
    include_toc = right.checkbox("Include tables of contents", key=state.INCLUDE_TOC, persist_state="session",
                                 help="Chunks that list headings with page numbers match every question and answer "
                                      "none; they are left out unless this is on.")
    request = SearchRequest(mode=mode, fusion=fusion, top_k=top_k, score_threshold=threshold if use_threshold else None,
                            document_ids=document_ids, include_toc=include_toc,
                            rerank_depth=rerank[1] if rerank[0] else RERANK_DEPTH)
    submitted_query = state.pop(state.SUBMITTED_QUERY)
    last = workspace.last_search(ws)
    if submitted_query is None and last is None:  # another collection chosen: its query is searched there
        submitted_query = parts.query_elsewhere(ws)
    if submitted_query is not None or (last is not None and last.settings() != (request, rerank)):  # act at once
        found = parts.run_search(ws, last.query if submitted_query is None else submitted_query, request, rerank,
                                 last=None if submitted_query is not None else last)
        if found is not None:
            state.put(state.SEARCH, found)
    run = workspace.last_search(ws)
    search_inputs.remember(run.query if run else None, threshold_key)
    if run is None:
        st.caption("Type a query and press Enter or Search; then top_k, the mode and the filters act at once.")
        return
    parts.results(ws, run)


controls_and_results(ws, titles, mode, method, fusion, rerank)
