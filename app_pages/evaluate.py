"""Evaluate: which chunk_size, overlap, top_k and search mode retrieve best on these documents, on a query set."""

from __future__ import annotations

import streamlit as st

from rag.evaluation import SWEEP_PREFIX
from ui import errors, workspace
from ui.jobs.sweep import SweepJob
from ui.parts import apply, funnel, judge_eval, live_jobs, synthetic
from ui.parts import evaluate as parts
from ui.parts import evaluate_inputs as inputs
from ui.parts import evaluate_kept as kept
from ui.parts import rerank as rerank_part
from ui.render import COMPARED_MODES, md

ws = workspace.current()
st.title("Evaluate")
st.caption("Which chunk_size, overlap, top_k and search mode retrieve best on your documents? Give a query set "
           "that says what each question should find, pick documents and a grid; every configuration is chunked, "
           "embedded, indexed and searched in each mode, and scored with hit@k, recall@k, precision@k, MRR and "
           "nDCG.")

inputs.restore()  # after a reload: the grid and the choices from the URL
with errors.reported(stop=True):
    source = parts.read_query_source()
    documents = parts.read_documents(ws, source[1] if source else None)

with st.form("evaluate_grid", border=False, enter_to_submit=False):  # Enter in a field must not start a sweep
    cols = st.columns([1.2, 1.2, 1, 1])
    sizes = cols[0].text_input("chunk_size values", key="evaluate_sizes", persist_state="session")
    overlaps = cols[1].text_input("overlap values", key="evaluate_overlaps", persist_state="session")
    ks = cols[2].text_input("k values", key="evaluate_ks", persist_state="session")
    strategy = cols[3].selectbox("Strategy", ["structure", "tokens"], key="evaluate_strategy", persist_state="session")
    modes = st.multiselect("Search modes", list(COMPARED_MODES), key="evaluate_modes", help=parts.MODE_HELP,
                           persist_state="session")
    rerank = rerank_part.control(ws=ws)
    st.caption(f"Embedder: {md(ws.spec)} (from the sidebar). Each configuration gets its own collection "
               f"(`{SWEEP_PREFIX}…`), searched in every chosen mode and reused on the next run; embeddings are "
               "cached. A configuration at a chosen collection's own settings searches that collection as stored. "
               "With a reranker, every mode runs without and with it, and a paired test says whether it helps.")
    submitted = st.form_submit_button("Run the sweep", type="primary", icon=":material/play_arrow:")

if submitted:
    if source is None or documents is None:
        st.info("Choose a query set and documents first.")
    else:
        parts.run(ws, documents, source[0], sizes, overlaps, ks, strategy, modes, rerank, source[2])

inputs.remember()  # the grid as last submitted, and the choices: a reload finds them in the URL

# the sweep that runs (a job: it goes on after a click or a reload), and one that ended since
finished = live_jobs.show(ws.location, SweepJob, parts.SWEEP_SEEN, parts.CANCEL_HELP)
if finished is not None:
    parts.take_result(finished.result, finished.inputs)
    st.session_state[apply.RUN] = (finished.run_id, finished.run_warning)
if parts.RESULT in st.session_state:
    parts.earlier_inputs(source, documents)
    apply.kept(st.session_state.get(apply.RUN))
    parts.results(ws, st.session_state[parts.RESULT])
    apply.section(ws, st.session_state[parts.RESULT], st.session_state.get(apply.RUN), parts.result_query_set())
    st.subheader("Why was it missed?")
    funnel.evaluate_section(ws, st.session_state[parts.RESULT])
    judge_eval.section(st.session_state[parts.RESULT], source[2] if source else "sweep")
elif not any(job.active for job in live_jobs.queue().jobs(ws.location, SweepJob)):  # not under a running sweep
    chosen = parts.ran_on(source[0], source[2], documents)[0] if source and documents else None
    if not kept.show(ws, chosen):  # after a restart: the kept run of these inputs, or the last one offered
        st.caption("Choose a query set, documents and a grid, then run the sweep.")
st.divider()
parts.tuning(ws, source[0] if source else None, documents.collection if documents else None)
st.divider()
synthetic.section(ws, documents)
