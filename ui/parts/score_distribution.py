"""The score distribution of the Search page's query over the whole collection: a histogram and the scores by rank,
with the top_k and threshold cuts drawn on both, so a threshold can be chosen by eye."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rag.embeddings import Embedder
from rag.reports import SCORE_NAMES, SCORE_SHORT, ScoreDistribution, distribution_of, score_distribution
from rag.retrieval import SearchRequest
from rag.store import CANDIDATES, Store, candidate_limit
from ui import errors, resources
from ui.render import counted, md, plural
from ui.workspace import SearchRun, Workspace

HEIGHT = 220
TITLE_LIMIT = HEIGHT - 80  # pixels: a vertical axis title no longer than the plot (HEIGHT less the x axis) is tall
BAR = "#4c78a8"
KEPT = "#f58518"
THRESHOLD_COLOUR = "#d62728"
CUT_COLOUR = "#555555"


@st.cache_data(max_entries=32, show_spinner=False)
def _distribution(_store: Store, _embedder: Embedder | None, key: tuple, query: str, collection: str, mode: str,
                  fusion: str, document_ids: tuple[str, ...], include_toc: bool = False) -> ScoreDistribution:
    """Return the scores of every chunk, fused CANDIDATES deep as the table is (so for every top_k of the
    slider); key names the store, its state and the embedder (location, changes, model). top_k and the
    threshold only cut these scores (distribution()), so moving them searches nothing."""
    vector = None
    if _embedder is not None and mode != "sparse" and query.strip():
        vector = resources.query_vector(_embedder, (_embedder.model_id, _embedder.query_prompt), query)
    request = SearchRequest(mode=mode, fusion=fusion, top_k=CANDIDATES, document_ids=document_ids,
                            include_toc=include_toc)
    return score_distribution(query, collection, request, store=_store, embedder=_embedder, query_vector=vector)


def _rules(dist: ScoreDistribution, axis: str) -> tuple[list[dict], dict[str, pd.DataFrame]]:
    """Return the threshold and top_k-cut rules with their labels, across a score axis "x" or "y", and their data."""
    cuts = []
    if dist.threshold is not None:
        cuts.append((dist.threshold, f"threshold {dist.threshold:.3g}", THRESHOLD_COLOUR, [5, 3]))
    if dist.kth_score is not None:
        cuts.append((dist.kth_score, f"top_k={dist.top_k} cut {dist.kth_score:.3g}", CUT_COLOUR, [2, 2]))
    rules, labels, datasets = [], [], {}
    values = [*dist.scores, *(c[0] for c in cuts)]
    low, high = min(values), max(values)
    score = {"field": "score", "type": "quantitative"}
    for i, (value, label, colour, dash) in enumerate(cuts):
        name = f"cut-{axis}-{i}"
        datasets[name] = pd.DataFrame({"score": [value], "label": [label]})
        data = {"name": name}
        rules.append({"data": data, "mark": {"type": "rule", "color": colour, "strokeDash": dash, "size": 2},
                      "encoding": {axis: score}})
        if axis == "x":  # labels stacked at the top, beside their rule on the side with room
            right = value - low > 0.6 * (high - low)
            place = {"align": "right" if right else "left", "baseline": "top", "dx": -4 if right else 4,
                     "dy": 4 + 15 * i}
            where = {"x": score, "y": {"value": 0}}
        else:  # labels at the right edge, the threshold's below its rule, the cut's above, so they never overlap
            place = {"align": "right", "dy": 9 if colour == THRESHOLD_COLOUR else -7}
            where = {"y": score, "x": {"value": "width"}}
        text = {"type": "text", "fontSize": 11, "fontWeight": "bold", **place}
        encoding = {"text": {"field": "label", "type": "nominal"}, **where}
        labels.append({"data": data, "mark": {**text, "stroke": "white", "strokeWidth": 4, "strokeJoin": "round"},
                       "encoding": encoding})  # a white halo: readable over bars and rules
        labels.append({"data": data, "mark": {**text, "color": colour}, "encoding": encoding})
    return rules + labels, datasets


def _returned(dist: ScoreDistribution) -> pd.DataFrame:
    frame = pd.DataFrame(dist.rows(), columns=["rank", "score", "in_top_k", "above_threshold", "kept"])
    frame["returned"] = frame["kept"].map({True: "returned", False: "not returned"})
    return frame[["rank", "score", "returned"]]


RETURNED_COLOUR = {"field": "returned", "type": "nominal", "legend": None,
                   "scale": {"domain": ["returned", "not returned"], "range": [KEPT, BAR]}}


def histogram(dist: ScoreDistribution, title: str) -> dict:
    """Return how many chunks got each score (binned), the cuts drawn as vertical rules (a Vega-Lite spec).

    Charts on this page are written as Vega-Lite specs, not built with Altair: Altair's validation took about
    0.2 s per chart, more than the search itself, on every top_k or threshold change.
    """
    bars = {"data": {"name": "scores"}, "mark": {"type": "bar", "opacity": 0.9}, "encoding": {
        "x": {"field": "score", "type": "quantitative", "bin": {"maxbins": 40}, "title": title},
        "y": {"aggregate": "count", "type": "quantitative", "title": "chunks"},
        "color": RETURNED_COLOUR,
        "tooltip": [{"aggregate": "count", "type": "quantitative", "title": "chunks"},
                    {"field": "returned", "type": "nominal"}],
    }}
    rules, datasets = _rules(dist, "x")
    return {"height": HEIGHT, "layer": [bars, *rules], "datasets": {"scores": _returned(dist), **datasets}}


def rank_line(dist: ScoreDistribution, short_title: str) -> dict:
    """Return every score against its rank (log scale past 50 ranks), returned chunks in orange (a Vega-Lite spec)."""
    frame = _returned(dist)
    log = len(frame) > 50
    x = {"field": "rank", "type": "quantitative", "title": "rank" + (" (log scale)" if log else ""),
         "axis": {"grid": False}, "scale": {"type": "log"} if log else {"domainMin": 1, "nice": False}}
    # a y title longer than the plot is tall made Vega's fit-to-width layout shrink the plot on every resize,
    # until the curve was a flat line: the vertical title is the short name ("score (convex)"), whole, and the
    # histogram beside it spells the score out along its x axis
    y = {"field": "score", "type": "quantitative", "title": short_title, "scale": {"zero": False},
         "axis": {"titleLimit": TITLE_LIMIT}}
    line = {"data": {"name": "scores"}, "mark": {"type": "line", "color": BAR, "strokeWidth": 1.5},
            "encoding": {"x": x, "y": y}}
    dots = {"data": {"name": "scores"}, "mark": {"type": "circle", "size": 28, "opacity": 0.9}, "encoding": {
        "x": x, "y": y, "color": RETURNED_COLOUR,
        "tooltip": [{"field": "rank", "type": "quantitative"},
                    {"field": "score", "type": "quantitative", "format": ".4f"},
                    {"field": "returned", "type": "nominal"}]}}
    rules, datasets = _rules(dist, "y")
    layers = [line, dots, *rules]
    if dist.kth_score is not None:
        datasets["cut-rank"] = pd.DataFrame({"rank": [dist.top_k]})
        rule = {"type": "rule", "color": CUT_COLOUR, "strokeDash": [2, 2]}
        layers.append({"data": {"name": "cut-rank"}, "mark": rule,
                       "encoding": {"x": {"field": "rank", "type": "quantitative"}}})
    return {"height": HEIGHT, "layer": layers, "datasets": {"scores": frame, **datasets}}


def summary(dist: ScoreDistribution) -> str:
    """Return the distribution's numbers in words (Markdown-safe: no document text in it)."""
    scored = len(dist.scores)
    parts = [f"{scored:,} of {dist.total:,} chunks scored" if scored != dist.total else f"all {scored:,} chunks scored"]
    if dist.kth_score is not None:
        parts.append(f"top_k = {dist.top_k} cuts at {dist.kth_score:.3f} (best {dist.scores[0]:.3f})")
    else:
        parts.append(f"top_k = {dist.top_k} is more than the {counted(scored, 'scored chunk')}")
    if dist.threshold is not None:
        reach = plural(dist.above_threshold, "reaches", "reach")
        parts.append(f"{counted(dist.above_threshold, 'chunk')} {reach} the threshold {dist.threshold:.3g}")
    parts.append(f"the search returns {dist.kept}")
    if dist.stats:
        s = dist.stats
        parts.append(f"median {s.median:.3f}, middle half {s.q1:.3f}–{s.q3:.3f}")
    return " · ".join(parts) + "."


