"""rag.reports.scores: score distributions (hand-computed cuts and stats, the cap, a real collection) and rank rows."""

from __future__ import annotations

import math

import pytest

from rag import pipeline
from rag.chunking import ChunkSettings
from rag.embeddings import get_embedder
from rag.errors import RagError, SparseVectorsMissingError
from rag.evaluation.metrics.metrics import evaluate
from rag.evaluation.querysets.queries import Query
from rag.evaluation.querysets.squad import import_squad
from rag.pipeline import SourceFile
from rag.reports.scores import distribution_of, rank_rows, score_distribution, score_stats
from rag.retrieval import SearchRequest
from rag.retrieval.records import Hit
from rag.retrieval.search import CANDIDATES
from rag.store.open import open_store
from tests.conftest import PARAGRAPHS, fake_embedder, ingest, make_document, make_old

SCORES = [0.5, 0.9, 0.1, 0.7, 0.3]  # sorted: 0.9 0.7 0.5 0.3 0.1


def test_cuts_by_hand():
    d = distribution_of(SCORES, SearchRequest(top_k=3))
    assert d.scores == (0.9, 0.7, 0.5, 0.3, 0.1)
    assert d.kth_score == 0.5 and d.kept == 3 and d.above_threshold is None and not d.capped and d.notes == ()
    d = distribution_of(SCORES, SearchRequest(top_k=3, score_threshold=0.6))
    assert d.above_threshold == 2 and d.kept == 2 and d.kth_score == 0.5  # the threshold cuts before top_k
    d = distribution_of(SCORES, SearchRequest(top_k=4, score_threshold=0.3))
    assert d.above_threshold == 4 and d.kept == 4 and d.kth_score == 0.3  # >= keeps a score equal to it
    assert distribution_of(SCORES, SearchRequest(top_k=6)).kth_score is None  # fewer scores than top_k
    rows = distribution_of(SCORES, SearchRequest(top_k=2, score_threshold=0.8)).rows()
    assert [(r["rank"], r["in_top_k"], r["above_threshold"], r["kept"]) for r in rows[:3]] == [
        (1, True, True, True), (2, True, False, False), (3, False, False, False)]


def test_stats_by_hand():
    s = score_stats(SCORES)
    assert (s.count, s.minimum, s.maximum) == (5, 0.1, 0.9)
    assert s.mean == pytest.approx(0.5) and s.median == pytest.approx(0.5)
    assert s.stdev == pytest.approx(math.sqrt((0.16 + 0.04 + 0 + 0.04 + 0.16) / 5))
    assert (s.q1, s.q3) == (pytest.approx(0.3), pytest.approx(0.7))
    assert score_stats([]) is None
    one = score_stats([0.4])
    assert (one.q1, one.median, one.q3, one.stdev) == (0.4, 0.4, 0.4, 0.0)


def test_cap_and_unscored_chunks_are_said():
    capped = distribution_of([0.9, 0.8, 0.7], SearchRequest(top_k=2), 12_000, 3)
    assert capped.capped and capped.total == 12_000 and capped.kth_score == 0.8
    assert capped.notes == ("Showing the best 3 of 12,000 chunks; the rest score lower.",)
    keyword = distribution_of([7.5, 2.0], SearchRequest(top_k=5, mode="sparse"), 6)
    assert not keyword.capped and keyword.kth_score is None and keyword.kept == 2
    assert "4 of 6 chunks contain no query term" in keyword.notes[0]


def test_distribution_over_a_real_collection(collection):
    fake = get_embedder("fake:64")
    query = PARAGRAPHS["wien.txt"][0]
    d = score_distribution(query, "c", SearchRequest(top_k=2, score_threshold=0.5), store=collection, embedder=fake)
    hits = pipeline.search(query, "c", SearchRequest(top_k=6, mode="dense"), store=collection, embedder=fake)
    assert d.total == 6 and len(d.scores) == 6 and not d.capped and d.score_kind == "cosine"
    assert list(d.scores) == pytest.approx([h.score for h in hits])
    assert d.scores[0] == pytest.approx(1.0, abs=1e-5)  # the query is that chunk's text
    assert d.kth_score == pytest.approx(hits[1].score)
    assert d.above_threshold == sum(h.score >= 0.5 for h in hits) and d.kept == min(2, d.above_threshold)
    small = score_distribution(query, "c", SearchRequest(top_k=2), store=collection, embedder=fake, cap=4)
    assert small.capped and len(small.scores) == 4 and small.total == 6 and "best 4 of 6" in small.notes[0]
    assert list(small.scores) == pytest.approx(list(d.scores[:4]))
    ids = [i.document_id for i in collection.documents("c") if i.title == "wien.txt"]
    only = score_distribution(query, "c", SearchRequest(document_ids=ids), store=collection, embedder=fake)
    assert only.total == 3 and len(only.scores) == 3


