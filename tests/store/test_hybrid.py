"""Hybrid search on the real Qdrant engine: fusion order, the per-mode explanation, older collections."""

from __future__ import annotations

import dataclasses
import math
import statistics

import numpy as np
import pytest

from rag import pipeline
from rag.errors import RagError, SparseVectorsMissingError, StoreError
from rag.retrieval import SearchRequest
from rag.retrieval.request import requests_for
from rag.retrieval.search import candidate_limit
from rag.store.client import Store
from rag.store.open import open_store
from tests.conftest import fake_embedder, ingest, make_document, make_foreign, make_old, store_texts

# Dense order A, B, C, D, E (angles 0..80 degrees from the query); keyword order E, C, D (A and B lack the term).
NAMES = "ABCDE"
TEXTS = [
    "haus baum wald feld berg",
    "haus baum wald feld see",
    "schlüssel schlüssel haus baum wald",
    "schlüssel haus baum wald feld",
    "schlüssel schlüssel schlüssel haus baum",
]
ANGLES = [0, 20, 40, 60, 80]
QUERY = np.array([1.0, 0.0])
RRF_K = 2  # Qdrant's ranking constant: score = sum of 1 / (k + position from 0)


@pytest.fixture
def known() -> tuple[Store, dict[str, str]]:
    """Return a store with the five chunks A-E, and chunk id -> name."""
    store = open_store(":memory:")
    vectors = [[math.cos(math.radians(a)), math.sin(math.radians(a))] for a in ANGLES]
    ids = store_texts(store, TEXTS, fake_embedder(2), vectors=vectors)
    return store, dict(zip(ids, NAMES, strict=True))


def search(store: Store, mode: str, **options) -> list:
    options.setdefault("top_k", 10)
    return store.search("c", QUERY, fake_embedder(2), SearchRequest(mode=mode, **options), query_text="Schlüssel")


def test_single_modes_give_the_known_orders(known) -> None:
    store, name = known
    dense, keyword = search(store, "dense"), search(store, "sparse")
    assert "".join(name[h.chunk_id] for h in dense) == "ABCDE"
    assert "".join(name[h.chunk_id] for h in keyword) == "ECD"
    assert [h.dense_rank for h in dense] == [1, 2, 3, 4, 5] and all(h.sparse_rank is None for h in dense)
    assert [h.dense_score for h in dense] == pytest.approx([math.cos(math.radians(a)) for a in ANGLES], abs=1e-5)
    assert {h.score_kind for h in dense} == {"cosine"} and {h.score_kind for h in keyword} == {"bm25"}


def test_rrf_order_follows_qdrant_formula_with_k_2(known) -> None:
    store, name = known
    hits = search(store, "hybrid", fusion="rrf")
    # A 1/2, B 1/3, C 1/4+1/3, D 1/5+1/4, E 1/6+1/2 -> E C A D B (k=60 would give C E D A B)
    assert "".join(name[h.chunk_id] for h in hits) == "ECADB"
    assert [h.score for h in hits] == pytest.approx([1 / 6 + 1 / 2, 1 / 4 + 1 / 3, 1 / 2, 1 / 5 + 1 / 4, 1 / 3])
    for hit in hits:  # the explanation alone reproduces the engine's fused score
        ranks = [r for r in (hit.dense_rank, hit.sparse_rank) if r is not None]
        assert hit.score == pytest.approx(sum(1 / (RRF_K + r - 1) for r in ranks)) and hit.score_kind == "rrf"
    by_name = {name[h.chunk_id]: h for h in hits}
    assert (by_name["A"].dense_rank, by_name["A"].sparse_rank, by_name["A"].sparse_score) == (1, None, None)
    assert (by_name["E"].dense_rank, by_name["E"].sparse_rank) == (5, 1)


def test_explanation_agrees_with_the_single_mode_searches(known) -> None:
    store, _ = known
    dense = {h.chunk_id: (h.dense_rank, h.dense_score) for h in search(store, "dense")}
    keyword = {h.chunk_id: (h.sparse_rank, h.sparse_score) for h in search(store, "sparse")}
    for fusion in ("rrf", "dbsf"):
        for hit in search(store, "hybrid", fusion=fusion):
            assert (hit.dense_rank, hit.dense_score) == dense[hit.chunk_id]
            assert (hit.sparse_rank, hit.sparse_score) == keyword.get(hit.chunk_id, (None, None))


