"""Why was it missed? The funnel on the Evaluate page (misses by stage, each missed question's stages side by side)
and "why not this one?" on the Search page (one chunk's ranks across modes), from rag.evaluation.funnel.stages."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rag.embeddings import EmbeddingCache, default_cache_dir
from rag.evaluation import (
    RANKED,
    WHY,
    ChunkStages,
    ConfigResult,
    Explanation,
    Funnel,
    Rankings,
    SweepResult,
    absent_note,
    explain_chunk,
    funnel_k,
    missed_rows,
    query_rankings,
    summarize,
    summary_words,
    trace_row,
    verdict,
)
from rag.rerank import DEFAULT_DEPTH
from rag.retrieval import SearchRequest
from rag.store import CANDIDATES
from ui import charts, errors, resources, state
from ui.parts import rerank
from ui.parts.chunk_text import repeated_header
from ui.render import EMPTY_CELL, md
from ui.workspace import SearchRun, Workspace

FUNNELS = "evaluate_funnels"  # (key, funnels) of the row and k last traced in this session
WHY_RANKINGS = "why_not_rankings"  # (key, rankings) of the query last explained by "why not this one?"


def missed_frame(funnels: list[Funnel]) -> pd.DataFrame:
    """Return one row per question whose answer did not reach the context: its best relevant chunk's stages."""
    rows = [{"lost at" if name == "lost_at" else name: value for name, value in row.items()}
            for row in missed_rows(funnels)]
    return pd.DataFrame(rows, columns=["query", "lost at", *RANKED, "context", "read", "chunk"])


def _trace(ws: Workspace, result: SweepResult, row: ConfigResult, k: int) -> list[Funnel]:
    """Return the funnels of row at k: as the sweep traced them (its JSON and report say the same), else traced
    once per row and k in this session, the same way (rag.evaluation.sweeps.sweep_funnel)."""
    if row.funnels is not None and row.funnel is not None and row.funnel.k == k:
        return list(row.funnels)
    key = (row.collection, row.mode.label, k, tuple(o.query.text for o in row.evaluation.per_query))
    saved = st.session_state.get(FUNNELS)
    if saved and saved[0] == key:
        return saved[1]
    embedder = ws.embedder_for(row.collection) if row.mode.needs_vectors else None
    spec, depth = (result.rerank["spec"], result.rerank["depth"]) if result.rerank else ("", DEFAULT_DEPTH)
    funnels = trace_row(row, store=ws.store, embedder=embedder, cache=EmbeddingCache(default_cache_dir(ws.store)),
                        k=k, reranker=rerank.reranker(spec) if row.mode.rerank else None, rerank_depth=depth)
    st.session_state[FUNNELS] = (key, funnels)
    return funnels


def evaluate_section(ws: Workspace, result: SweepResult) -> None:
    """Draw the misses per stage of one row at one k, and the missed questions' stages side by side."""
    left, right = st.columns([2, 1])
    rows = {r.label: r for r in result.results}
    label = left.selectbox("Configuration and mode", list(rows), index=list(rows).index(result.best().label),
                           key=state.result_key("evaluate_funnel_config", result))
    k = right.selectbox("Top k given to the context", result.ks, index=result.ks.index(funnel_k(result.ks)),
                        key=state.result_key("evaluate_funnel_k", result))
    with errors.reported() as report, st.spinner("Tracing each question through the stages…"):
        funnels = _trace(ws, result, rows[label], k)
    if report.failed:
        return
    summary = summarize(funnels, k)
    st.vega_lite_chart(charts.funnel_chart(summary), width="stretch")
    st.caption(f"{summary_words(summary)} The same numbers as `rag sweep --json`'s \"funnel\" of the row (and "
               "`rag eval --json`'s on this collection and mode).")
    frame = missed_frame(funnels)
    if frame.empty:
        return
    config = {stage: st.column_config.NumberColumn(format="%d", help=f"rank in the {stage} ranking; empty: not "
                                                    "in it") for stage in RANKED}
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config, placeholder=EMPTY_CELL,
                 height=min(38 + 35 * len(frame), 390))
    st.caption(" · ".join(f"{stage}: {why}" for stage, why in WHY.items()))


