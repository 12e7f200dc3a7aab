"""The Compare page's parts: run one query or a query set on two sides (collection + search mode), draw the result.

Arrows always say how a text moved from A to B: ▲ 2 = B ranks it two places higher (better), ▼ = lower.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import altair as alt
import pandas as pd
import streamlit as st

from rag import reports as hit_report
from rag.embeddings import EmbeddingCache, default_cache_dir
from rag.evaluation import (
    ALPHA,
    METRICS,
    EvaluationComparison,
    HitComparison,
    HitRow,
    Query,
    Side,
    compare_query,
    document_difference,
    format_p,
)
from rag.store import candidate_limit
from ui import render, resources, state
from ui.jobs.compare import CompareJob, submit
from ui.parts import chunk_text, live_jobs
from ui.render import md
from ui.workspace import Workspace

FOUND_COLOURS = {"both": "#e8e8e8", "only A": "#d3e4f5", "only B": "#fde0c2"}
CHANGE_COLOURS = {"better": "#d9f0d3", "worse": "#f8d7d3", "same": "#ffffff"}
UP, DOWN = "#2b8a3e", "#c92a2a"
EMPTY = "—"


def side_label(side: Side) -> str:
    return f"'{side.collection}' · {render.MODE_LABELS.get(side.mode.label, side.mode.label)}"


@dataclass(frozen=True)
class CompareRun:
    """One comparison as the page ran it: a query's hits, or a query set's evaluations."""

    sides: tuple[Side, Side]
    seconds: float
    query: str = ""
    top_k: int = 0
    hits: HitComparison | None = None
    query_set: str = ""  # its file name
    evaluations: EvaluationComparison | None = None


def _embedder(ws: Workspace, side: Side):
    """Return the embedder side's collection was made with (None for keyword search, which embeds nothing)."""
    return ws.embedder_for(side.collection) if side.mode.needs_vectors else None


@st.cache_data(max_entries=16, show_spinner=False)
def _difference(_ws: Workspace, key: tuple, a: str, b: str) -> str:
    return document_difference(_ws.store, a, b)


def documents_warning(ws: Workspace, sides: Sequence[Side]) -> None:
    """Warn when the two sides' collections hold different documents (listing them costs one scroll each)."""
    a, b = sides[0].collection, sides[1].collection
    note = _difference(ws, (ws.location, resources.version()), a, b) if a != b else ""
    if note:
        st.warning(md(note), icon=":material/difference:")


def run_query(ws: Workspace, sides: tuple[Side, Side], query: str, top_k: int) -> CompareRun:
    """Return both sides' top_k hits for query, compared (RagError as pipeline.search)."""
    started = time.perf_counter()
    hits = compare_query(query, sides, top_k, store=ws.store, embedders=[_embedder(ws, s) for s in sides])
    return CompareRun(sides, time.perf_counter() - started, query=query, top_k=top_k, hits=hits)


COMPARE_SEEN = "compare_job_seen"  # id of the newest query-set comparison whose result this session took
CANCEL_HELP = "Stops between two slices of the queries' embedding; nothing is written."


def start_query_set(ws: Workspace, sides: tuple[Side, Side], queries: Sequence[Query], name: str,
                    ks: Sequence[int]) -> CompareJob:
    """Queue both sides' evaluations of queries as a job of the app's process (ui.jobs.compare)."""
    job = CompareJob(sides, list(queries), name, list(ks), [_embedder(ws, s) for s in sides], ws.store, ws.location,
                     EmbeddingCache(default_cache_dir(ws.store)))
    return submit(live_jobs.queue(), job)


def query_set_run(job: CompareJob) -> CompareRun:
    """Return a finished comparison job as the run the page draws."""
    return CompareRun(job.sides, job.seconds, query_set=job.query_set, evaluations=job.result)


def move(shift: int | None) -> str:
    """Return a rank shift (rank in B minus rank in A) as an arrow: "▲ 2" (B higher), "▼ 1", "=" or ""."""
    if shift is None:
        return ""
    return "=" if shift == 0 else f"▲ {-shift}" if shift < 0 else f"▼ {shift}"


def side_frame(rows: Sequence[HitRow], letter: str) -> pd.DataFrame:
    """Return one side's hits: rank, whether the other side found the same text and how it moved, where, the chunk."""
    other = "B" if letter == "A" else "A"
    return pd.DataFrame([{"#": r.rank, "found": f"both {move(r.shift)}" if r.shared else f"only {letter}",
                          f"in {other}": r.other_rank, "score": r.hit.score, "document": r.hit.document_title,
                          "chunk": r.hit.chunk_index, "heading": render.heading_tail(r.hit.heading_path),
                          "start of text": render.preview(r.hit.content, 120)} for r in rows],
                        columns=["#", "found", f"in {other}", "score", "document", "chunk", "heading",
                                 "start of text"]).astype({f"in {other}": "Int64", "chunk": "Int64"})


