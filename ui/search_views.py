"""The results of the Search page: notes, the hit table, scores per source, each hit with its neighbours."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rag.errors import RagError
from rag.reports import hits as hit_report
from rag.store.keywords import Analyzer
from rag.store.records import Hit
from rag.store.search import candidate_limit
from ui import render
from ui.render import md
from ui.workspace import SearchRun, Workspace

EMPTY_CELL = "—"
PUNCTUATION = "\"'.,;:!?()[]{}«»„“”‚‘’"


def notes(run: SearchRun) -> None:
    """Say why there are fewer hits than asked for, if there are."""
    for note in run.outcome.notes:
        (st.warning if not run.outcome.hits else st.info)(md(note))


SCORE_NAMES = {"cosine": "cosine similarity", "bm25": "BM25 keyword score", "rrf": "fused rank score (RRF)",
               "dbsf": "fused normalised score (DBSF)", "convex": "weighted sum of normalised scores (convex)"}
SCORE_SHORT = {"cosine": "cosine", "bm25": "BM25", "rrf": "RRF", "dbsf": "DBSF", "convex": "convex"}


def score_kind(hits: list[Hit]) -> str:
    return next((h.score_kind for h in hits if getattr(h, "score_kind", None)), "cosine")


def score_name(hits: list[Hit]) -> str:
    kind = score_kind(hits)
    return SCORE_NAMES.get(kind, kind)


def keywords(query: str, hit: Hit, analyzer: Analyzer | None) -> str:
    """Return the query's words (as typed) whose keyword terms the chunk contains, comma-separated ("" if none)."""
    return ", ".join(analyzer.matching_words(query, hit.content)) if analyzer and query else ""


def rrf_sum(hit: Hit) -> str:
    """Return how RRF added up this hit's score, e.g. "1/2 + 1/4" (Qdrant: 1 / (rank + 1) per list)."""
    parts = [f"1/{rank + 1}" for rank in (hit.dense_rank, hit.sparse_rank) if rank is not None]
    return " + ".join(parts)


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
        row |= {"query words in chunk": keywords(query, h, analyzer), "document": h.document_title or h.document_id,
                "heading path": render.heading_label(h.heading_path),
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
        "query words in chunk": st.column_config.TextColumn("query words", width=130, help=(
            "the query's words whose keyword terms occur in the chunk (stop words left out)")),
        "document": st.column_config.TextColumn(width=150),
        "heading path": st.column_config.TextColumn(width=230),
        "pages": st.column_config.TextColumn(width=50),
        "chunk": st.column_config.NumberColumn(width=50),
    })


def explanation(hit: Hit, query: str, depth: int, analyzer: Analyzer | None = None) -> str:
    """Return one line: for hybrid where the hit stood in each list and how that fused; the query words it holds."""
    parts = []
    if hit.score_kind in ("rrf", "dbsf", "convex"):
        parts.append(f"dense list: cosine {hit.dense_score:.3f}, rank {hit.dense_rank}" if hit.dense_score is not None
                     else f"dense list: not in its top {depth}")
        parts.append(f"keyword list: BM25 {hit.sparse_score:.2f}, rank {hit.sparse_rank}"
                     if hit.sparse_score is not None else f"keyword list: not in its top {depth}")
        how = {"rrf": f"{rrf_sum(hit)} = ", "convex": "w × dense + (1 − w) × keyword, each normalised = "}.get(
            hit.score_kind, "both normalised and added = ")
        parts.append(f"fused ({SCORE_SHORT[hit.score_kind]}): {how}{hit.score:.3f}")
    words = keywords(query, hit, analyzer)
    parts.append(f"query words in it: {words}" if words else "no query word in it")
    return " · ".join(parts)


def sources(hits: list[Hit]) -> None:
    """Draw hits per document with best and mean score, so one sees which documents dominate."""
    scores = hit_report.source_scores(hits)
    frame = pd.DataFrame([
        {"document": s.title, "hits": s.hits, "best": round(s.best, 4), "mean": round(s.mean, 4),
         "ranks": ", ".join(map(str, s.ranks))}
        for s in scores
    ])
    st.altair_chart(render.source_chart(frame, score_name(hits)), width="content")
    if len(scores) == 1:
        st.caption(f"All {len(hits)} hits come from one document.")
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
            st.code(hit.content, language=None, wrap_lines=True)
            if hit.chunk_index is not None and st.toggle("Show neighbours", key=f"neighbours-{rank}-{hit.chunk_id}"):
                _neighbours(workspace, hit)


def _neighbours(workspace: Workspace, hit: Hit) -> None:
    try:
        chunks = workspace.document_chunks(hit.document_id)
    except RagError as error:
        st.error(md(str(error)))
        return
    before, after = hit_report.neighbours(chunks, hit.chunk_index)
    for label, items in (("before", before), ("after", after)):
        if not items:
            st.caption(f"No chunk {label} this one.")
        for chunk in items:
            st.caption(f"Chunk #{chunk.chunk_index} ({label}) · {md(render.heading_label(chunk.heading_path))}")
            st.text(chunk.content)
