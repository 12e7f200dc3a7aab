"""Compare: one query or a query set against two sides (collection + search mode): shared and unique hits, rank
shifts, metric deltas."""

from __future__ import annotations

import streamlit as st

from rag.evaluation import Side, is_sweep_collection, load_query_set, parse_ks, parse_mode, squad_queries
from rag.store import DEFAULT_FUSION
from ui import errors, nav, state, workspace
from ui.jobs.compare import CompareJob
from ui.parts import compare as parts
from ui.parts import live_jobs
from ui.parts.compare import CompareRun, side_label
from ui.render import COMPARED_MODES, MODE_LABELS, counted, md

ws = workspace.current()
st.title("Compare")
st.caption("One query or a query set on two sides: two collections (chunkings, embedders) or two search modes. "
           "Which chunks both find, which only one finds, how ranks move.")

with_sweeps = st.toggle("Include sweep collections", key="compare_sweeps", persist_state="session",
                        help="The collections the Evaluate page made, one per chunking: compare two of them.")
infos = {c.name: c for c in workspace.pickable(ws, sweeps=with_sweeps) if c.points}
if not infos:
    st.info("There is nothing to compare yet.")
    st.page_link(nav.UPLOAD.path, label="Upload documents", icon=":material/upload_file:")
    st.stop()
names = sorted(infos, key=lambda n: (n != ws.collection, is_sweep_collection(n), n))


def side_picker(letter: str, column, collection: str, mode: str) -> Side:
    """Draw one side's collection and mode; a collection without keyword vectors offers dense only."""
    key = letter.lower()
    state.default(f"compare_{key}_collection", collection)
    state.keep(f"compare_{key}_collection", names, collection)  # a name, not the label of a deleted one
    with column.container(border=True):
        left, right = st.columns([1.3, 1])
        chosen = left.selectbox(f"{letter} · collection", names, key=f"compare_{key}_collection",
                                persist_state="session",
                                format_func=lambda n: f"{n} · {counted(infos[n].points, 'chunk')}")
        keyword = infos[chosen].sparse
        modes = list(COMPARED_MODES) if keyword else ["dense"]
        state.default(f"compare_{key}_mode", mode)
        state.keep(f"compare_{key}_mode", modes, "dense")
        picked = right.selectbox(f"{letter} · search mode", modes, format_func=MODE_LABELS.get,
                                 key=f"compare_{key}_mode", persist_state="session")
        if not keyword:
            st.caption("No keyword (BM25) vectors (made before keyword search existed, or not by RAG Lab): "
                       "re-ingest its documents into a new collection for keyword and hybrid search.")
    return Side(chosen, parse_mode(picked))


first = names[0]
second = next((n for n in names if n != first and not is_sweep_collection(n)), first)
default_b = (first, f"hybrid-{DEFAULT_FUSION}") if infos[first].sparse else (second, "dense")
left, right = st.columns(2)
sides = side_picker("A", left, first, "dense"), side_picker("B", right, *default_b)
if sides[0] == sides[1]:
    st.warning("A and B are the same collection and mode: pick another collection or mode for one of them.")
parts.documents_warning(ws, sides)

how, what, cut, go = st.columns([1.5, 2.6, 1.1, 1.0], vertical_alignment="bottom")
source = how.segmented_control("Compare on", ["query", "query set"], key="compare_source", default="query",
                               persist_state="session",
                               format_func={"query": "One query", "query set": "Query set"}.get) or "query"
if source == "query":
    state.default(state.COMPARE_QUERY, state.get(state.QUERY) or "")
    query = what.text_input("Query", key=state.COMPARE_QUERY, persist_state="session",
                            placeholder="e.g. Welche Schriftgröße verwendet die Klasse?")
    top_k = cut.slider("top_k per side", 1, 50, 10, key="compare_top_k", persist_state="session")
else:
    file = what.file_uploader("Query set (.jsonl, .csv) or SQuAD-style .json", type=["jsonl", "csv", "json"],
                              key="compare_query_file",
                              help='One query per line with the document it should find, e.g. {"query": "...", '
                                   '"document": "report.pdf", "answer": "..."}; or a SQuAD/XQuAD file whose '
                                   "articles the collections hold (as `rag import-squad` writes them).")
    ks = cut.text_input("k values", "1,3,5,10", key="compare_ks", persist_state="session")

if go.button("Compare", type="primary", icon=":material/compare_arrows:", key="compare_button",
             disabled=sides[0] == sides[1], width="stretch"):
    with errors.reported():
        if source == "query":
            with st.spinner("Searching both sides…"):
                state.put(state.COMPARE, parts.run_query(ws, sides, query, top_k))
        elif file is None:
            st.info("Upload a query set first.")
        else:
            cuts = parse_ks(ks)
            read = squad_queries if file.name.lower().endswith(".json") else load_query_set
            queries = read(file.getvalue(), file.name)
            parts.start_query_set(ws, sides, queries, file.name, cuts)  # a job: a click or a reload never stops it
compared = live_jobs.show(ws.location, CompareJob, parts.COMPARE_SEEN, parts.CANCEL_HELP)
if compared is not None:
    state.put(state.COMPARE, parts.query_set_run(compared))

run: CompareRun | None = state.get(state.COMPARE)
if run is None or any(s.collection not in infos for s in run.sides):
    st.caption("Pick A and B, type a query (or upload a query set) and press Compare.")
    st.stop()
what = f"“{md(run.query)}”, top {run.top_k} each" if run.hits else f"{md(run.query_set)}, k = " + \
    ", ".join(map(str, run.evaluations.ks))
labels = [md(side_label(side)) for side in run.sides]
st.caption(f"Result for {what} · A = {labels[0]} · B = {labels[1]} · {run.seconds:.2f} s")
if run.hits is not None:
    parts.show_hits(ws, run)
else:
    parts.show_evaluations(run)
