"""Why was it missed? A question's relevant chunks through every stage of retrieval, and where the answer was lost.

For each question the stages are, as searched (rag.retrieval.search, CANDIDATES deep, the collection's fusion):

    dense       rank and cosine in the dense candidate list (null: not among its CANDIDATES); in a parent–child
                collection each ranked stage also names the child that placed the chunk ("child": index, span,
                score, and its rank among the children: rag.store.children)
    keyword     rank and BM25 score in the keyword candidate list (null: not among them, or no keyword vectors)
    fused       rank and fused score in the hybrid ranking (null: not in it, or the mode does not fuse)
    reranked    rank and the reranker's own score (null unless a reranker is given, or the chunk was not reranked)
    context     in the LLM context rag.retrieval.context builds from the top k at the default budget, or why not
                ("not in the top k", "budget full", "over budget", "a cut would keep no sentence", "duplicate",
                "overlaps source N", "cut")
    read_whole  whether the embedding model read the chunk in one pass (the Chunks page's rule,
                rag.embeddings.base.reading): else it was
                "windowed" (read in windows, e5) or "cut off" (its end never embedded)

The final ranking is the reranked one when a reranker is given, else the mode's (dense, keyword or fused).
A question is found when a chunk of its answer reaches the context (a chunk cut to fit counts when the kept
part still holds the answer). Otherwise `lost_at` names the first stage that lost its best relevant chunk (the
one furthest along: best final rank, then best candidate-list rank):

    context     in the final top k, but not in the context
    reranked    in the fused top k, pushed out of it by the reranker
    fused       in the top k of the dense or the keyword list, not in the fused top k (hybrid)
    read_whole  lost by the dense list (below) while the model cut the chunk off: it never read all of it
    dense / keyword  in neither list's top k: the list of the mode (hybrid: the one that ranked it worse, absent
                counting worst; dense when both lack it)

Every question that is not found thus has exactly one lost_at, so the counts per stage add up to the misses.
A reranker is any callable (query text, hits best first) -> the reranked order, as (chunk_id, score) pairs or
as Hits carrying the reranker's score; it sees the top `rerank_depth` fused (or the mode's) candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from rag.chunking import headers
from rag.embeddings import CUT_OFF, Embedder, reading
from rag.evaluation.funnel.rankings import Placed, Rankings, Reranker, relevant_chunks, search_rankings
from rag.evaluation.metrics import QueryOutcome, SearchMode, covered_unit
from rag.evaluation.querysets import Query
from rag.retrieval import CHAT_MAX_TOKENS, Hit, SearchRequest, build_context
from rag.store import Store

STAGES = ("dense", "keyword", "fused", "reranked", "context", "read_whole")
RANKED = ("dense", "keyword", "fused", "reranked")
NOT_IN_TOP_K = "not in the top k"


@dataclass(frozen=True)
class ChunkStages:
    """One chunk's place at every stage."""

    chunk: Hit
    dense: Placed | None = None
    keyword: Placed | None = None
    fused: Placed | None = None
    reranked: Placed | None = None
    context: str = NOT_IN_TOP_K  # "included", "cut", or why it is not in the context
    read: str | None = None  # "whole", "windowed", "cut off"; None: no embedder to tell

    @property
    def in_context(self) -> bool:
        return self.context in ("included", "cut")

    def best_list_rank(self) -> int:
        return min((p.rank for p in (self.dense, self.keyword) if p is not None), default=10**9)

    def to_json(self) -> dict:
        """Return the stages as JSON: each ranked stage {"rank", "score"} or null, context and read_whole."""
        hit = self.chunk
        return {"chunk_id": hit.chunk_id, "document_title": hit.document_title, "chunk_index": hit.chunk_index,
                **{stage: None if getattr(self, stage) is None else getattr(self, stage).to_json()
                   for stage in RANKED},
                "context": {"included": self.in_context, "reason": None if self.context == "included" else
                            self.context},
                "read_whole": None if self.read is None else self.read == "whole", "read": self.read}


