"""Long work of a page as jobs of the app's process (ui.jobs' queue: a sweep, a query-set comparison): queue one,
draw the ones that wait or run with a live progress bar, the time left and Cancel, and hand the page the job
that ended since, also to a session that did not start it (after a reload, in a new tab).

A job here has what ui.jobs.sweep.SweepJob has: id, location, status, active, cancel_requested, summary(),
fraction, text (the line under its bar) and result."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui import jobs, resources, state
from ui.render import md

CAPTION = "It runs in the app's process: leave the page, click around or reload, it goes on; its result shows here."


def queue() -> jobs.JobQueue:
    """Return the process's job queue, which drops cached listings after each job (a sweep writes collections)."""
    return jobs.jobs_queue(resources.change_hook())


def show(location: str, kind: type, seen: str, cancel_help: str) -> Any | None:
    """Draw the jobs of kind in this store that wait or run (live), and how the newest one ended when it did not
    finish; return the newest finished job with a result that this session has not taken yet (its id is kept
    under the session key seen), else None."""
    listed = queue().jobs(location, kind)
    running = any(job.active for job in listed)
    if running:
        _live(location, kind, cancel_help)
    finished = [job for job in listed if not job.active]
    # how the last one ended, until another one starts: an old "Cancelled" must not stay under a new job
    if finished and finished[0].status == "failed" and not running:
        st.error(md(finished[0].summary()), icon=":material/error:")
    elif finished and finished[0].status == "cancelled" and not running:
        st.info(md(finished[0].summary()), icon=":material/cancel:")
    done = next((job for job in finished if job.result is not None), None)
    if done is None or done.id <= state.get(seen, 0):
        return None
    state.put(seen, done.id)
    return done


@st.fragment(run_every=1.0)
def _live(location: str, kind: type, cancel_help: str) -> None:
    """Draw the progress of the jobs that wait or run, once a second; when none is left, redraw the whole page."""
    active = [job for job in queue().jobs(location, kind) if job.active]
    if not active:
        st.rerun()
    for job in reversed(active):
        head, stop = st.columns([4, 1], vertical_alignment="center")
        head.markdown(f"**{md(job.summary())}**")
        # on_click runs before this fragment draws, so the line says "Cancelling …" in the same run
        stop.button("Cancel", key=f"cancel-{kind.__name__.lower()}-{job.id}", icon=":material/cancel:",
                    disabled=job.cancel_requested, help=cancel_help, on_click=queue().cancel, args=(job.id,))
        st.progress(job.fraction, text=md(job.text))
    st.caption(CAPTION)
