"""The score distribution of the last search: every chunk's score for the query, with the top_k and threshold cuts.

Drawn twice from the same scores: a histogram (how scores spread, and where the cuts fall in it) and the
scores by rank (the "elbow" a threshold should sit above). Both carry the same two rules: the threshold
(red, dashed) and the score at rank top_k (grey), so a threshold can be chosen by eye.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from rag.embeddings import Embedder
from rag.errors import RagError
from rag.reports.scores import ScoreDistribution, score_distribution
from rag.store.client import Store
from ui import resources
from ui.render import md
from ui.workspace import SearchRun, Workspace

HEIGHT = 220
BAR = "#4c78a8"
KEPT = "#f58518"
THRESHOLD_COLOUR = "#d62728"
CUT_COLOUR = "#555555"
KIND_WORDS = {"cosine": "cosine similarity", "bm25": "BM25 keyword score", "rrf": "fused RRF score",
              "dbsf": "fused DBSF score"}


@st.cache_data(max_entries=32, show_spinner=False)
def _distribution(_store: Store, _embedder: Embedder | None, key: tuple, query: str, collection: str, mode: str,
                  fusion: str, top_k: int, threshold: float | None,
                  document_ids: tuple[str, ...]) -> ScoreDistribution:
    """Return the distribution; key names the store, its state and the embedder (location, changes, model)."""
    return score_distribution(query, collection, store=_store, embedder=_embedder, mode=mode, fusion=fusion,
                              top_k=top_k, threshold=threshold, document_ids=list(document_ids) or None)


def _rules(dist: ScoreDistribution, axis: str) -> list[alt.Chart]:
    """Return the threshold and top_k-cut rules with their labels, across a score axis "x" or "y"."""
    cuts = []
    if dist.threshold is not None:
        cuts.append((dist.threshold, f"threshold {dist.threshold:.3g}", THRESHOLD_COLOUR, [5, 3]))
    if dist.kth_score is not None:
        cuts.append((dist.kth_score, f"top_k={dist.top_k} cut {dist.kth_score:.3g}", CUT_COLOUR, [2, 2]))
    rules, labels = [], []
    values = [*dist.scores, *(c[0] for c in cuts)]
    low, high = min(values), max(values)
    for i, (value, label, colour, dash) in enumerate(cuts):
        chart = alt.Chart(pd.DataFrame({"score": [value], "label": [label]}))
        if axis == "x":  # labels stacked at the top, beside their rule on the side with room
            right = value - low > 0.6 * (high - low)
            rules.append(chart.mark_rule(color=colour, strokeDash=dash, size=2).encode(x="score:Q"))
            place = {"align": "right" if right else "left", "baseline": "top", "dx": -4 if right else 4,
                     "dy": 4 + 15 * i}
            where = {"x": "score:Q", "y": alt.value(0)}
        else:  # labels at the right edge, the threshold's below its rule, the cut's above, so they never overlap
            rules.append(chart.mark_rule(color=colour, strokeDash=dash, size=2).encode(y="score:Q"))
            place = {"align": "right", "dy": 9 if colour == THRESHOLD_COLOUR else -7}
            where = {"y": "score:Q", "x": alt.value("width")}
        text = {"fontSize": 11, "fontWeight": "bold", **place}
        labels.append(chart.mark_text(stroke="white", strokeWidth=4, strokeJoin="round", **text)
                      .encode(text="label:N", **where))  # a white halo: readable over bars and rules
        labels.append(chart.mark_text(color=colour, **text).encode(text="label:N", **where))
    return rules + labels


def histogram(dist: ScoreDistribution, title: str) -> alt.LayerChart:
    """Return how many chunks got each score (binned), the cuts drawn as vertical rules."""
    frame = pd.DataFrame(dist.rows(), columns=["rank", "score", "in_top_k", "above_threshold", "kept"])
    frame["returned"] = frame["kept"].map({True: "returned", False: "not returned"})
    bars = alt.Chart(frame).mark_bar(opacity=0.9).encode(
        x=alt.X("score:Q", bin=alt.Bin(maxbins=40), title=title),
        y=alt.Y("count():Q", title="chunks"),
        color=alt.Color("returned:N", scale=alt.Scale(domain=["returned", "not returned"], range=[KEPT, BAR]),
                        legend=None),
        tooltip=[alt.Tooltip("count():Q", title="chunks"), "returned"],
    )
    return alt.layer(bars, *_rules(dist, "x")).properties(height=HEIGHT)


def rank_line(dist: ScoreDistribution, title: str) -> alt.LayerChart:
    """Return every score against its rank (log scale past 50 ranks), returned chunks in orange."""
    frame = pd.DataFrame(dist.rows(), columns=["rank", "score", "in_top_k", "above_threshold", "kept"])
    frame["returned"] = frame["kept"].map({True: "returned", False: "not returned"})
    log = len(frame) > 50
    x = alt.X("rank:Q", title="rank" + (" (log scale)" if log else ""), axis=alt.Axis(grid=False),
              scale=alt.Scale(type="log") if log else alt.Scale(domainMin=1, nice=False))
    base = alt.Chart(frame).encode(x=x, y=alt.Y("score:Q", title=title, scale=alt.Scale(zero=False)))
    line = base.mark_line(color=BAR, strokeWidth=1.5)
    dots = base.mark_circle(size=28, opacity=0.9).encode(
        color=alt.Color("returned:N", scale=alt.Scale(domain=["returned", "not returned"], range=[KEPT, BAR]),
                        legend=None),
        tooltip=["rank", alt.Tooltip("score:Q", format=".4f"), "returned"])
    layers = [line, dots, *_rules(dist, "y")]
    if dist.kth_score is not None:
        cut = pd.DataFrame({"rank": [dist.top_k]})
        layers.append(alt.Chart(cut).mark_rule(color=CUT_COLOUR, strokeDash=[2, 2]).encode(x="rank:Q"))
    return alt.layer(*layers).properties(height=HEIGHT)


def summary(dist: ScoreDistribution) -> str:
    """Return the distribution's numbers in words (Markdown-safe: no document text in it)."""
    scored = len(dist.scores)
    parts = [f"{scored:,} of {dist.total:,} chunks scored" if scored != dist.total else f"all {scored:,} chunks scored"]
    if dist.kth_score is not None:
        parts.append(f"top_k = {dist.top_k} cuts at {dist.kth_score:.3f} (best {dist.scores[0]:.3f})")
    else:
        parts.append(f"top_k = {dist.top_k} is more than the {scored} scored chunks")
    if dist.threshold is not None:
        parts.append(f"{dist.above_threshold:,} chunks reach the threshold {dist.threshold:.3g}")
    parts.append(f"the search returns {dist.kept}")
    if dist.stats:
        s = dist.stats
        parts.append(f"median {s.median:.3f}, middle half {s.q1:.3f}–{s.q3:.3f}")
    return " · ".join(parts) + "."


def show(ws: Workspace, run: SearchRun, embedder: Embedder | None) -> None:
    """Draw the score distribution of run's query (one search over the whole collection, cached)."""
    key = (run.location, resources.version(), run.model_id)
    try:
        with st.spinner("Scoring every chunk…"):
            dist = _distribution(ws.store, embedder, key, run.query, run.collection, run.mode, run.fusion,
                                 run.top_k, run.threshold, tuple(run.document_ids))
    except RagError as error:
        st.error(md(str(error)))
        return
    if not dist.scores:
        st.caption("No chunk got a score for this query.")
        return
    title = KIND_WORDS.get(dist.score_kind or "cosine", dist.score_kind or "score")
    left, right = st.columns(2)
    left.altair_chart(histogram(dist, title), width="stretch")
    right.altair_chart(rank_line(dist, title), width="stretch")
    st.caption(summary(dist) + " Orange: the chunks this search returns; red dashed: the threshold; grey dotted: "
               "the score at rank top_k. A threshold just above a drop in the right-hand curve keeps the chunks that "
               "stand out.")
    for note in dist.notes:
        st.caption(md(note))