@dataclass(frozen=True)
class Funnel:
    """One question: its relevant chunks' stages, the best one's, and where its answer was lost."""

    query: Query
    k: int
    relevant: tuple[ChunkStages, ...]  # best first
    lost_at: str | None

    @property
    def stages(self) -> ChunkStages | None:
        return self.relevant[0] if self.relevant else None

    def to_json(self) -> dict:
        """Return the fields a query outcome of `rag eval --json` gains: "stages" and "lost_at"."""
        stages = self.stages.to_json() if self.stages else {"chunk_id": None, **dict.fromkeys(RANKED),
                                                               "context": None, "read_whole": None, "read": None}
        return {"stages": stages, "lost_at": self.lost_at}


@dataclass(frozen=True)
class FunnelSummary:
    k: int
    queries: int
    lost_at: dict[str, int] = field(default_factory=dict)  # every stage, 0 where none was lost

    @property
    def misses(self) -> int:
        return sum(self.lost_at.values())

    def to_json(self) -> dict:
        return {"k": self.k, "queries": self.queries, "misses": self.misses, "lost_at": dict(self.lost_at)}


def summarize(funnels: Sequence[Funnel], k: int) -> FunnelSummary:
    """Return the misses per stage (they add up to the questions whose answer did not reach the context)."""
    counts = dict.fromkeys(STAGES, 0)
    for funnel in funnels:
        if funnel.lost_at is not None:
            counts[funnel.lost_at] += 1
    return FunnelSummary(k, len(funnels), counts)


# ---- the funnel of one question -------------------------------------------------------------------------


def chunk_stages(chunk: Hit, rankings: Rankings, context_status: dict[str, str], read: str | None = None
                 ) -> ChunkStages:
    """Return one chunk's place at every stage (context_status: chunk id -> status, from context_of; read: as
    read_of tells it)."""
    places = {stage: rankings.placed(stage, chunk.chunk_id) for stage in RANKED}
    return ChunkStages(chunk, **places, context=context_status.get(chunk.chunk_id, NOT_IN_TOP_K), read=read)


def read_of(chunk: Hit, embedder: Embedder | None) -> str | None:
    """Return "whole", "windowed" or "cut off": the Chunks page's flag for a chunk over the model's input limit."""
    limit = getattr(embedder, "max_input_tokens", None)
    if embedder is None or limit is None or not hasattr(embedder, "count_tokens"):
        return None
    return reading(embedder, embedder.count_tokens(chunk.content))


def context_of(hits: Sequence[Hit], max_tokens: int = CHAT_MAX_TOKENS) -> tuple[dict[str, str], list[Hit]]:
    """Return (chunk id -> "included" / "cut" / why it was left out, the pieces in the context) of the context
    rag.retrieval.context builds from hits at the default budget."""
    context = build_context(list(hits), max_tokens=max_tokens)
    status = {d.hit.chunk_id: d.reason for d in context.dropped}
    status |= {piece.chunk_id: "included" for piece in context.included}
    status |= {d.hit.chunk_id: "cut" for d in context.truncated}
    return status, context.included


def funnel_of(query: Query, rankings: Rankings, k: int, read: Callable[[Hit], str | None],
              relevant: Sequence[Hit] = ()) -> Funnel:
    """Return one question's funnel; relevant: its relevant chunks found outside the rankings (may be empty).

    read(chunk) tells whether the model read a chunk whole (read_of); it is asked for the best chunk only.
    """
    status, pieces = context_of(rankings.final[:k])
    seen: dict[str, Hit] = {}
    for hit in (*rankings.final, *rankings.fused, *rankings.dense, *rankings.keyword, *relevant):
        if hit.chunk_id not in seen and covered_unit(query, hit) is not None:
            seen[hit.chunk_id] = hit
    stages = sorted((chunk_stages(hit, rankings, status) for hit in seen.values()),
                    key=lambda s: _progress(s, rankings))
    if stages:
        stages[0] = replace(stages[0], read=read(stages[0].chunk))
    found = any(covered_unit(query, piece) is not None for piece in pieces)
    return Funnel(query, k, tuple(stages), None if found else lost_at(stages[0] if stages else None, rankings, k))


def _progress(stages: ChunkStages, rankings: Rankings) -> tuple:
    final = rankings.placed("reranked" if rankings.reranked is not None else _final_stage(rankings.mode),
                            stages.chunk.chunk_id)
    fused = stages.fused.rank if stages.fused else 10**9
    return (final is None, final.rank if final else 0, fused, stages.best_list_rank(), stages.chunk.chunk_index or 0)