def dbsf(scores: list[float]) -> list[float]:
    """Qdrant's DBSF normalisation: (s - (mean - 3 sd)) / (6 sd), sample standard deviation."""
    mean, sd = statistics.mean(scores), statistics.stdev(scores)
    return [(s - (mean - 3 * sd)) / (6 * sd) for s in scores]


def test_dbsf_sums_normalised_scores(known) -> None:
    store, name = known
    dense, keyword = search(store, "dense"), search(store, "sparse")
    expected: dict[str, float] = {}
    for hits in (dense, keyword):
        for hit, normalised in zip(hits, dbsf([h.score for h in hits]), strict=True):
            expected[name[hit.chunk_id]] = expected.get(name[hit.chunk_id], 0.0) + normalised
    fused = search(store, "hybrid", fusion="dbsf")
    assert "".join(name[h.chunk_id] for h in fused) == "".join(sorted(expected, key=expected.get, reverse=True))
    assert {name[h.chunk_id]: h.score for h in fused} == {k: pytest.approx(v, abs=1e-4) for k, v in expected.items()}
    assert {h.score_kind for h in fused} == {"dbsf"}


def test_threshold_top_k_filter_and_batch_in_hybrid(known) -> None:
    store, name = known
    assert "".join(name[h.chunk_id] for h in search(store, "hybrid", fusion="rrf", top_k=2)) == "EC"
    above = search(store, "hybrid", fusion="rrf", score_threshold=0.5)  # on the fused score
    assert "".join(name[h.chunk_id] for h in above) == "ECA"
    assert search(store, "sparse", score_threshold=10.0) == []  # on the BM25 score
    ingest(store, fake_embedder(2), make_document("schlüssel schlüssel", "doc-b", "b.md"), collection="c")
    only_b = search(store, "hybrid", document_ids=["doc-b"])
    assert only_b and {h.document_id for h in only_b} == {"doc-b"}
    single = [[h.chunk_id for h in search(store, mode)] for mode in ("dense", "sparse", "hybrid")]
    rows = [store.search_batch("c", np.vstack([QUERY, QUERY]), fake_embedder(2), SearchRequest(top_k=10, mode=mode),
                               query_texts=["Schlüssel", "Schlüssel"]) for mode in ("dense", "sparse", "hybrid")]
    assert [[h.chunk_id for h in row[1]] for row in rows] == single
    assert store.search_batch("c", None, None, SearchRequest(mode="sparse"), query_texts=[]) == []
    assert candidate_limit(1) == candidate_limit(50) == 50 and candidate_limit(80) == 80


def test_query_without_terms_and_bad_arguments(known) -> None:
    store, name = known
    assert store.search("c", None, None, SearchRequest(mode="sparse"), query_text="und die") == []
    hits = store.search("c", QUERY, None, SearchRequest(mode="hybrid", top_k=10), query_text="und die")
    assert "".join(name[h.chunk_id] for h in hits) == "ABCDE" and all(h.sparse_rank is None for h in hits)
    with pytest.raises(RagError, match="Unknown search mode 'keyword'.*dense, sparse, hybrid"):
        store.search("c", QUERY, None, SearchRequest(mode="keyword"))
    with pytest.raises(RagError, match="Unknown fusion 'sum'.*rrf, dbsf"):
        store.search("c", QUERY, None, SearchRequest(mode="hybrid", fusion="sum"), query_text="x")
    with pytest.raises(RagError, match="query text"):
        store.search("c", QUERY, None, SearchRequest(mode="hybrid"))
    with pytest.raises(RagError, match="query's vector"):
        store.search("c", None, None, SearchRequest(mode="dense"), query_text="x")
    with pytest.raises(RagError, match="2 query vectors but 1 query texts"):
        store.search_batch("c", np.vstack([QUERY, QUERY]), None, SearchRequest(mode="hybrid"), query_texts=["x"])


