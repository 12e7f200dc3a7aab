"""The Evaluate page's fusion tuning: fit hybrid search's dense weight on a query set, then save it."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from rag.errors import RagError
from rag.evaluation.fusion_tuning import tune_fusion
from rag.evaluation.queries import Query
from ui import resources
from ui.render import md
from ui.workspace import Workspace

TUNING = "evaluate_tuning"  # (collection, FusionTuning) of the last run in this session


def show(ws: Workspace, queries: list[Query] | None) -> None:
    """Draw "tune the fusion on this collection": run it, chart the weights, save the best one."""
    st.subheader("Tune hybrid search's fusion")
    if ws.info is None or not ws.info.sparse:
        st.caption(f"'{md(ws.collection)}' has no keyword vectors, so it has no hybrid search to tune.")
        return
    st.caption(f"Fits the dense weight of the convex fusion on the query set above, on '{md(ws.collection)}' as it "
               "is stored, 5-fold cross-validated; each question's two candidate lists are fetched once.")
    if queries is None:
        st.caption("Choose a query set first.")
        return
    if st.button(f"Tune on '{md(ws.collection)}'", icon=":material/tune:", key="tune_fusion"):
        try:
            with st.spinner("Searching every question once, then fusing with each weight…"):
                tuning = tune_fusion(queries, ws.collection, ws.embedder(), store=ws.store)
        except RagError as error:
            st.error(md(str(error)))
            return
        st.session_state[TUNING] = (ws.collection, tuning)
    saved = st.session_state.get(TUNING)
    if not saved or saved[0] != ws.collection:
        return
    tuning = saved[1]
    frame = pd.DataFrame({"dense weight": list(tuning.by_weight), tuning.metric: list(tuning.by_weight.values())})
    chart = alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("dense weight:Q", scale=alt.Scale(domain=[0, 1]), title="dense weight (0 = keywords only)"),
        y=alt.Y(f"{tuning.metric}:Q", scale=alt.Scale(zero=False)), tooltip=list(frame))
    st.altair_chart(chart.properties(height=220), width="stretch")
    st.write(f"Best on all {tuning.queries} questions: **{tuning.best.spec}** ({tuning.metric} "
             f"{tuning.by_weight[tuning.best.weight]:.3f}). Chosen fold by fold and scored on the held-out fold, "
             f"the weight earns {tuning.metric} {tuning.cv_metric:.3f}: that is what to expect on new questions.")
    if st.button(f"Save {tuning.best.spec} as the fusion of '{md(ws.collection)}'", key="save_fusion",
                 icon=":material/save:"):
        try:
            ws.store.save_collection_setting(ws.collection, "fusion", tuning.best.spec)
        except RagError as error:
            st.error(md(str(error)))
            return
        resources.store_changed()
        st.toast(f"Searches of {md(ws.collection)} now fuse with {tuning.best.spec}.")