def _final_stage(mode: str) -> str:
    return {"dense": "dense", "sparse": "keyword"}.get(mode, "fused")


def lost_at(stages: ChunkStages | None, rankings: Rankings, k: int) -> str:
    """Return the first stage that lost a question's best relevant chunk (see the module docstring)."""
    def within(place: Placed | None) -> bool:
        return place is not None and place.rank <= k

    if stages is None:
        return "keyword" if rankings.mode == "sparse" else "dense"
    final = stages.reranked if rankings.reranked is not None else getattr(stages, _final_stage(rankings.mode))
    if within(final):
        return "context"
    before = getattr(stages, _final_stage(rankings.mode))
    if rankings.reranked is not None and within(before):
        return "reranked"
    if rankings.mode == "hybrid" and (within(stages.dense) or within(stages.keyword)):
        return "fused"
    if rankings.mode == "sparse":
        lost = "keyword"
    elif rankings.mode == "dense":
        lost = "dense"
    else:
        dense, keyword = (p.rank if p else 10**9 for p in (stages.dense, stages.keyword))
        lost = "keyword" if keyword > dense else "dense"
    return "read_whole" if lost == "dense" and stages.read == CUT_OFF else lost


# ---- an evaluation's funnels, one chunk's explanation ----------------------------------------------------


def evaluation_funnels(queries: Sequence[Query], collection: str, embedder: Embedder | None, request: SearchRequest,
                       *, store: Store, vectors: np.ndarray | None, reranker: Reranker | None = None,
                       outcomes: Sequence[QueryOutcome] | None = None) -> list[Funnel]:
    """Return the funnel of each resolved query (as rag.evaluation.sweeps.sweep.resolve_in_collection gives them) at
    the request's top_k k, in its mode (reranker: reorders its first rerank_depth hits).

    vectors: the queries' embeddings (None for sparse). A question none of whose relevant chunks is in any
    ranking is still explained by the chunks of its answer (read from the collection), when its label has one.
    outcomes: the evaluation of these queries in mode (same order): a question it found in the top k needs no
    search, its hit carries its dense and keyword ranks (and, reranked by rag.rerank.rerank, its place before the
    reranker); only the others are searched.
    """
    read, k, mode = _reader(embedder), request.top_k, SearchMode(request.searched_mode, request.searched_fusion)
    known = {i: o for i, o in enumerate(outcomes or ()) if o.rank is not None and o.rank <= k
             and (reranker is None or _reranked(o.hits[o.rank - 1]))}
    todo = [i for i in range(len(queries)) if i not in known]
    rows = None if vectors is None else np.asarray(vectors)[todo]
    searched = search_rankings(store, collection, [queries[i].text for i in todo], rows, embedder, mode, reranker,
                               request.rerank_depth) if todo else []
    rankings = dict(zip(todo, searched, strict=True))
    funnels = []
    for i, query in enumerate(queries):
        if i in known:
            funnels.append(_found_funnel(query, known[i], mode, k, read))
            continue
        ranking = rankings[i]
        listed = (*ranking.final, *ranking.fused, *ranking.dense, *ranking.keyword)
        labelled = query.answer is not None or query.answer_end is not None
        missing = labelled and not any(covered_unit(query, hit) is not None for hit in listed)
        funnels.append(funnel_of(query, ranking, k, read, relevant_chunks(store, collection, query) if missing else ()))
    return funnels


def _reader(embedder: Embedder | None) -> Callable[[Hit], str | None]:
    """Return read_of for embedder, remembering each chunk's: a chunk many questions ask for is counted once."""
    reads: dict[str, str | None] = {}

    def read(chunk: Hit) -> str | None:
        if chunk.chunk_id not in reads:
            reads[chunk.chunk_id] = read_of(chunk, embedder)
        return reads[chunk.chunk_id]

    return read


