"""The results of the Search page: notes, the hit table, scores per source, each hit with its neighbours."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rag import inspection
from rag.errors import RagError
from rag.store import Hit
from ui import render
from ui.render import md
from ui.workspace import SearchRun, Workspace


def notes(run: SearchRun) -> None:
    """Say why there are fewer hits than asked for, if there are."""
    for note in run.outcome.notes:
        (st.warning if not run.outcome.hits else st.info)(md(note))


SCORE_NAMES = {"cosine": "cosine similarity", "bm25": "BM25 keyword score", "rrf": "fused rank score (RRF)",
               "dbsf": "fused normalised score (DBSF)"}


def score_name(hits: list[Hit]) -> str:
    kind = next((h.score_kind for h in hits if getattr(h, "score_kind", None)), "cosine")
    return SCORE_NAMES.get(kind, kind)


def hits_frame(hits: list[Hit], mode: str = "dense") -> pd.DataFrame:
    rows = []
    for rank, h in enumerate(hits, 1):
        row = {"rank": rank, "score": h.score, "document": h.document_title or h.document_id,
               "heading path": render.heading_label(h.heading_path),
               "pages": render.pages_label(h.page_start, h.page_end), "chunk": h.chunk_index}
        if mode == "hybrid":  # where the chunk stood in each list the fusion merged
            row |= {"dense rank": h.dense_rank, "keyword rank": h.sparse_rank}
        rows.append(row)
    return pd.DataFrame(rows)


def hit_table(hits: list[Hit], mode: str = "dense") -> None:
    top = max((h.score or 0.0 for h in hits), default=1.0)
    st.dataframe(hits_frame(hits, mode), hide_index=True, width="stretch", column_config={
        "rank": st.column_config.NumberColumn(width=50),
        "score": st.column_config.ProgressColumn(format="%.3f", min_value=0.0, max_value=max(top, 1e-6), width=150,
                                                 help=f"{score_name(hits)} (higher is better)"),
        "dense rank": st.column_config.NumberColumn(width=90, help="rank in the embedding (dense) list"),
        "keyword rank": st.column_config.NumberColumn(width=100, help="rank in the BM25 keyword list"),
        "document": st.column_config.TextColumn(width=190),
        "heading path": st.column_config.TextColumn(width=300),
        "pages": st.column_config.TextColumn(width=60),
        "chunk": st.column_config.NumberColumn(width=60),
    })


def sources(hits: list[Hit]) -> None:
    """Draw hits per document with best and mean score, so one sees which documents dominate."""
    scores = inspection.source_scores(hits)
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


def hit_details(workspace: Workspace, hits: list[Hit]) -> None:
    """Draw one expander per hit: the whole content, and on request the chunks before and after it."""
    for rank, hit in enumerate(hits, 1):
        score = f"{hit.score:.3f}" if hit.score is not None else "–"
        pages = render.pages_label(hit.page_start, hit.page_end)
        label = f"#{rank} · {score} · {hit.document_title} · {render.heading_label(hit.heading_path)}"
        with st.expander(md(label + (f" · p. {pages}" if pages else "")), expanded=rank == 1):
            st.code(hit.content, language=None, wrap_lines=True)
            if hit.chunk_index is not None and st.toggle("Show neighbours", key=f"neighbours-{rank}-{hit.chunk_id}"):
                _neighbours(workspace, hit)


def _neighbours(workspace: Workspace, hit: Hit) -> None:
    try:
        chunks = workspace.document_chunks(hit.document_id)
    except RagError as error:
        st.error(md(str(error)))
        return
    before, after = inspection.neighbours(chunks, hit.chunk_index)
    for label, items in (("before", before), ("after", after)):
        if not items:
            st.caption(f"No chunk {label} this one.")
        for chunk in items:
            st.caption(f"Chunk #{chunk.chunk_index} ({label}) · {md(render.heading_label(chunk.heading_path))}")
            st.text(chunk.content)
