"""The Evaluate page after a restart: a session without a result of its own shows the last kept sweep (rag.runs) of
the inputs above, or offers the newest one with its inputs. A kept run holds each row's metrics, not every
question's hits, so the page shows its table and says so; the charts, failures and why-missed come with a new run
of the sweep (which reuses its collections)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rag.evaluation import METRICS
from rag.runs import last_sweep
from ui import errors
from ui.parts import evaluate_inputs as inputs
from ui.render import EMPTY_CELL, md
from ui.workspace import Workspace


def when(run: dict) -> str:
    """Return when a run was made, e.g. "2026-12-04 15:36 UTC" (kept in UTC)."""
    return run["created_at"][:16].replace("T", " ") + " UTC"


def show(ws: Workspace, key: tuple | None) -> bool:
    """Draw the last kept sweep of the inputs above (key: theirs, ui.parts.evaluate.ran_on; None when some are not
    chosen) and return True; else offer the newest kept sweep of the app, with its inputs, and return False."""
    run = errors.attempt(last_sweep, ws.store, key) if key is not None else None
    if run is not None:
        table(run)
        return True
    newest = errors.attempt(last_sweep, ws.store)
    inputs_of = newest["settings"]["inputs"] if newest is not None else {}
    if isinstance(inputs_of.get("params"), dict) and inputs_of["params"]:
        st.caption(md(f"The last sweep kept here ran on {inputs_of.get('words') or 'other inputs'} "
                      f"(run {newest['id']}, {when(newest)})."))
        st.button("Show it with its inputs", icon=":material/history:", key="evaluate_kept_show",
                  on_click=inputs.use, args=(inputs_of["params"],),
                  help="Fills the query set, the documents and the grid as they were, and shows its table.")
    return False


def table(run: dict) -> None:
    """Draw a kept sweep: what it is, and its rows with their metrics at the largest k, the best marked."""
    settings = run["settings"]
    st.caption(md(f"The kept run {run['id']} from {when(run)}: the last sweep of these inputs, "
               f"{settings['inputs'].get('words', '')}. It keeps each row's metrics, not the questions' hits: run the "
               "sweep again for its charts, failures and why answers were missed (its collections are reused). "
               "Experiments lists it with its report."))
    deepest = settings["ks"][-1] if settings["ks"] else None
    names = [f"hit@{k}" for k in settings["ks"]] + [f"{m}@{deepest}" for m in METRICS if m != "hit" and deepest]
    names += [f"hole@{deepest}"] if deepest else []
    st.dataframe(pd.DataFrame([
        {"best": "best" if i == run["best"] else "", "configuration": row["label"], "chunk_size": row["chunk_size"],
         "overlap": row["overlap"], "mode": row["mode"], "fusion": row["fusion"], "rerank": row["rerank"],
         "chunks": row["chunks"], **{name: round(row["metrics"][name], 3) for name in names if name in row["metrics"]}}
        for i, row in enumerate(run["rows"])]), hide_index=True, width="stretch", placeholder=EMPTY_CELL)
