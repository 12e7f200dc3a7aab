"""Why was it missed, for a sweep: each row's funnel (rag.evaluation.funnel.stages) at one k, traced after the sweep.

The command line (`rag sweep --json`, `--html`), the app's sweep job and the Evaluate page all trace a row here,
so the run kept in the runs store, the JSON, the HTML report and the page say the same numbers. A row's funnel
is traced in its own collection and mode, with the sweep's reranker on a "+rerank" row; only the questions the
row did not find in its top k are searched (and reranked) again: a found one's hit holds its stages.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from rag.embeddings import Embedder, EmbeddingCache
from rag.evaluation.funnel import CANDIDATES, RANKED, Funnel, FunnelSummary, evaluation_funnels, summarize
from rag.evaluation.sweeps.results import ConfigResult, SweepResult
from rag.rerank import DEFAULT_DEPTH, Reranker, rerank
from rag.retrieval import CHAT_MAX_TOKENS
from rag.store import Store

WHY = {  # what losing a question at each stage means, in the words of the page and the report
    "dense": "in neither list's top k, and the dense list ranked it worse (or alone searched)",
    "keyword": "in neither list's top k, and the keyword list ranked it worse (or alone searched)",
    "read_whole": "missed by the dense list, and the model cut the chunk off: it never read all of it",
    "fused": "in the top k of the dense or the keyword list, but not of the fused ranking",
    "reranked": "in the top k before reranking, pushed out by the reranker",
    "context": "in the top k, but not in the context built from it",
}


def summary_words(summary: FunnelSummary) -> str:
    """Return the misses in words, as the Evaluate page and the HTML report say them."""
    return (f"{summary.misses} of {summary.queries} answers did not reach the context built from the top "
            f"{summary.k} ({CHAT_MAX_TOKENS} tokens); each is counted at the first stage that lost its best relevant "
            f"chunk (dense and keyword lists {CANDIDATES} deep, as search ranks).")


def funnel_k(ks: Sequence[int]) -> int:
    """Return the k a funnel is traced at by default: 5 when measured (a usual top_k, as the failures), else the
    largest."""
    return 5 if 5 in ks else ks[-1]


def trace_row(row: ConfigResult, *, store: Store, embedder: Embedder | None, cache: EmbeddingCache, k: int,
              reranker: Reranker | None = None, rerank_depth: int = DEFAULT_DEPTH) -> list[Funnel]:
    """Return each question's funnel of one row at k (reranker: the sweep's, used on a "+rerank" row only)."""
    queries = [o.query for o in row.evaluation.per_query]
    embedder = embedder if row.mode.needs_vectors else None
    vectors = cache.embed([q.text for q in queries], embedder, query=True) if embedder is not None else None
    reorder = partial(rerank, reranker=reranker, depth=rerank_depth) if row.mode.rerank and reranker else None
    return evaluation_funnels(queries, row.collection, embedder, row.mode.request(k, rerank_depth), store=store,
                              vectors=vectors, outcomes=row.evaluation.per_query, reranker=reorder)


def trace_sweep(result: SweepResult, *, store: Store, embedder: Embedder | None, cache: EmbeddingCache,
                reranker: Reranker | None = None, rerank_depth: int = DEFAULT_DEPTH) -> SweepResult:
    """Return result with every row's funnel at funnel_k (row.funnels, row.funnel), for its JSON and report."""
    k = funnel_k(result.ks)
    for row in result.results:
        funnels = trace_row(row, store=store, embedder=embedder, cache=cache, k=k, reranker=reranker,
                            rerank_depth=rerank_depth)
        row.funnels, row.funnel = tuple(funnels), summarize(funnels, k)
    return result


def missed_rows(funnels: Sequence[Funnel]) -> list[dict]:
    """Return one row per question whose answer did not reach the context: the query, where it was lost, its best
    relevant chunk's rank at every ranked stage (None: not in that ranking), context, read and the chunk."""
    rows = []
    for funnel in funnels:
        if funnel.lost_at is None:
            continue
        stages = funnel.stages
        places = {stage: getattr(stages, stage) if stages else None for stage in RANKED}
        rows.append({"query": funnel.query.text, "lost_at": funnel.lost_at,
                     **{stage: place.rank if place else None for stage, place in places.items()},
                     "context": stages.context if stages else "", "read": (stages.read or "") if stages else "",
                     "chunk": f"{stages.chunk.document_title} #{stages.chunk.chunk_index}" if stages else ""})
    return rows
