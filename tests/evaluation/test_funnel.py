"""The funnel on the real Qdrant engine: a question lost at each stage on purpose, and the counts per stage.

Six chunks with dense vectors at known angles (2 dimensions) and known keyword terms, so each case's dense,
keyword and fused ranks are known; each question's answer word marks its relevant chunk.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

import numpy as np
import pytest

from rag.chunking.chunker import Chunk, ChunkSettings
from rag.documents.model import Document, Page
from rag.evaluation.funnel import stages as funnel_module
from rag.evaluation.funnel.rankings import search_rankings
from rag.evaluation.funnel.stages import STAGES, evaluation_funnels, explain_chunk, query_rankings, summarize
from rag.evaluation.metrics.metrics import evaluate
from rag.evaluation.metrics.modes import SearchMode
from rag.evaluation.querysets.queries import Query
from rag.evaluation.sweeps.sweep import resolve_in_collection
from rag.rerank import rerank, rerank_all
from rag.retrieval import SearchRequest
from rag.store.open import open_store
from tests.conftest import fake_embedder

BIG = "epsilon " + "füllwort " * 4000  # over the 3000-token context budget: cut to fit, and the context is full
TEXTS = {  # name: (content, angle of its dense vector in degrees)
    "A": ("alpha schlüssel", 0),
    "B": ("beta", 10),
    "C": ("gamma schlüssel schlüssel", 80),
    "D": ("delta " + "wort " * 599, 85),  # 600 words: over EMBEDDER's 512, so the model cut it off
    "E": (BIG, 3),
    "F": ("zeta", 45),
}
EMBEDDER = fake_embedder(2)
EMBEDDER.max_input_tokens = 512  # a model that reads 512 words (the fake counts words): D is cut off
HYBRID, DENSE, SPARSE = SearchMode("hybrid", "convex"), SearchMode("dense"), SearchMode("sparse")


def vector(angle: float) -> np.ndarray:
    return np.array([math.cos(math.radians(angle)), math.sin(math.radians(angle))], dtype=np.float32)


@pytest.fixture(scope="module")
def store():
    """Return a store whose collection "c" holds the chunks A-F of one document, each at its angle."""
    store = open_store(":memory:")
    contents = [content for content, _ in TEXTS.values()]
    text = "\n\n".join(contents)
    document = Document(id="doc", title="doc.md", kind="markdown", pages=(Page(1, text),), text=text)
    chunks, start = [], 0
    for index, content in enumerate(contents):
        chunks.append(Chunk("doc", index, content, len(content.split()), (), 1, 1, start, start + len(content)))
        start += len(content) + 2
    vectors = np.stack([vector(angle) for _, angle in TEXTS.values()])
    store.upsert_document("c", document, chunks, vectors, ChunkSettings(5000, 0, "tokens"), EMBEDDER, language="de")
    return store


def funnel(store, text: str, answer: str, angle: float, mode: SearchMode, k: int, reranker=None):
    query = resolve_in_collection([Query(text, ("doc.md",), answer)], store, "c")[0]
    vectors = vector(angle).reshape(1, -1) if mode.needs_vectors else None
    return evaluation_funnels([query], "c", EMBEDDER if mode.needs_vectors else None, mode.request(k), store=store,
                              vectors=vectors, reranker=reranker)[0]


def reverse(text, hits):
    return [(h.chunk_id, float(len(hits) - i)) for i, h in enumerate(reversed(hits))]  # best first


CASES = [  # stage, (query text, answer, query angle, mode, k, reranker)
    (None, ("gamma", "gamma", 80, HYBRID, 1, None)),
    ("dense", ("schlüssel", "alpha", 80, HYBRID, 1, None)),  # keyword 2, dense last: both miss, dense worse
    ("keyword", ("schlüssel", "alpha", 80, SPARSE, 1, None)),  # keyword search ranks C first
    ("read_whole", ("delta", "delta", 0, DENSE, 1, None)),  # dense last, and the model never read it all
    ("fused", ("schlüssel", "beta", 10, HYBRID, 1, None)),  # dense 1, but C (dense 2nd tier, keyword 1) wins
    ("reranked", ("gamma", "gamma", 80, HYBRID, 1, reverse)),  # fused 1, the reranker puts it last
    ("context", ("epsilon", "alpha", 3, HYBRID, 2, None)),  # fused 2, after E, which fills the budget
]


@pytest.mark.parametrize(("stage", "case"), CASES, ids=[str(s) for s, _ in CASES])
def test_a_question_is_lost_at_the_stage_built_for_it(store, stage, case) -> None:
    result = funnel(store, *case)
    assert result.lost_at == stage
    best = result.stages
    assert best is not None and best.chunk.content.startswith(case[1])


def test_the_stages_hold_the_ranks_each_ranking_gave(store) -> None:
    fused = funnel(store, *CASES[4][1]).stages  # B: dense 1, no keyword, fused below C
    assert fused.dense.rank == 1 and fused.dense.score == pytest.approx(1.0, abs=1e-5)
    assert fused.keyword is None and fused.fused.rank > 1 and fused.reranked is None
    assert fused.context == "not in the top k" and fused.read == "whole"
    lost = funnel(store, *CASES[6][1]).stages  # A behind the chunk that filled the context
    assert lost.fused.rank == 2 and lost.context == "budget full" and not lost.in_context
    cut = funnel(store, "epsilon", "epsilon", 3, HYBRID, 1).stages  # E itself: cut to fit, its start kept
    assert cut.context == "cut" and cut.in_context and cut.read == "cut off"
    reranked = funnel(store, *CASES[5][1]).stages
    assert reranked.fused.rank == 1 and reranked.reranked.rank == len(TEXTS)
    data = reranked.to_json()
    assert data["reranked"] == {"rank": len(TEXTS), "score": 1.0} and data["read_whole"] is True
    assert data["context"] == {"included": False, "reason": "not in the top k"}


def test_the_counts_per_stage_add_up_to_the_misses(store) -> None:
    funnels = [funnel(store, *case) for _, case in CASES]
    summary = summarize(funnels, 1)
    assert list(summary.lost_at) == list(STAGES)
    assert all(count == 1 for count in summary.lost_at.values())
    assert summary.misses == sum(f.lost_at is not None for f in funnels) == len(CASES) - 1
    assert summary.to_json()["misses"] == sum(summary.to_json()["lost_at"].values())


def test_explain_names_the_stages_of_any_chunk(store) -> None:
    chunk = next(h for h in store.document_chunks("c", "doc") if h.content == "beta")
    explained = explain_chunk("schlüssel", chunk, "c", HYBRID.request(1), store=store, embedder=EMBEDDER,
                              vector=vector(10))
    assert explained.lost_at == "fused" and explained.stages.dense.rank == 1
    found = explain_chunk("schlüssel", chunk, "c", DENSE.request(1), store=store, embedder=EMBEDDER,
                          vector=vector(10))
    assert found.lost_at is None and found.stages.context == "included"


def test_explain_gives_the_ranks_of_every_mode_and_loses_by_the_chosen_one(store) -> None:
    chunk = next(h for h in store.document_chunks("c", "doc") if h.content.startswith("alpha"))
    keyword = explain_chunk("schlüssel", chunk, "c", SPARSE.request(1), store=store, embedder=EMBEDDER,
                            vector=vector(80))
    assert keyword.stages.keyword.rank == 2 and keyword.stages.dense.rank > 1 and keyword.stages.fused is not None
    assert keyword.lost_at == "keyword" and keyword.mode == "sparse"
    dense = explain_chunk("schlüssel", chunk, "c", SearchRequest(mode=DENSE.mode, fusion="rrf", top_k=1), store=store,
                          embedder=EMBEDDER,
                          vector=vector(0))
    assert dense.stages.dense.rank == 1 and dense.stages.keyword.rank == 2 and dense.lost_at is None
    assert dense.stages.fused is not None  # fused by rrf although the search was dense
    gamma = next(h for h in store.document_chunks("c", "doc") if h.content.startswith("gamma"))
    reranked = explain_chunk("gamma", gamma, "c", HYBRID.request(1), store=store, embedder=EMBEDDER, vector=vector(80),
                             reranker=reverse)
    assert reranked.reranked and reranked.stages.reranked.rank == len(TEXTS) and reranked.lost_at == "reranked"
    assert not dense.reranked and dense.stages.reranked is None


@pytest.mark.parametrize("mode", [HYBRID, DENSE, SPARSE], ids=lambda m: m.label)
def test_rankings_kept_from_before_explain_any_chunk_and_k_as_a_new_search_does(store, mode) -> None:
    kept = query_rankings("schlüssel", "c", mode.request(1), store=store, embedder=EMBEDDER, vector=vector(10))
    for chunk in store.document_chunks("c", "doc"):
        for k in (1, 2, 4):
            searched = explain_chunk("schlüssel", chunk, "c", mode.request(k), store=store, embedder=EMBEDDER,
                                     vector=vector(10))
            assert explain_chunk("schlüssel", chunk, "c", mode.request(k), store=store, embedder=EMBEDDER,
                                 rankings=kept) == searched


@pytest.mark.parametrize("mode", [HYBRID, DENSE, SPARSE], ids=lambda m: m.label)
@pytest.mark.parametrize("k", [1, 2])
def test_questions_the_evaluation_found_give_the_funnel_a_search_gives(store, mode, k) -> None:
    cases = [case for _, case in CASES if case[5] is None]
    queries = resolve_in_collection([Query(text, ("doc.md",), answer) for text, answer, *_ in cases], store, "c")
    vectors = np.stack([vector(angle) for _, _, angle, *_ in cases]) if mode.needs_vectors else None
    embedder = EMBEDDER if mode.needs_vectors else None
    hits = store.search_batch("c", vectors, embedder, SearchRequest(top_k=10, mode=mode.mode, fusion=mode.fusion),
                              query_texts=[q.text for q in queries])
    outcomes = evaluate(queries, hits, (1, 2, 10)).per_query
    options = {"store": store, "vectors": vectors}
    searched = evaluation_funnels(queries, "c", embedder, mode.request(k), **options)
    shortcut = evaluation_funnels(queries, "c", embedder, mode.request(k), **options, outcomes=outcomes)
    assert any(o.rank is not None and o.rank <= k for o in outcomes)  # some take the shortcut
    assert [f.to_json() for f in shortcut] == [f.to_json() for f in searched]


class Swapping:
    """A reranker (rag.rerank's protocol) that swaps the search's first two candidates, keeping the others' order."""

    spec, scale = "swapping", "its own"

    def score(self, query, texts):
        scores = [float(len(texts) - i) for i in range(len(texts))]
        scores[:2] = scores[1::-1]
        return scores

    def close(self):
        pass


@pytest.mark.parametrize("mode", [HYBRID, DENSE, SPARSE], ids=lambda m: m.label)
@pytest.mark.parametrize("k", [1, 2])
def test_questions_a_reranked_evaluation_found_give_the_funnel_a_reranked_search_gives(store, mode, k,
                                                                                      monkeypatch) -> None:
    cases = [case for _, case in CASES if case[5] is None]
    queries = resolve_in_collection([Query(text, ("doc.md",), answer) for text, answer, *_ in cases], store, "c")
    vectors = np.stack([vector(angle) for _, _, angle, *_ in cases]) if mode.needs_vectors else None
    embedder = EMBEDDER if mode.needs_vectors else None
    texts = [q.text for q in queries]
    hits = store.search_batch("c", vectors, embedder, SearchRequest(top_k=10, mode=mode.mode, fusion=mode.fusion),
                              query_texts=texts)
    outcomes = evaluate(queries, rerank_all(texts, hits, Swapping(), 4, 10), (1, 2, 10)).per_query
    request = replace(mode, rerank=True).request(k, rerank_depth=4)
    options = {"store": store, "vectors": vectors, "reranker": partial(rerank, reranker=Swapping(), depth=4)}
    searched = evaluation_funnels(queries, "c", embedder, request, **options)
    asked = []
    monkeypatch.setattr(funnel_module, "search_rankings", lambda *a, **kw: asked.extend(a[2]) or search_rankings(
        *a, **kw))
    shortcut = evaluation_funnels(queries, "c", embedder, request, **options, outcomes=outcomes)
    found = [o for o in outcomes if o.rank is not None and o.rank <= k]
    assert found and len(asked) == len(queries) - len(found)  # the questions found are not searched (reranked) again
    assert any(f.stages and f.stages.reranked for f in shortcut)
    assert [f.to_json() for f in shortcut] == [f.to_json() for f in searched]