def stage_frame(stages: ChunkStages, mode: str, reranked: bool = False,
                explained: Explanation | None = None) -> pd.DataFrame:
    """Return the stages of one chunk as rows: stage, rank, score (on that ranking's own scale), note (why a stage
    does not hold it: rag.evaluation.absent_note when explained is given)."""
    kinds = {"dense": "cosine", "keyword": "bm25", "fused": mode, "reranked": "the reranker's own"}
    rows = []
    for stage in RANKED:
        place = getattr(stages, stage)
        note = f"not among the {CANDIDATES} candidates" if stage in ("dense", "keyword") else "not in this ranking"
        note = "no reranker" if stage == "reranked" and not reranked else note
        note = absent_note(explained, stage) if explained is not None else note
        rows.append({"stage": stage, "rank": place.rank if place else None, "score": place.score if place else None,
                     "note": ", ".join(filter(None, (kinds[stage], place.child_words))) if place else note})
    read = "unknown" if stages.read is None else "yes" if stages.read == "whole" else f"no: {stages.read}"
    rows += [{"stage": "context", "rank": None, "score": None, "note": stages.context},
             {"stage": "read whole", "rank": None, "score": None, "note": read}]
    return pd.DataFrame(rows, columns=["stage", "rank", "score", "note"])


def _rankings(ws: Workspace, run: SearchRun, embedder, request: SearchRequest) -> Rankings:
    """Return the rankings of run's query across modes, searched once per query, mode and store state in this
    session: another chunk or a top_k step while "why not this one?" is open searches nothing again."""
    key = (run.location, resources.version(), embedder.model_id, run.query, run.collection, run.mode, run.fusion)
    saved = st.session_state.get(WHY_RANKINGS)
    if saved and saved[0] == key:
        return saved[1]
    vector = resources.query_vector(embedder, (embedder.model_id, embedder.query_prompt), run.query)
    rankings = query_rankings(run.query, run.collection, request, store=ws.store, embedder=embedder, vector=vector)
    st.session_state[WHY_RANKINGS] = (key, rankings)
    return rankings


def why_not(ws: Workspace, run: SearchRun) -> None:
    """Draw "why not this one?": a chunk chosen by document and number, its ranks across modes for the query."""
    documents = {d.document_id: d.title for d in ws.documents()}
    if not documents:
        return
    left, right = st.columns([2, 1])
    document = left.selectbox("Document", list(documents), format_func=documents.get, key="why_document")
    chunks = ws.document_chunks(document)
    if not chunks:
        return
    number = right.number_input("Chunk number", 0, len(chunks) - 1, 0, key="why_chunk",
                                help="The chunk's place in its document, from 0 (the Chunks page shows them).")
    chunk = chunks[int(number)]
    repeated_header(chunk, chunks)
    st.code(chunk.content[:600] + (" …" if len(chunk.content) > 600 else ""), language=None, wrap_lines=True)
    with errors.reported() as report:
        embedder = ws.embedder()  # the dense ranks, in every mode
        request = SearchRequest(mode=run.mode, fusion=run.fusion, top_k=run.top_k)
        explained = explain_chunk(run.query, chunk, run.collection, request, store=ws.store, embedder=embedder,
                                  rankings=_rankings(ws, run, embedder, request))
    if report.failed:
        return
    st.dataframe(stage_frame(explained.stages, explained.mode, explained.reranked, explained), hide_index=True,
                 width="stretch",
                 placeholder=EMPTY_CELL,
                 column_config={"rank": st.column_config.NumberColumn(format="%d"),
                                "score": st.column_config.NumberColumn(format="%.3f")})
    st.caption(md(verdict(explained)))
    if run.document_ids or run.include_toc:
        st.caption("Ranked over the whole collection without tables of contents (as `rag search --explain`), not "
                   "with this page's document filter or tables of contents.")
