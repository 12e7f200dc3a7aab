"""The sweeps of the Evaluate page as jobs of the app's process (ui.sweep_jobs): queue one, draw the ones that
wait or run with a live progress bar, the time left and Cancel, and hand the page the result of one that ended,
also to a session that did not start it (after a reload, in a new tab)."""

from __future__ import annotations

import streamlit as st

from rag.evaluation.results import SweepResult
from ui import jobs, resources, state
from ui.render import md
from ui.sweep_jobs import SweepJob, submit, sweeps
from ui.workspace import Workspace

SEEN = "evaluate_sweep_seen"  # id of the newest sweep job whose result this session took


def start(job: SweepJob) -> SweepJob:
    """Queue the sweep behind the jobs that write before it; it runs on after a click, a reload, a closed tab."""
    return submit(jobs.jobs_queue(resources.change_hook()), job)


def show(ws: Workspace) -> SweepResult | None:
    """Draw the sweeps of this store that wait or run (live), and how the newest one ended when it did not finish;
    return the result of a sweep that ended since this session last took one (else None)."""
    listed = sweeps(jobs.jobs_queue(resources.change_hook()), ws.location)
    if any(job.active for job in listed):
        _live(ws.location)
    finished = [job for job in listed if not job.active]
    if finished and finished[0].status == "failed":
        st.error(md(finished[0].summary()), icon=":material/error:")
    elif finished and finished[0].status == "cancelled":
        st.info(md(finished[0].summary()), icon=":material/cancel:")
    done = next((job for job in finished if job.result is not None), None)
    if done is None or done.id <= state.get(SEEN, 0):
        return None
    state.put(SEEN, done.id)
    return done.result


@st.fragment(run_every=1.0)
def _live(location: str) -> None:
    """Draw the progress of the sweeps that wait or run, once a second; when none is left, redraw the whole page."""
    queue = jobs.jobs_queue()
    active = [job for job in sweeps(queue, location) if job.active]
    if not active:
        st.rerun()
    for job in reversed(active):
        head, stop = st.columns([4, 1], vertical_alignment="center")
        head.markdown(f"**{md(job.summary())}**")
        if stop.button("Cancel", key=f"cancel-sweep-{job.id}", icon=":material/cancel:",
                       disabled=job.cancel_requested, help="Stops at the next embedding slice or configuration; the "
                       "collections of the configurations it finished stay and are reused by the next run."):
            queue.cancel(job.id)
        st.progress(job.fraction, text=md(job.text))
    st.caption("The sweep runs in the app's process: leave the page, click around or reload, it goes on; its "
               "result shows here when it ends.")