def _found_funnel(query: Query, outcome: QueryOutcome, mode: SearchMode, k: int, read: Callable[[Hit], str | None]
                  ) -> Funnel:
    """Return the funnel of a question the evaluation found in its top k, from its hits (what funnel_of gives)."""
    status, pieces = context_of(outcome.hits[:k])
    hit = outcome.hits[outcome.rank - 1]

    def placed(rank: int | None, score: float | None, final: bool) -> Placed | None:  # final: the mode's ranking
        return None if rank is None or score is None else Placed(rank, float(score), hit.child if final else None)

    reranked = _reranked(hit)  # a reranked hit keeps its place before the reranker (the mode's ranking)
    before = (placed(hit.retrieved_rank, hit.retrieved_score, True) if reranked
              else placed(outcome.rank, hit.score, True))
    stages = ChunkStages(hit, placed(hit.dense_rank, hit.dense_score, mode.mode == "dense"),
                         placed(hit.sparse_rank, hit.sparse_score, mode.mode == "sparse"),
                         before if mode.mode == "hybrid" else None,
                         placed(outcome.rank, hit.score, False) if reranked else None,
                         status.get(hit.chunk_id, NOT_IN_TOP_K), read(hit))
    found = any(covered_unit(query, piece) is not None for piece in pieces)
    return Funnel(query, k, (stages,), None if found else "context")


def _reranked(hit: Hit) -> bool:
    """Return whether hit was reordered by a reranker and knows its place before (rag.rerank.rerank's hits)."""
    return hit.score_kind == "rerank" and hit.score is not None and hit.retrieved_rank is not None


@dataclass(frozen=True)
class Explanation:
    """`rag search ... --explain CHUNK_ID`: one chunk's stages for a query, and where it was lost."""

    query: str
    k: int
    mode: str
    stages: ChunkStages
    lost_at: str | None
    reranked: bool = False  # a reranker was given
    listed: dict[str, int] = field(default_factory=dict)  # how many chunks the dense and keyword lists held
    matched: tuple[str, ...] | None = None  # the query words the chunk's keyword vector holds; None: no keywords

    def to_json(self) -> dict:
        return {"query": self.query, "k": self.k, "mode": self.mode, "stages": self.stages.to_json(),
                "lost_at": self.lost_at}


def query_rankings(text: str, collection: str, request: SearchRequest, *, store: Store, embedder: Embedder | None,
                   reranker: Reranker | None = None, vector: np.ndarray | None = None) -> Rankings:
    """Return the rankings explain_chunk reads for the query text: every mode's list the collection has (the
    request's fusion is the fused list's also when its mode does not fuse; default DEFAULT_FUSION), CANDIDATES
    deep; reranker: reorders the mode's first rerank_depth."""
    if embedder is not None and vector is None:
        vector = embedder.embed_query([text])[0]
    vectors = None if vector is None else np.asarray(vector, dtype=np.float32).reshape(1, -1)
    mode = SearchMode(request.searched_mode, request.searched_fusion)
    return search_rankings(store, collection, [text], vectors, embedder, mode, reranker, request.rerank_depth,
                           request.searched_fusion)[0]


def explain_chunk(text: str, chunk: Hit, collection: str, request: SearchRequest, *, store: Store,
                  embedder: Embedder | None, reranker: Reranker | None = None, vector: np.ndarray | None = None,
                  rankings: Rankings | None = None) -> Explanation:
    """Return one chunk's stages for the query text at the request's top_k k, its ranks in every mode the
    collection has (see query_rankings); lost_at by the request's mode.

    rankings: query_rankings() of the same arguments, kept from before: another chunk or another k is then
    explained without searching again (the rankings do not depend on either)."""
    k, mode = request.top_k, SearchMode(request.searched_mode, request.searched_fusion)
    if rankings is None:
        rankings = query_rankings(text, collection, request, store=store, embedder=embedder, reranker=reranker,
                                  vector=vector)
    status, _ = context_of(rankings.final[:k])
    stages = chunk_stages(chunk, rankings, status, read_of(chunk, embedder))
    matched = None
    if store.has_keywords(collection):  # the words the keyword search can match it by (rag.reports.keywords)
        indexed = headers.indexed_text(chunk.content, chunk.document_title, chunk.heading_path,
                                       store.chunk_headers(collection))
        language = chunk.payload.get("language")
        matched = tuple(store.analyzer(collection).matching_words(text, indexed, language if isinstance(
            language, str) else None))
    return Explanation(text, k, mode.label, stages, None if stages.in_context else lost_at(stages, rankings, k),
                       rankings.reranked is not None, {"dense": len(rankings.dense), "keyword": len(rankings.keyword)},
                       matched)
