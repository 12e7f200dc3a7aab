"""The pieces of the Experiments page: the kept runs as a table (filtered), one run's rows, report and delete, and two
runs compared with the paired test on the questions both ran (the numbers of `rag runs` / `rag runs compare --json`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rag.evaluation import METRICS, format_p
from rag.runs import RunLog, compare_runs
from ui import errors, state
from ui.render import EMPTY_CELL, counted, md

KINDS = ("eval", "sweep")


def _spread(row: dict, metric: str) -> float | None:
    interval = row["intervals"].get(metric)
    return round((interval[1] - interval[0]) / 2, 3) if interval else None


def filtered(runs: list[dict]) -> list[dict]:
    """Draw the filters (kind, words) and return the runs they keep."""
    left, right = st.columns([1, 2])
    kinds = left.multiselect("Kind", KINDS, default=list(KINDS), key="experiments_kinds")
    words = right.text_input("Filter", key="experiments_filter", placeholder="collection, query set, embedder, row",
                             help="Keeps the runs whose collection, query set, embedder, documents or rows contain "
                             "these words.").strip().lower()

    def matches(run: dict) -> bool:
        settings = run["settings"]
        text = " ".join(map(str, [settings["collection"] or "", settings["query_set"], settings["embedder"] or "",
                                  *settings["documents"], *(row["label"] for row in run["rows"])])).lower()
        return all(word in text for word in words.split())

    return [run for run in runs if run["kind"] in kinds and matches(run)]


def table(runs: list[dict]) -> None:
    """Draw one line per run: when, what, on which query set, its best row and that row's metric with its ±."""
    rows = []
    for run in runs:
        settings, metric = run["settings"], run["settings"]["metric"]
        best = run["rows"][run["best"]] if run["best"] is not None else None
        rows.append({"id": run["id"], "kind": run["kind"], "created (UTC)": run["created_at"][:16].replace("T", " "),
                     "collection": settings["collection"] or counted(len(settings["documents"]), "document"),
                     "embedder": settings["embedder"], "query set": settings["query_set"],
                     "queries": settings["queries"], "rows": len(run["rows"]),
                     "best row": best["label"] if best else None, "metric": metric,
                     "value": round(best["metrics"][metric], 3) if best and metric in best["metrics"] else None,
                     "±": _spread(best, metric) if best else None})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", placeholder=EMPTY_CELL,
                 column_config={"value": st.column_config.NumberColumn(format="%.3f"),
                                "±": st.column_config.NumberColumn(format="%.3f")})


def details(log: RunLog, run: dict) -> None:
    """Draw one run: its settings, its rows with their metrics, its report, and delete (after a confirmation)."""
    settings = run["settings"]
    prompts = settings["prompts"]
    st.caption(md(f"{run['kind']} of {counted(settings['queries'], 'question')} ({settings['query_set']}, sha256 "
                  f"{(settings['query_hash'] or 'not kept')[:12]}) · {settings['embedder']} · prompts "
                  f"'{prompts['query']}' / '{prompts['document']}' · {run['created_at']}"
                  + (f" · {run['seconds']:.1f} s" if run["seconds"] is not None else "")))
    st.space("medium")  # the table's hover toolbar sits above it: here, not over the caption's end (the time)
    deepest = settings["ks"][-1] if settings["ks"] else None
    names = [f"hit@{k}" for k in settings["ks"]] + [f"{m}@{deepest}" for m in METRICS if m != "hit" and deepest]
    st.dataframe(pd.DataFrame([
        {"row": i, "best": "best" if i - 1 == run["best"] else "", "label": row["label"],
         "chunk_size": row["chunk_size"], "overlap": row["overlap"], "child_size": row.get("child_size") or 0,
         "mode": row["mode"], "fusion": row["fusion"],
         "rerank": row["rerank"], "chunks": row["chunks"], "collection": row["collection"],
         **{name: round(row["metrics"][name], 3) for name in names if name in row["metrics"]}}
        for i, row in enumerate(run["rows"], 1)]), hide_index=True, width="stretch", placeholder=EMPTY_CELL)
    report, delete = st.columns(2)
    if run.get("has_report"):
        report.download_button("Download report (HTML)", lambda: log.report(run["id"]) or "",
                               f"run-{run['id']}.html", "text/html", icon=":material/slideshow:",
                               key=f"experiments_report_{run['id']}")
    else:
        report.caption("No HTML report was kept with this run.")
    with delete:
        sure = st.checkbox(f"Yes, delete run {run['id']}", key=f"experiments_confirm_{run['id']}")
        if st.button(f"Delete run {run['id']}", icon=":material/delete:", disabled=not sure,
                     key=f"experiments_delete_{run['id']}"):
            with errors.reported() as report:
                log.delete(run["id"])
            if report.failed:
                return
            state.announce(f"Deleted run {run['id']}.")
            st.rerun()


def sides(runs: list[dict]) -> dict[str, str]:
    """Return what can be compared, each row once: "7" (a run of one row) or "7/3" (row 3 of sweep 7, its best
    marked), with its words. A sweep's best row offered as "7" too showed the same row twice."""
    options = {}
    for run in runs:
        if len(run["rows"]) == 1:
            options[str(run["id"])] = f"run {run['id']} · {run['rows'][0]['label']} · {run['settings']['query_set']}"
            continue
        options.update({f"{run['id']}/{i}": f"run {run['id']} row {i}{' (best)' if i - 1 == run['best'] else ''} · "
                        f"{row['label']}" for i, row in enumerate(run["rows"], 1)})
    return options


def compare(log: RunLog, runs: list[dict]) -> None:
    """Draw two chosen runs compared: metrics, B minus A, its paired interval and p, the verdict in words."""
    options = sides(runs)
    keys = list(options)
    left, right = st.columns(2)
    a = left.selectbox("A", keys, index=min(1, len(keys) - 1), format_func=options.get, key="experiments_a")
    b = right.selectbox("B", keys, index=0, format_func=options.get, key="experiments_b")
    result = errors.attempt(compare_runs, log, a, b)
    if result is None:
        return
    comparison = result.comparison
    st.caption(f"{counted(len(comparison.per_query), 'question')} both ran; only A ran {result.only_a}, only B "
               f"{result.only_b}."
               + ("" if result.to_json()["same_query_set"] else " The two query sets differ."))
    if warning := result.version_warning():  # counts and hashes only: no question text is rendered as Markdown
        text = warning.removeprefix("warning: ")
        st.warning(text[:1].upper() + text[1:], icon="⚠️")
    st.dataframe(pd.DataFrame([
        {"metric": key, "A": round(comparison.metrics_a[key], 3), "B": round(comparison.metrics_b[key], 3),
         "B - A": round(comparison.deltas[key], 3),
         "95 % interval": f"{test.low:+.3f} to {test.high:+.3f}",
         "p": "too few differ" if test.too_few_differ else format_p(test.p_value)}
        for key, test in comparison.paired.items()]), hide_index=True, width="stretch", placeholder=EMPTY_CELL)
    st.markdown(f"**{md(comparison.verdict())}**")
    st.caption(f"B better on {counted(comparison.count('better'), 'question')}, worse on {comparison.count('worse')}, "
               f"the same "
               f"on {comparison.count('same')} (by the rank of the first relevant chunk).")
