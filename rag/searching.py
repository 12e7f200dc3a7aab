"""Querying: a query -> hits (search, in the request's mode, reranked when asked) -> the context an LLM reads
(retrieve); the embedder a collection is searched with (embedder_for). rag.pipeline re-exports them beside ingest."""

from __future__ import annotations

import numpy as np

from rag.embeddings import Embedder, get_embedder
from rag.errors import EmbedderMismatchError, QueryError
from rag.rerank import Reranker, check_depth, rerank
from rag.retrieval import (
    CHAT_MAX_TOKENS,
    DEFAULT_FUSION,
    DEFAULT_OVERFLOW,
    DEFAULT_REQUEST,
    Context,
    Hit,
    SearchRequest,
    build_context,
)
from rag.settings import DEFAULT_COLLECTION
from rag.store import Store, open_store


def embedder_for(store: Store, collection: str, spec: str | None = None, **prompts: str | None) -> Embedder:
    """Return the embedder to use with collection: spec if given, else the one that made it, with its prompts.

    A new collection gets spec or the default embedder; a collection RAG Lab did not make needs a spec.
    prompts (query_prompt, document_prompt; None = the model's own) apply to a new collection; with the
    model that made an existing collection, the prompts it recorded are used ("" for older collections).
    """
    given = {k: v for k, v in prompts.items() if v is not None}
    if not store.has_collection(collection):
        return get_embedder(spec, **given)
    model_id, dimension = store.collection_embedder(collection)
    if model_id is None:
        if spec:
            return get_embedder(spec, **given)
        raise EmbedderMismatchError(
            f"Collection '{collection}' was not made by RAG Lab (one vector of {dimension} dimensions, "
            f"no embedder recorded). Choose an embedder that gives {dimension} dimensions, e.g. "
            f"{'openai:text-embedding-3-small' if dimension == 1536 else 'ollama:<model>'}."
        )
    if spec and get_embedder(spec).model_id != model_id:
        return get_embedder(spec, **given)  # another model: the store refuses it with the reason
    meta = store.collection_meta(collection)
    recorded = {"query_prompt": meta.get("query_prompt", ""), "document_prompt": meta.get("document_prompt", "")}
    return get_embedder(spec or model_id, **(recorded | given))


def search(
    query: str,
    collection: str = DEFAULT_COLLECTION,
    request: SearchRequest = DEFAULT_REQUEST,
    *,
    store: Store | None = None,
    embedder: Embedder | None = None,
    query_vector: np.ndarray | None = None,
    reranker: Reranker | None = None,
) -> list[Hit]:
    """Return the request's top_k chunks of collection for query, best first, each hit's scores explained.

    mode "dense" ranks by cosine similarity of the embeddings, "sparse" by BM25 keyword score (no
    embedding needed), "hybrid" fuses both lists (fusion: a spec of rag.retrieval.fusion). A request's mode or
    fusion None means the collection's default: its saved mode (rag.runs.apply), else hybrid when it has keyword
    vectors, else dense; hybrid with its saved fusion, else DEFAULT_FUSION (search_defaults). score_threshold
    applies to the mode's own score. store: default open_store(). query_vector: the query's embedding when the
    caller has it (as embedder.embed_query gives it), so changing top_k or the mode embeds nothing again.
    reranker: the first request.rerank_depth hits (the threshold applied to the mode's score) are reordered by it
    and the first top_k returned, scored on the reranker's scale (rag.rerank.rerank).
    """
    if reranker is not None:
        wide = request.replace(top_k=max(request.top_k, check_depth(request.rerank_depth)))
        found = search(query, collection, wide, store=store, embedder=embedder, query_vector=query_vector)
        return rerank(query, found, reranker, request.rerank_depth)[:request.top_k]
    store = store if store is not None else open_store()
    request = search_defaults(store, collection, request)
    if not query.strip():
        raise QueryError("The query is empty. Type a question or some words to search for.")
    if request.mode == "sparse":
        if not store.analyzer(collection).query_ids(query):
            raise QueryError(f"The query '{query.strip()}' has only stop words or punctuation, so keyword (sparse) "
                           "search has nothing to match. Add content words, or use dense or hybrid search.")
        return store.search(collection, None, None, request, query_text=query)
    embedder = embedder or embedder_for(store, collection)
    vector = query_vector if query_vector is not None else embedder.embed_query([query])[0]
    return store.search(collection, vector, embedder, request, query_text=query)


def search_defaults(store: Store, collection: str, request: SearchRequest) -> SearchRequest:
    """Return request with mode and fusion None replaced by the collection's defaults (see search): its saved mode
    (a sweep row applied to it, rag.runs.apply) when it can still search that way."""
    mode, fusion = request.mode, request.fusion
    exists = (mode is None or fusion is None) and store.has_collection(collection)
    if mode is None:
        keywords = exists and store.has_keywords(collection)
        saved = store.collection_setting(collection, "mode") if exists else None
        usable = saved == "dense" or (saved in ("sparse", "hybrid") and keywords)
        mode = saved if usable else "hybrid" if keywords else "dense"
    if fusion is None:
        saved = store.collection_setting(collection, "fusion") if exists else None
        fusion = str(saved) if saved else DEFAULT_FUSION
    return request.replace(mode=mode, fusion=fusion)


def retrieve(
    query: str,
    collection: str = DEFAULT_COLLECTION,
    request: SearchRequest = DEFAULT_REQUEST,
    max_tokens: int = CHAT_MAX_TOKENS,
    *,
    store: Store | None = None,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    label: str = "Quelle",
    overflow: str = DEFAULT_OVERFLOW,
) -> Context:
    """Return the context an LLM would receive for query: search (reranked when a reranker is given), then
    build_context under max_tokens (overflow: what happens to a chunk that does not fit, rag.retrieval.context)."""
    hits = search(query, collection, request, store=store, embedder=embedder, reranker=reranker)
    return build_context(hits, max_tokens=max_tokens, label=label, overflow=overflow)