def _found_style(value: str) -> str:
    """Return the CSS of a "found" cell: background by shared / only A / only B, the arrow green (up) or red."""
    background = FOUND_COLOURS["both" if value.startswith("both") else value]
    if "▲" in value or "▼" in value:
        return f"background-color: {background}; color: {UP if '▲' in value else DOWN}; font-weight: 600"
    return f"background-color: {background}"


def _side_table(run: CompareRun, letter: str) -> list[int]:
    """Draw one side's header and hit table; return the selected row positions."""
    comparison = run.hits
    side = run.sides[0 if letter == "A" else 1]
    rows = comparison.a if letter == "A" else comparison.b
    st.markdown(f"**{letter}** · {md(side_label(side))}")
    if not rows:
        st.caption("No hits.")
        return []
    other = "B" if letter == "A" else "A"
    styled = (side_frame(rows, letter).style.format(na_rep=EMPTY).format(precision=3, na_rep=EMPTY, subset=["score"])
              .map(_found_style, subset=["found"]))
    selection = st.dataframe(
        styled, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
        key=state.table_key(f"compare_table_{letter.lower()}", (r.hit.chunk_id for r in rows)),
        height=min(38 + 35 * len(rows), 425), placeholder=EMPTY,
        column_config={
            "#": st.column_config.NumberColumn(width=32),
            "found": st.column_config.TextColumn(width=72, help=f"both: {other} found the same text too; ▲ n: B "
                                                                "ranks it n places higher, ▼ n: lower"),
            f"in {other}": st.column_config.NumberColumn(width=42, help=f"rank of the same text in {other}"),
            "score": st.column_config.NumberColumn(width=52, help=f"{side.mode.label} score, on its own scale"),
            "document": st.column_config.TextColumn(width=160),
            "chunk": st.column_config.NumberColumn(width=48),
            "heading": st.column_config.TextColumn(width=240, help="the end of the heading path; the hit below shows "
                                                   "all of it"),
            "start of text": st.column_config.TextColumn(width="large")})
    return selection.selection.rows if selection else []