def test_keyword_and_hybrid_distributions(collection):
    d = score_distribution("Donau Hauptstadt", "c", SearchRequest(mode="sparse", top_k=1), store=collection)
    assert d.score_kind == "bm25" and len(d.scores) == 2 and d.total == 6  # two chunks hold a query term
    assert d.kth_score == d.scores[0] and "4 of 6 chunks contain no query term" in d.notes[0]
    fused = score_distribution("Donau Hauptstadt", "c", SearchRequest(mode="hybrid", fusion="dbsf"), store=collection,
                               embedder=get_embedder("fake:64"))
    assert fused.score_kind == "dbsf" and fused.fusion == "dbsf" and len(fused.scores) == 6
    with pytest.raises(RagError, match="empty"):
        score_distribution("  ", "c", store=collection)


def test_old_collection_says_reingest():
    store, embedder = open_store(":memory:"), fake_embedder(16)
    make_old(store, embedder)
    ingest(store, embedder, make_document())
    assert len(score_distribution("Passwörter", "documents", store=store, embedder=embedder).scores) > 1
    with pytest.raises(SparseVectorsMissingError, match="re-ingest"):
        score_distribution("Passwörter", "documents", SearchRequest(mode="hybrid"), store=store, embedder=embedder)


def hit(document: str, start: int, score: float) -> Hit:
    return Hit(score, "x", f"id-{document}", document, f"{document}-{start}", 0, (), 1, 1, start, start + 10)


def test_rank_rows_by_hand():
    queries = [Query("a", ("A",), "x", 0), Query("b", ("B",), "x", 0, line=2), Query("c", ("C",), "x", 0, line=3)]
    results = [[hit("A", 0, 0.9), hit("X", 0, 0.5)],
               [hit("X", 0, 0.8), hit("X", 20, 0.7), hit("B", 0, 0.6)],
               [hit("X", 0, 0.4)]]
    rows = rank_rows(evaluate(queries, results, [1, 3]), threshold=0.65)
    assert [(r.query, r.rank, r.score, r.top_score) for r in rows] == [
        ("a", 1, 0.9, 0.9), ("b", 3, 0.6, 0.8), ("c", None, None, 0.4)]
    assert rows[0].gap == 0.0 and rows[1].gap == pytest.approx(0.2) and rows[2].gap is None
    assert [r.above_threshold for r in rows] == [True, False, None]
    assert rows[1].line == 2 and rows[1].to_json()["gap"] == pytest.approx(0.2)
    assert [r.above_threshold for r in rank_rows(evaluate(queries, results, [3]))] == [None, None, None]


@pytest.fixture(scope="module")
def deep(shared_data):
    """Return a store whose collection "x" holds more chunks than hybrid search's candidate depth."""
    imported = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=3)
    store = open_store(":memory:")
    files = [SourceFile(d.filename, d.text.encode()) for d in imported.documents]
    pipeline.ingest(files, "x", ChunkSettings(60, 0), get_embedder("fake:64"), store=store)
    assert store.collections()[0].points > CANDIDATES
    return store, imported.queries[0]["query"]


@pytest.mark.parametrize(("mode", "fusion"), [("dense", "rrf"), ("sparse", "rrf"), ("hybrid", "rrf"),
                                              ("hybrid", "dbsf"), ("hybrid", "convex"), ("hybrid", "convex:w=0.7")])
def test_the_distribution_continues_the_table(deep, mode, fusion):
    store, query = deep
    fake = get_embedder("fake:64")
    for top_k in (1, 5, 20, 50):
        table = pipeline.search(query, "x", SearchRequest(top_k=top_k, mode=mode, fusion=fusion), store=store,
                                embedder=fake)
        d = score_distribution(query, "x", SearchRequest(mode=mode, fusion=fusion, top_k=top_k), store=store,
                               embedder=fake)
        assert list(d.scores[:top_k]) == pytest.approx([h.score for h in table], abs=1e-6), top_k
        assert d.scores[0] == pytest.approx(table[0].score, abs=1e-6)
        if len(table) == top_k:
            assert d.kth_score == pytest.approx(table[-1].score, abs=1e-6)
    if mode == "hybrid":
        assert len(d.scores) < d.total and "fuses the best 50 chunks of each list" in d.notes[0]
