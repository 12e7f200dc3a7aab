"""The Evaluate page's "Use this configuration": a sweep row (the best, or one chosen) re-chunked into a collection
as a job (ui.jobs.apply), its mode and fusion saved as the collection's defaults with the run that chose them."""

from __future__ import annotations

import streamlit as st

from rag.evaluation import SweepResult, is_sweep_collection
from rag.runs import sweep_row
from ui import errors, nav, resources
from ui.jobs.apply import ApplyJob
from ui.parts import live_jobs
from ui.render import counted, md
from ui.workspace import Workspace

RUN = "evaluate_run"  # (run id, warning) of the sweep in RESULT
SEEN = "evaluate_apply_seen"  # id of the newest apply job whose result this session took
CANCEL_HELP = "Stops between documents; what is written stays, and the collection's defaults are not changed."


def kept(run: tuple[int | None, str | None] | None) -> None:
    """Say under which run the sweep was kept (on the Experiments page), or the warning why it was not."""
    run_id, warning = run or (None, None)
    if warning:
        st.warning(md(warning), icon=":material/warning:")
    elif run_id is not None:
        st.caption(f"Kept as run {run_id}: list and compare it on the Experiments page.")
        st.page_link(nav.EXPERIMENTS.path, label="Open Experiments", icon=nav.EXPERIMENTS.icon)


def section(ws: Workspace, result: SweepResult, run: tuple[int | None, str | None] | None) -> None:
    """Draw the choice of a row and a collection, queue the job, and show how it ended."""
    st.subheader("Use this configuration")
    rows = {r.label: r for r in result.results}
    best = result.best()
    left, right = st.columns([2, 1])
    label = left.selectbox("Row", list(rows), index=list(rows).index(best.label) if best else 0, key="apply_row",
                           help="The best row by the sweep's metric is chosen first; any row can be used.")
    default = "" if is_sweep_collection(ws.collection) else ws.collection
    collection = right.text_input("Into collection", default, key="apply_collection").strip()
    row = rows[label]
    st.caption(f"Re-chunks the sweep's {counted(len(result.documents), 'document')} with chunk_size "
               f"{row.config.chunk_size}, "
               f"overlap {row.config.overlap} into the collection (a job), then saves {md(row.mode.label)} search as "
               "its default, recorded with the run that chose it. Its other documents stay as they are.")
    if st.button("Use this configuration", icon=":material/done_all:", key="apply_configuration",
                 disabled=not collection):
        queue_job(ws, result, row, collection, run[0] if run else None)
    finished = live_jobs.show(ws.location, ApplyJob, SEEN, CANCEL_HELP)
    if finished is not None and finished.status == "done":
        resources.store_changed()
        st.success(md(finished.summary()), icon=":material/done_all:")


def queue_job(ws: Workspace, result: SweepResult, row, collection: str, run_id: int | None) -> None:
    """Check the target and queue the job; one line says why not when the collection cannot take the row."""
    if is_sweep_collection(collection):
        st.error(f"'{md(collection)}' is one of the sweeps' own collections; give another name.")
        return
    embedder = errors.attempt(ws.embedder_for, collection)
    if embedder is None:
        return
    if embedder.model_id != result.embedder:
        st.error(f"The sweep embedded with {md(result.embedder)}, but '{md(collection)}' takes "
                 f"{md(embedder.model_id)}. Choose another collection name, or that embedder in the sidebar.")
        return
    with errors.reported() as report:
        ws.store.check_writable(collection, embedder, chunk_headers=row.config.chunk_headers,
                                child_size=row.config.child_size)
    if report.failed:
        return
    live_jobs.queue().add(ApplyJob(sweep_row(row, result), collection, embedder, ws.store, ws.location,
                                   resources.archive(ws.store), run_id))