def show_hits(ws: Workspace, run: CompareRun) -> None:
    """Draw the one-query comparison: counts, both hit lists side by side, and the selected hits' text."""
    comparison = run.hits
    shared = comparison.shared_a
    up, down = sum(r.shift < 0 for r in shared), sum(r.shift > 0 for r in shared)
    cells = st.columns(4)
    cells[0].metric("shared", f"{len(shared)} of {len(comparison.a)}", help="A's hits whose text B also found")
    cells[1].metric("only in A", len(comparison.only_a))
    cells[2].metric("only in B", len(comparison.only_b))
    cells[3].metric("moved A→B", f"▲{up} ▼{down} ={len(shared) - up - down}",
                    help="shared texts B ranks higher (▲), lower (▼) or at the same rank (=) as A")
    st.caption("“both ▲ n”: the other side found the same text too (same document, spans sharing at least half), "
               "and B ranks it n places higher. Select a row to read the chunk and why it was found.")
    left, right = st.columns(2, gap="medium")
    with left:
        chosen_a = _side_table(run, "A")
    with right:
        chosen_b = _side_table(run, "B")
    for letter, chosen, rows in (("A", chosen_a, comparison.a), ("B", chosen_b, comparison.b)):
        if chosen:
            row = rows[chosen[0]]
            hit = row.hit
            st.markdown(f"**{letter} #{row.rank}** · {md(hit.document_title)} · chunk {hit.chunk_index} · "
                        f"{md(render.heading_label(hit.heading_path))}")
            side = run.sides[0 if letter == "A" else 1]
            analyzer = ws.store.analyzer(side.collection) if side.mode.needs_keywords else None
            st.caption(md(hit_report.explanation(hit, run.query, candidate_limit(run.top_k), analyzer)))
            chunk_text.show(hit, height=min(400, 60 + len(hit.content) // 4))


def metric_frame(comparison: EvaluationComparison) -> pd.DataFrame:
    """Return one row per metric (hit@k for every k, the others at the deepest k): A, B and B − A."""
    deepest = comparison.ks[-1]
    keys = [f"hit@{k}" for k in comparison.ks] + [f"{m}@{deepest}" for m in METRICS if m != "hit"]
    keys = [k for k in keys if k in comparison.deltas]
    paired = comparison.paired
    return pd.DataFrame([{"metric": k, "A": comparison.metrics_a[k], "B": comparison.metrics_b[k],
                          "B − A": comparison.deltas[k], "low": paired[k].low, "high": paired[k].high,
                          "p": paired[k].p_value, "too few differ": paired[k].too_few_differ} for k in keys])


def delta_chart(frame: pd.DataFrame) -> alt.Chart:
    """Return B − A per metric as horizontal bars with their 95 % paired interval as error bars; green where B is
    better, red where worse, grey where the query set cannot tell them apart."""
    data = frame.assign(direction=[("same" if p >= ALPHA else "B better" if d > 0 else "B worse")
                                   for d, p in zip(frame["B − A"], frame["p"], strict=True)])
    data = data.drop(columns=["too few differ"], errors="ignore")
    tooltip = ["metric", alt.Tooltip("A:Q", format=".3f"), alt.Tooltip("B:Q", format=".3f"),
               alt.Tooltip("B − A:Q", format="+.3f"), alt.Tooltip("low:Q", format="+.3f", title="95 % from"),
               alt.Tooltip("high:Q", format="+.3f", title="95 % to"), alt.Tooltip("p:Q", format=".3f")]
    base = alt.Chart(data).encode(y=alt.Y("metric:N", sort=None, title=None))
    bars = base.mark_bar().encode(
        x=alt.X("B − A:Q", title="B − A (bars: 95 % paired interval)"),
        color=alt.Color("direction:N", scale=alt.Scale(domain=["B better", "B worse", "same"],
                                                       range=[UP, DOWN, "#999999"]), legend=None),
        tooltip=tooltip)
    whiskers = base.mark_rule(color="#222222", strokeWidth=1.5).encode(x="low:Q", x2="high:Q", tooltip=tooltip)
    return (bars + whiskers).properties(height=28 * len(frame) + 30)


def query_frame(comparison: EvaluationComparison) -> pd.DataFrame:
    """Return one row per query: ranks of its first relevant chunk in A and B, the change and the mrr delta."""
    deepest = comparison.ks[-1]
    key = f"mrr@{deepest}"
    rows = [{"query": q.query, "change": q.change, "rank A": q.rank_a, "rank B": q.rank_b,
             f"Δ {key}": q.deltas.get(key, 0.0), "score A": q.score_a, "score B": q.score_b, "line": q.line}
            for q in comparison.per_query]
    frame = pd.DataFrame(rows, columns=["query", "change", "rank A", "rank B", f"Δ {key}", "score A", "score B",
                                        "line"]).astype({"rank A": "Int64", "rank B": "Int64"})
    order = frame["change"].map({"worse": 0, "better": 1, "same": 2})
    return frame.assign(_order=order, _size=-frame[f"Δ {key}"].abs()).sort_values(["_order", "_size", "line"]) \
        .drop(columns=["_order", "_size", "line"])


def show_evaluations(run: CompareRun) -> None:
    """Draw the query-set comparison: changes, metric deltas (table and bars), and the per-query table."""
    comparison = run.evaluations
    cells = st.columns(3)
    cells[0].metric("B better", comparison.count("better"), help="queries whose first relevant chunk B ranks higher")
    cells[1].metric("B worse", comparison.count("worse"))
    cells[2].metric("the same", comparison.count("same"))
    frame = metric_frame(comparison)
    left, right = st.columns([1, 1.2], gap="medium")
    shown = frame.assign(interval=[f"{lo:+.3f} to {hi:+.3f}" for lo, hi in zip(frame["low"], frame["high"],
                                                                               strict=True)],
                         p=[("too few differ" if few else format_p(p)) for p, few in
                            zip(frame["p"], frame["too few differ"], strict=True)]
                         ).drop(columns=["low", "high", "too few differ"])
    left.dataframe(shown.style.format(precision=3).format("{:+.3f}", subset=["B − A"]).map(
        lambda d: f"color: {UP if d > 0 else DOWN if d < 0 else '#666'}; font-weight: 600", subset=["B − A"]),
        hide_index=True, width="stretch", column_config={"interval": st.column_config.TextColumn("95 % interval")})
    right.altair_chart(delta_chart(frame), width="stretch")
    st.markdown(f"**{md(comparison.verdict())}**")
    st.caption("Paired over the same queries: each query's B − A is what counts, so queries hard for both cancel "
               "out. p: sign-flip permutation test; interval: the same test inverted, so it holds 0 exactly when "
               "p ≥ 0.05: this query set cannot tell A and B apart (grey bars), not that they are equal. Where 5 or "
               "fewer questions differ no test can decide: too few differ.")
    deepest = comparison.ks[-1]
    st.subheader("Per query")
    only_changed = st.toggle("Only queries whose rank changed", value=True, key="compare_only_changed")
    queries = query_frame(comparison)
    if only_changed:
        queries = queries[queries["change"] != "same"]
    st.caption(f"Rank and score of each query's first relevant chunk ({EMPTY}: not within the top {deepest}); "
               "queries B made worse first. Scores are on each side's own scale.")
    if queries.empty:
        st.caption("No query changed rank.")
        return
    st.dataframe(queries.style.format(na_rep=EMPTY).format(precision=3, na_rep=EMPTY, subset=["score A", "score B"])
                 .format("{:+.3f}", subset=[f"Δ mrr@{deepest}"])
                 .map(lambda c: f"background-color: {CHANGE_COLOURS.get(c, '#ffffff')}", subset=["change"]),
                 hide_index=True, width="stretch", height=min(38 + 35 * len(queries), 460), placeholder=EMPTY,
                 column_config={"query": st.column_config.TextColumn(width=380),
                                "change": st.column_config.TextColumn(width=70),
                                "rank A": st.column_config.NumberColumn(width=60),
                                "rank B": st.column_config.NumberColumn(width=60)})