def test_collection_from_before_sparse_vectors_says_reingest() -> None:
    store, embedder = open_store(":memory:"), fake_embedder(16)
    make_old(store, embedder)
    count, _ = ingest(store, embedder, make_document())  # still writable: dense vectors only
    (info,) = store.collections()
    assert info.points == count and not info.sparse and not info.foreign
    query = embedder.embed_documents(["Passwörter"])[0]
    assert len(store.search("documents", query, embedder, SearchRequest(top_k=3))) == 3
    message = ("Collection 'documents' was made before keyword (sparse) vectors existed; re-ingest its documents "
               "into a new collection to use sparse or hybrid search.")
    for mode in ("sparse", "hybrid"):
        with pytest.raises(SparseVectorsMissingError) as error:
            store.search("documents", query, embedder, SearchRequest(mode=mode), query_text="Passwörter")
        assert str(error.value) == message and isinstance(error.value, StoreError)
        with pytest.raises(SparseVectorsMissingError, match="re-ingest"):
            pipeline.search("Passwörter", "documents", SearchRequest(mode=mode), store=store, embedder=embedder)
    ingest(store, embedder, make_document(), collection="neu")
    assert {c.name: c.sparse for c in store.collections()} == {"documents": False, "neu": True}


def test_foreign_collection_searches_dense_and_explains_sparse() -> None:
    store = open_store(":memory:")
    make_foreign(store.client)
    big = fake_embedder(1536, "openai:text-embedding-3-small")
    hits = store.search("documents", big.embed_documents(["Passwörter lang"])[0], big)
    assert hits[0].score_kind == "cosine" and hits[0].dense_rank == 1
    with pytest.raises(SparseVectorsMissingError, match="not made by RAG Lab.*use dense search"):
        store.search("documents", None, None, SearchRequest(mode="sparse"), query_text="Passwörter")
    with pytest.raises(SparseVectorsMissingError, match="not made by RAG Lab"):
        pipeline.search("Passwörter", "documents", SearchRequest(mode="sparse"), store=store)


def rounded(hit):
    """Return a hit with its scores to 6 places (the engine's fused scores differ in the 8th between requests)."""
    six = {name: round(value, 6) for name in ("score", "dense_score", "sparse_score")
           if (value := getattr(hit, name)) is not None}
    return dataclasses.replace(hit, **six)


def test_modes_searched_together_give_what_each_mode_gives_alone(shared_data) -> None:
    store, embedder = open_store(":memory:"), fake_embedder(16)
    text = (shared_data / "markdown/asvs-de-V2-Authentication.md").read_text(encoding="utf-8")
    ingest(store, embedder, make_document(text), size=400)
    queries = ["Wie lang muss ein Passwort sein?", "Zwei-Faktor-Authentifizierung per SMS", "und oder",  # no terms
               "Passwortrichtlinie NIST", "Wiederherstellung des Kontos"]
    vectors = embedder.embed_query(queries)
    modes = [("dense", "rrf"), ("sparse", "rrf"), ("hybrid", "rrf"), ("hybrid", "dbsf"), ("hybrid", "convex:w=0.4")]
    together = store.search_many("documents", requests_for(modes, 5), vectors, embedder, query_texts=queries)
    for (mode, fusion), hits in zip(modes, together, strict=True):
        alone = store.search_batch("documents", vectors, embedder, SearchRequest(top_k=5, mode=mode, fusion=fusion),
                                   query_texts=queries)
        assert [[rounded(h) for h in row] for row in hits] == [[rounded(h) for h in row] for row in alone], mode
    assert together[1][2] == [] and len(together[0][2]) == 5  # a query of stop words finds nothing by keywords
    dense_only = store.search_many("documents", requests_for([("dense", "rrf")], 3), vectors, embedder,
                                   query_texts=queries)
    assert dense_only == [store.search_batch("documents", vectors, embedder, SearchRequest(top_k=3))]


def test_equal_convex_scores_rank_by_document_and_chunk(known) -> None:
    store, names = known  # at weight 0.5, A (dense top, no keyword) and E (keyword top, dense last) both fuse to 0.5
    hits = search(store, "hybrid", fusion="convex:w=0.5")
    assert hits[1].score == pytest.approx(hits[2].score) == pytest.approx(0.5)
    assert [names[h.chunk_id] for h in hits[1:3]] == ["A", "E"]  # chunk 0 before chunk 4, whatever their point ids
