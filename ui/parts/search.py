"""The pieces of the Search page: the search, notes, the hit table, scores per source, each hit with its neighbours,
and all of them drawn in order (results); the score distribution is ui.parts.score_distribution."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from rag import pipeline
from rag import reports as hit_report
from rag.reports import SCORE_SHORT, explanation, keywords, rrf_sum, score_kind, score_name
from rag.retrieval import SearchRequest
from rag.store import CANDIDATES, Analyzer, Hit, candidate_limit
from ui import errors, nav, render, resources, state
from ui.parts import chunk_text, funnel, page_view, score_distribution
from ui.parts import judge as judge_part
from ui.parts import rerank as rerank_part
from ui.render import md
from ui.workspace import SearchRun, Workspace

EMPTY_CELL = "—"


def run_search(ws: Workspace, query: str, request: SearchRequest, rerank: tuple[str, int] = ("", 0),
               last: SearchRun | None = None) -> SearchRun | None:
    """Return the search as the page shows it, or None after its error.

    The ranking is searched CANDIDATES deep (the slider's maximum) and cut to top_k: fused scores do not depend
    on top_k up to that depth, so when only top_k or the threshold changed since last, last's ranking is cut
    again without a search. The query is embedded once per text (ui.resources.query_vector). rerank: (spec,
    depth); with a spec, the first `depth` of the ranking are reordered by that reranker (ui.parts.rerank).
    """
    started, version, top_k = time.perf_counter(), resources.version(), request.top_k
    cut = last is not None and top_k <= len(last.ranking) and last.same_ranking(query, request, version, rerank)
    if cut:
        ranking, model_id, seconds = last.ranking, last.model_id, last.seconds
    else:
        with errors.reported() as report:
            reranker = rerank_part.reranker(rerank[0])
            embedder = ws.embedder()
            with st.spinner("Searching… (the first search loads the model)"):
                vector = None
                if request.mode != "sparse" and query.strip():
                    vector = resources.query_vector(embedder, (embedder.model_id, embedder.query_prompt), query)
                deep = request.replace(top_k=max(top_k, CANDIDATES), score_threshold=None)
                ranking = tuple(pipeline.search(query, ws.collection, deep, store=ws.store, embedder=embedder,
                                                query_vector=vector, reranker=reranker))
        if report.failed:
            return None
        model_id, seconds = embedder.model_id, time.perf_counter() - started
    hits = list(ranking[:top_k])
    outcome = hit_report.apply_threshold(hits, top_k, request.score_threshold)
    return SearchRun(query, ws.collection, ws.location, request, hits, outcome, model_id, seconds, ranking, version,
                     rerank, cut=cut)


def query_elsewhere(ws: Workspace) -> str | None:
    """Return the query last searched in another collection of this store (the collection was switched), else None:
    the page searches it again in the collection now chosen instead of dropping the results."""
    run = state.get(state.SEARCH)
    if run is None or run.location != ws.location or run.collection == ws.collection or not run.query.strip():
        return None
    return run.query


JUDGE_OPEN = "judge_hits"  # the key of the judging expander: open or closed for the session


def notes(run: SearchRun) -> None:
    """Say why there are fewer hits than asked for, if there are."""
    for note in run.outcome.notes:
        (st.warning if not run.outcome.hits else st.info)(md(note))


def results(ws: Workspace, run: SearchRun) -> None:
    """Draw one search: its line, the hit table, judging, scores per source, the hits, the distribution, why not.

    Each part has its own container, so a part that grows with top_k (a judging row, a hit) never moves the parts
    after it: the browser updates an element in its place (a chart's data), where a moved one is drawn anew.
    """
    how = {"dense": md(run.model_id), "sparse": "keyword search (BM25)", "hybrid": f"hybrid ({run.fusion})"}[run.mode]
    if run.rerank[0]:
        how += f" · reranked by {md(run.rerank[0])}, first {run.rerank[1]} candidates"
    seconds = f"{run.seconds:.2f} s" if run.seconds >= 0.005 else "under 0.01 s"  # never a "0.00 s"
    took = f"cut from the search of {seconds}" if run.cut else f"in {seconds}"
    st.caption(f"{render.counted(len(run.outcome.hits), 'hit')} for “{md(run.query)}” {took} · {how}"
               + (f" · threshold {run.threshold:.2f}" if run.threshold is not None else ""))
    table, judging, distribution_slot, per_source, details = (st.container() for _ in range(5))
    with table:
        notes(run)
    analyzer = ws.store.analyzer(run.collection) if ws.info and ws.info.sparse else None
    if run.outcome.hits:
        with table:
            hit_table(run.outcome.hits, run.mode, run.query, run.top_k, analyzer)
        with judging:  # rows of controls for every hit: drawn only while open, so a top_k step stays light
            judge = st.expander("Judge these hits: grade each one for this question", key=JUDGE_OPEN,
                                on_change="rerun", icon=":material/grading:")
            with judge:
                if judge.open:
                    judge_part.search_panel(ws, run)
        with per_source:
            st.subheader("Scores per source")
            sources(run.outcome.hits)
            st.page_link(nav.CONTEXT.path, label="Preview the LLM context for these hits", icon=":material/article:")
        with details:
            st.subheader("Hits")
            hit_details(ws, run.outcome.hits, run.query, run.top_k, analyzer)
    # the distribution's place comes before the hits' but is filled last: its search over every chunk takes a while,
    # and the hit details must not wait for it
    with distribution_slot:
        scores = st.expander("Score distribution over the whole collection", expanded=True,
                             key="score_distribution", on_change="rerun", icon=":material/bar_chart:")
    why = st.expander("Why not this one? A chunk's ranks across modes", key="why_not", on_change="rerun",
                      icon=":material/help:")
    with why:
        if why.open:  # one more search: only while the expander is open
            funnel.why_not(ws, run)
    with scores:
        if scores.open and run.rerank[0]:
            st.caption("The search's own scores, before reranking: the reranker reads only the first candidates.")
        if scores.open:  # one more search over every chunk: only while the expander is open
            score_distribution.distribution(ws, run, None if run.mode == "sparse" else ws.embedder())


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
        # a closed hit's body is drawn when it is opened (a rerun of the results fragment alone): a top_k step
        # then sends each closed hit as its label only, a quarter of the elements the browser has to redraw
        box = st.expander(md(label + (f" · p. {pages}" if pages else "")), expanded=rank == 1,
                          key=f"hit-{rank}-{hit.chunk_id}", on_change="rerun")
        if not box.open:
            continue
        with box:
            st.caption(md(explanation(hit, query, depth, analyzer)))
            chunks = chunk_text.document_chunks(workspace, hit)  # read only for a chunk that repeats a table header
            if hit.child is not None and hit.child.index is not None:  # its matching child marked (escaped)
                chunk_text.repeated_header(hit, chunks)
                st.html(render.child_marked_html(hit.content, hit.child.start, hit.child.end))
            else:
                chunk_text.show(hit, chunks)
            page_view.hit(workspace.store, hit, f"hit-{rank}-{hit.chunk_id}")
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
            chunk_text.show(chunk, chunks, plain=True)
