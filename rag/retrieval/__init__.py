"""Retrieval: a query becomes ranked, explained hits, and hits become the context an LLM reads.

request       SearchRequest: one search as a value (mode, fusion, top_k, threshold, documents, TOC, depths)
search        SearchMixin: dense, keyword and hybrid search (Store's search methods), its depth and modes
fusion        how hybrid search fuses its dense and keyword lists (rrf, dbsf, convex)
folding       a ranking of children folded back into their parents (parent–child collections)
records       Hit (a chunk found, its score explained), the collection's Layout, the store's summaries
equal_scores  scores that count as equal, ordered by a key that does not change between ingests
context       hits -> the LLM's context under a token budget, with its sources

search is a public namespace too (a benchmark swaps its fold of children into parents).

The store mixes SearchMixin into Store (Store.search, search_batch, search_many) and hands out the records
defined here, so this stage sits below rag.store in the import order, though after it in the data flow: it never
imports the store, and reaches the engine only through the Store it is mixed into (its client, lock and layout).
"""

from __future__ import annotations

from rag.retrieval import search
from rag.retrieval.context import (
    CHAT_MAX_TOKENS,
    DEFAULT_OVERFLOW,
    GENERATION_MAX_TOKENS,
    OVERFLOWS,
    Context,
    Dropped,
    Source,
    build_context,
)
from rag.retrieval.equal_scores import close, in_order
from rag.retrieval.folding import parents
from rag.retrieval.fusion import DEFAULT_FUSION, RRF_K, Fusion, convex, parse_fusion, rrf
from rag.retrieval.records import (
    ChildMatch,
    CollectionInfo,
    DocumentInfo,
    Hit,
    Layout,
    describe_vectors,
    hit_from_point,
    mismatch_error,
    payload_int,
    point_id,
    vector_name,
)
from rag.retrieval.request import DEFAULT_REQUEST, RERANK_DEPTH, SearchRequest
from rag.retrieval.search import CANDIDATES, FUSIONS, MODES, SearchMixin, candidate_limit, check_mode

__all__ = ["CANDIDATES", "CHAT_MAX_TOKENS", "ChildMatch", "CollectionInfo", "Context", "DEFAULT_FUSION",
           "DEFAULT_OVERFLOW", "DEFAULT_REQUEST", "DocumentInfo", "Dropped", "FUSIONS", "Fusion",
           "GENERATION_MAX_TOKENS", "Hit", "Layout", "MODES", "OVERFLOWS", "RERANK_DEPTH", "RRF_K", "SearchMixin",
           "SearchRequest", "Source", "build_context", "candidate_limit", "check_mode", "close", "convex",
           "describe_vectors", "hit_from_point", "in_order", "mismatch_error", "parents", "parse_fusion",
           "payload_int", "point_id", "rrf", "search", "vector_name"]
