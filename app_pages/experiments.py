"""Experiments: every kept evaluation and sweep, filtered; one run's rows, report and delete; two runs compared."""

from __future__ import annotations

import streamlit as st

from rag.runs import RunLog, runs_path_of
from ui import errors, workspace
from ui.parts import experiments as parts

ws = workspace.current()
st.title("Experiments")
st.caption("Every evaluation and sweep is kept with its settings, metrics with their intervals and each question's "
           "outcome, so runs can be compared later, also across days and after the defaults changed.")

log = RunLog(runs_path_of(ws.store))
with errors.reported(stop=True):
    runs = log.runs()
if not runs:
    st.info("No runs are kept yet. Run a sweep on the Evaluate page, or `rag eval` / `rag sweep`.")
    st.stop()

shown = parts.filtered(runs)
parts.table(shown)
if not shown:
    st.caption("No run matches the filter.")
    st.stop()

st.subheader("One run")
by_id = {run["id"]: run for run in shown}
chosen = st.selectbox("Run", list(by_id), format_func=lambda i: f"run {i} · {by_id[i]['kind']} · "
                      f"{by_id[i]['created_at']}", key="experiments_run")
parts.details(log, by_id[chosen])

st.subheader("Compare two runs")
st.caption("B minus A on the questions both ran: a paired test per metric (sign-flip permutation over the same "
           "questions), as `rag runs compare A B` reports it.")
parts.compare(log, shown)