def distribution(ws: Workspace, run: SearchRun, embedder: Embedder | None) -> None:
    """Draw the score distribution of run's query (one search over the whole collection, cached)."""
    key = (run.location, resources.version(), run.model_id)
    with errors.reported() as report:
        with st.spinner("Scoring every chunk…"):
            scored = _distribution(ws.store, embedder, key, run.query, run.collection, run.mode, run.fusion,
                                   tuple(run.document_ids), run.include_toc)
        cuts = run.request.replace(fusion=scored.fusion or run.fusion, depth=candidate_limit(run.top_k))
        dist = distribution_of(scored.scores, cuts, scored.total, scored.cap, query=run.query,
                               collection=run.collection, score_kind=scored.score_kind)
    if report.failed:
        return
    if not dist.scores:
        st.caption("No chunk got a score for this query.")
        return
    title = SCORE_NAMES.get(dist.score_kind or "cosine", dist.score_kind or "score")
    left, right = st.columns(2)
    left.vega_lite_chart(spec=histogram(dist, title), width="stretch")
    kind = dist.score_kind or "cosine"
    right.vega_lite_chart(spec=rank_line(dist, f"score ({SCORE_SHORT.get(kind, kind)})"), width="stretch")
    st.caption(summary(dist) + " Orange: the chunks this search returns; red dashed: the threshold; grey dotted: "
               "the score at rank top_k. A threshold just above a drop in the right-hand curve keeps the chunks that "
               "stand out.")
    for note in dist.notes:
        st.caption(md(note))
