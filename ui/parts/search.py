"""The pieces of the Search page: notes, the hit table, scores per source, each hit with its neighbours, and the
score distribution of the query over the whole collection (a histogram and the scores by rank, with the top_k and
threshold cuts drawn on both, so a threshold can be chosen by eye)."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from rag import pipeline
from rag import reports as hit_report
from rag.embeddings import Embedder
from rag.reports import (
    SCORE_NAMES,
    SCORE_SHORT,
    ScoreDistribution,
    distribution_of,
    explanation,
    keywords,
    rrf_sum,
    score_distribution,
    score_kind,
    score_name,
)
from rag.store import CANDIDATES, Analyzer, Hit, Store, candidate_limit
from ui import errors, render, resources
from ui.parts import rerank as rerank_part
from ui.render import md
from ui.workspace import SearchRun, Workspace

EMPTY_CELL = "—"


def run_search(ws: Workspace, query: str, top_k: int, threshold: float | None, document_ids: tuple[str, ...],
               mode: str, fusion: str, include_toc: bool, rerank: tuple[str, int] = ("", 0),
               last: SearchRun | None = None) -> SearchRun | None:
    """Return the search as the page shows it, or None after its error.

    The ranking is searched CANDIDATES deep (the slider's maximum) and cut to top_k: fused scores do not depend
    on top_k up to that depth, so when only top_k or the threshold changed since last, last's ranking is cut
    again without a search. The query is embedded once per text (ui.resources.query_vector). rerank: (spec,
    depth); with a spec, the first `depth` of the ranking are reordered by that reranker (ui.parts.rerank).
    """
    started, version = time.perf_counter(), resources.version()
    if last is not None and top_k <= len(last.ranking) and last.same_ranking(query, document_ids, mode, fusion,
                                                                              include_toc, version, rerank):
        ranking, model_id = last.ranking, last.model_id
    else:
        with errors.reported() as report:
            reranker = rerank_part.reranker(rerank[0])
            embedder = ws.embedder()
            with st.spinner("Searching… (the first search loads the model)"):
                vector = None
                if mode != "sparse" and query.strip():
                    vector = resources.query_vector(embedder, (embedder.model_id, embedder.query_prompt), query)
                ranking = tuple(pipeline.search(query, ws.collection, max(top_k, CANDIDATES), None,
                                                list(document_ids) or None, store=ws.store, embedder=embedder,
                                                mode=mode, fusion=fusion, include_toc=include_toc,
                                                query_vector=vector, reranker=reranker, rerank_depth=rerank[1]))
        if report.failed:
            return None
        model_id = embedder.model_id
    hits = list(ranking[:top_k])
    outcome = hit_report.apply_threshold(hits, top_k, threshold)
    return SearchRun(query, ws.collection, ws.location, top_k, threshold, document_ids, hits, outcome, model_id,
                     time.perf_counter() - started, mode, fusion, include_toc, ranking, version, rerank)


def notes(run: SearchRun) -> None:
    """Say why there are fewer hits than asked for, if there are."""
    for note in run.outcome.notes:
        (st.warning if not run.outcome.hits else st.info)(md(note))


def _listed(rank: int | None, score: float | None, digits: int) -> str | None:
    """Return a place in a candidate list as "#3 · 0.412", or None when the chunk was not in it."""
    return None if rank is None or score is None else f"#{rank} · {score:.{digits}f}"


def hits_frame(hits: list[Hit], mode: str = "dense", query: str = "", analyzer: Analyzer | None = None
               ) -> pd.DataFrame:
    """Return one row per hit; hybrid adds where the chunk stood in the dense and the keyword list."""
    rows = []
    for rank, h in enumerate(hits, 1):
        row = {"rank": rank, "score": h.score}
        if mode == "hybrid":  # where the chunk stood in each list the fusion merged
            row |= {"dense rank": h.dense_rank, "keyword rank": h.sparse_rank,
                    "dense": _listed(h.dense_rank, h.dense_score, 3),
                    "keyword": _listed(h.sparse_rank, h.sparse_score, 2)}
            if h.score_kind == "rrf":
                row["fused from"] = rrf_sum(h)
        row |= rerank_part.before(h)
        row |= {"query words in chunk": keywords(query, h, analyzer), "document": h.document_title or h.document_id,
                "heading path": render.heading_tail(h.heading_path),
                "pages": render.pages_label(h.page_start, h.page_end), "chunk": h.chunk_index}
        rows.append(row)
    return pd.DataFrame(rows)


def hit_table(hits: list[Hit], mode: str = "dense", query: str = "", top_k: int = 5,
              analyzer: Analyzer | None = None) -> None:
    """Draw the hits; in hybrid mode each hit's place in the dense and keyword lists comes right after its score."""
    top = max((h.score or 0.0 for h in hits), default=1.0)
    depth = candidate_limit(top_k)
    kind = score_kind(hits)
    frame = hits_frame(hits, mode, query, analyzer)
    shown = [c for c in frame.columns if c not in ("dense rank", "keyword rank")]  # in "dense" / "keyword"
    st.dataframe(frame, hide_index=True, width="stretch", placeholder=EMPTY_CELL, column_order=shown, column_config={
        "rank": st.column_config.NumberColumn(width=45),
        "score": st.column_config.ProgressColumn(f"score ({SCORE_SHORT.get(kind, kind)})", format="%.3f",
                                                 min_value=0.0, max_value=max(top, 1e-6), width=120,
                                                 help=f"{score_name(hits)} (higher is better)"),
        "dense": st.column_config.TextColumn(width=85, help=f"rank · cosine in the embedding (dense) list; "
                                                            f"{EMPTY_CELL} = not in its top {depth}"),
        "keyword": st.column_config.TextColumn(width=80, help=f"rank · BM25 score in the keyword list; {EMPTY_CELL} "
                                                              f"= no query word, or not in its top {depth}"),
        "fused from": st.column_config.TextColumn(width=80, help="RRF: 1 / (rank + 1) from each list, added up"),
        "before rerank": rerank_part.BEFORE_COLUMN,
        "query words in chunk": st.column_config.TextColumn("query words", width=130, help=(
            "the query's words whose keyword terms occur in the chunk (stop words left out)")),
        "document": st.column_config.TextColumn(width=150),
        "heading path": st.column_config.TextColumn(width=230, help=render.HEADING_TAIL_HELP),
        "pages": st.column_config.TextColumn(width=50),
        "chunk": st.column_config.NumberColumn(width=50),
    })


def sources(hits: list[Hit]) -> None:
    """Draw hits per document with best and mean score, so one sees which documents dominate."""
    scores = hit_report.source_scores(hits)
    frame = pd.DataFrame([
        {"document": s.title, "hits": s.hits, "best": round(s.best, 4), "mean": round(s.mean, 4),
         "ranks": ", ".join(map(str, s.ranks))}
        for s in scores
    ])
    st.vega_lite_chart(spec=render.source_chart(frame, score_name(hits)), width="content")
    if any(h.child is not None for h in hits):
        st.caption("Each score comes from a child or the chunk itself: the collection searches chunks together "
                   "with their children (parent–child), and a chunk scores as the best of itself and its children.")
    if len(scores) == 1:
        st.caption("All hits come from one document." if len(hits) > 1 else "One hit.")
    else:
        leader = scores[0]
        st.caption(f"{len(scores)} documents; '{md(leader.title)}' has {leader.hits} of {len(hits)} hits "
                   f"(ranks {', '.join(map(str, leader.ranks))}).")


def hit_details(workspace: Workspace, hits: list[Hit], query: str = "", top_k: int = 5,
                analyzer: Analyzer | None = None) -> None:
    """Draw one expander per hit: why it was found, the whole content, and on request its neighbours."""
    depth = candidate_limit(top_k)
    for rank, hit in enumerate(hits, 1):
        score = f"{hit.score:.3f}" if hit.score is not None else "–"
        pages = render.pages_label(hit.page_start, hit.page_end)
        label = f"#{rank} · {score} · {hit.document_title} · {render.heading_label(hit.heading_path)}"
        with st.expander(md(label + (f" · p. {pages}" if pages else "")), expanded=rank == 1):
            st.caption(md(explanation(hit, query, depth, analyzer)))
            if hit.child is not None and hit.child.index is not None:  # its matching child marked (escaped)
                st.html(render.child_marked_html(hit.content, hit.child.start, hit.child.end))
            else:
                st.code(hit.content, language=None, wrap_lines=True)
            if hit.chunk_index is not None and st.toggle("Show neighbours", key=f"neighbours-{rank}-{hit.chunk_id}"):
                _neighbours(workspace, hit)


def _neighbours(workspace: Workspace, hit: Hit) -> None:
    with errors.reported() as report:
        chunks = workspace.document_chunks(hit.document_id)
    if report.failed:
        return
    before, after = hit_report.neighbours(chunks, hit.chunk_index)
    for label, items in (("before", before), ("after", after)):
        if not items:
            st.caption(f"No chunk {label} this one.")
        for chunk in items:
            st.caption(f"Chunk #{chunk.chunk_index} ({label}) · {md(render.heading_label(chunk.heading_path))}")
            st.text(chunk.content)


# ---- the score distribution -------------------------------------------------------------------------------

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
    return score_distribution(query, collection, store=_store, embedder=_embedder, mode=mode, fusion=fusion,
                              top_k=CANDIDATES, document_ids=list(document_ids) or None, query_vector=vector,
                              include_toc=include_toc)


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
        parts.append(f"top_k = {dist.top_k} is more than the {scored} scored chunks")
    if dist.threshold is not None:
        parts.append(f"{dist.above_threshold:,} chunks reach the threshold {dist.threshold:.3g}")
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
        dist = distribution_of(scored.scores, run.top_k, run.threshold, scored.total, scored.cap, query=run.query,
                               collection=run.collection, mode=run.mode, fusion=scored.fusion,
                               score_kind=scored.score_kind, depth=candidate_limit(run.top_k))
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
