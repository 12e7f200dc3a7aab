"""The Evaluate page's "Use this configuration": a sweep row (the best, or one chosen) re-chunked into a collection
as a job (ui.jobs.apply), its mode and fusion saved as the collection's defaults with the run that chose them."""

from __future__ import annotations

import re

import streamlit as st

from rag.evaluation import SweepResult, is_sweep_collection
from rag.runs import sweep_row
from ui import errors, nav, resources, state
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


def section(ws: Workspace, result: SweepResult, run: tuple[int | None, str | None] | None,
            query_set: str = "") -> None:
    """Draw the choice of a row and a collection, queue the job, and show how it ended.

    The target starts at the collection the sweep measured (else a new one named after query_set): writing into
    any other existing collection re-chunks documents into it and changes its default search, so that takes a
    confirmation naming it and its documents. Every choice here is keyed by the result (ui.state.result_key).
    """
    st.subheader("Use this configuration")
    rows = {r.label: r for r in result.results}
    best = result.best()
    left, right = st.columns([2, 1])
    label = left.selectbox("Row", list(rows), index=list(rows).index(best.label) if best else 0,
                           key=state.result_key("apply_row", result),
                           help="The best row by the sweep's metric is chosen first; any row can be used.")
    collection = right.text_input("Into collection", default_target(ws, result, query_set),
                                  key=state.result_key("apply_collection", result),
                                  help="The collection the sweep measured, or a new one when it measured uploaded "
                                  "documents; another collection needs a confirmation.").strip()
    row = rows[label]
    st.caption(f"Re-chunks the sweep's {counted(len(result.documents), 'document')} with chunk_size "
               f"{row.config.chunk_size}, "
               f"overlap {row.config.overlap} into the collection (a job), then saves {md(row.mode.label)} search as "
               "its default, recorded with the run that chose it. Its other documents stay as they are.")
    confirmed = confirm(ws, result, collection, row) if collection else False
    if st.button("Use this configuration", icon=":material/done_all:", key="apply_configuration",
                 disabled=not confirmed):
        queue_job(ws, result, row, collection, run[0] if run else None)
    finished = live_jobs.show(ws.location, ApplyJob, SEEN, CANCEL_HELP)
    if finished is not None and finished.status == "done":
        resources.store_changed()
        st.success(md(finished.summary()), icon=":material/done_all:")


def default_target(ws: Workspace, result: SweepResult, query_set: str) -> str:
    """Return the collection "Use this configuration" writes to unless the user says otherwise: the one the sweep
    measured, else a new collection named after the query set (never the sidebar's: it may hold other documents)."""
    if result.collection and not is_sweep_collection(result.collection):
        return result.collection
    taken = {c.name for c in ws.collections}
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", query_set.rsplit(".", 1)[0]).strip("_-") or "evaluated"
    stem = stem if not is_sweep_collection(stem) else f"evaluated-{stem}"
    return next(name for n in range(1, len(taken) + 2) if (name := stem if n == 1 else f"{stem}-{n}") not in taken)


def confirm(ws: Workspace, result: SweepResult, collection: str, row) -> bool:
    """Say what writing into collection does; return True when it may: the collection the sweep measured, a new
    one, or another one the user confirmed by name (a checkbox naming it and its documents)."""
    info = next((c for c in ws.collections if c.name == collection), None)
    if is_sweep_collection(collection):
        st.error(f"'{md(collection)}' is one of the sweeps' own collections; give another name.")
        return False
    if collection == result.collection:
        st.caption(f"'{md(collection)}' is the collection the sweep measured.")
        return True
    if info is None:
        st.caption(f"'{md(collection)}' is a new collection.")
        return True
    held = resources.documents(ws.store, ws.location, collection, resources.version())
    key = state.table_key("apply_confirm", (state.result_key("", result), collection))  # a name, a confirmation
    return st.checkbox(f"Yes, write the sweep's {counted(len(result.documents), 'document')} into '{md(collection)}' "
                       f"(which holds {counted(len(held), 'document')} and is not the collection the sweep measured) "
                       f"and make {md(row.mode.label)} search its default", key=key)


def queue_job(ws: Workspace, result: SweepResult, row, collection: str, run_id: int | None) -> None:
    """Check the target and queue the job; one line says why not when the collection cannot take the row."""
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
