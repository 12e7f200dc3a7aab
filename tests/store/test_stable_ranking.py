"""top_k and the threshold only cut one ranking: the same ids and scores for every top_k, mode and fusion.

On the real local Qdrant engine with real German text (three XQuAD articles, 64 chunks: more than the
candidate depth, so a depth that grew with top_k would change the fused scores, as it did before).
"""

from __future__ import annotations

import pytest

from rag import pipeline
from rag.chunking import ChunkSettings
from rag.embeddings import get_embedder
from rag.evaluation.querysets.squad import import_squad
from rag.pipeline import SourceFile
from rag.retrieval import SearchRequest
from rag.retrieval.request import requests_for
from rag.retrieval.search import CANDIDATES
from rag.store.open import open_store

KS = (1, 3, 5, 10, 20, 50)
SEARCHES = [("dense", "rrf"), ("sparse", "rrf"), *(("hybrid", f) for f in ("rrf", "rrf:k=10", "dbsf", "convex:w=0.6"))]


@pytest.fixture(scope="module")
def corpus(shared_data):
    """Return (store, embedder, queries): the first three XQuAD-de articles in collection "x"."""
    imported = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=3)
    store, embedder = open_store(":memory:"), get_embedder("fake:64")
    files = [SourceFile(d.filename, d.text.encode()) for d in imported.documents]
    pipeline.ingest(files, "x", ChunkSettings(60, 0), embedder, store=store)
    assert store.collections()[0].points > CANDIDATES
    return store, embedder, [q["query"] for q in imported.queries[::8][:8]]


def ranked(hits) -> list[tuple[str, float]]:
    """Return (chunk id, score) best first; scores to 6 places (the engine's float32 cosine varies in the 8th)."""
    return [(h.chunk_id, round(h.score, 6)) for h in hits]


@pytest.mark.parametrize(("mode", "fusion"), SEARCHES)
def test_top_k_only_cuts_the_ranking(corpus, mode, fusion) -> None:
    store, embedder, queries = corpus
    lengths = []
    for query in queries:
        deepest = pipeline.search(query, "x", SearchRequest(top_k=50, mode=mode, fusion=fusion), store=store,
                                  embedder=embedder)
        lengths.append(len(deepest))
        for k in KS:
            hits = pipeline.search(query, "x", SearchRequest(top_k=k, mode=mode, fusion=fusion), store=store,
                                   embedder=embedder)
            assert ranked(hits) == ranked(deepest[:k]), (query, k)
            explained = [(h.dense_rank, h.sparse_rank, h.sparse_score) for h in hits]
            assert explained == [(h.dense_rank, h.sparse_rank, h.sparse_score) for h in deepest[:k]]
    assert max(lengths) >= (10 if mode == "sparse" else 50)  # keyword search finds only chunks with a query term


@pytest.mark.parametrize(("mode", "fusion"), SEARCHES)
def test_batches_and_the_shared_lists_give_the_same_ranking(corpus, mode, fusion) -> None:
    store, embedder, queries = corpus
    vectors = None if mode == "sparse" else embedder.embed_query(queries)
    deepest = store.search_batch("x", vectors, embedder, SearchRequest(top_k=50, mode=mode, fusion=fusion),
                                 query_texts=queries)
    for k in KS:
        rows = store.search_batch("x", vectors, embedder, SearchRequest(top_k=k, mode=mode, fusion=fusion),
                                  query_texts=queries)
        assert [ranked(r) for r in rows] == [ranked(r[:k]) for r in deepest]
    vectors = embedder.embed_query(queries)
    for k in KS:  # the evaluation's path: several modes from one round trip
        (rows, _) = store.search_many("x", requests_for([(mode, fusion), ("hybrid", "rrf")], k), vectors, embedder,
                                      query_texts=queries)
        assert [ranked(r) for r in rows] == [ranked(r[:k]) for r in deepest], k


@pytest.mark.parametrize(("mode", "fusion"), SEARCHES)
def test_a_threshold_only_cuts_the_ranking(corpus, mode, fusion) -> None:
    store, embedder, queries = corpus
    for query in queries[:4]:
        deepest = pipeline.search(query, "x", SearchRequest(top_k=50, mode=mode, fusion=fusion), store=store,
                                  embedder=embedder)
        # between two scores: a threshold equal to a float32 score is compared in another precision
        for i in (2, min(9, len(deepest) - 2)):
            threshold = (deepest[i].score + deepest[i + 1].score) / 2
            for k in (5, 50):
                cut = pipeline.search(query, "x",
                                      SearchRequest(top_k=k, score_threshold=threshold, mode=mode, fusion=fusion),
                                      store=store, embedder=embedder)
                assert ranked(cut) == ranked([h for h in deepest[:k] if h.score >= threshold])


@pytest.mark.parametrize(("mode", "fusion"), SEARCHES)
def test_within_a_document_filter_top_k_only_cuts_too(corpus, mode, fusion):
    store, embedder, queries = corpus
    document = store.documents("x")[0].document_id  # a filter searches those documents as their own collection
    for query in queries[:3]:
        deepest = pipeline.search(query, "x", SearchRequest(mode, fusion, 50, document_ids=[document]), store=store,
                                  embedder=embedder)
        assert {h.document_id for h in deepest} <= {document}
        for k in (1, 5, 20):
            hits = pipeline.search(query, "x", SearchRequest(mode, fusion, k, document_ids=[document]), store=store,
                                   embedder=embedder)
            assert ranked(hits) == ranked(deepest[:k])
