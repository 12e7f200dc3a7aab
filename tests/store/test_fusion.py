"""Fusions of hybrid search: specs, the convex combination, weighted RRF in the engine, tuning the weight."""

from __future__ import annotations

import json

import pytest

from rag import pipeline
from rag.embeddings import get_embedder
from rag.errors import InvalidSettingsError
from rag.evaluation.querysets.queries import load_query_set
from rag.evaluation.querysets.squad import import_squad, sweep_input
from rag.evaluation.sweeps.fusion_tuning import WEIGHTS, tune_fusion
from rag.retrieval import SearchRequest
from rag.retrieval.fusion import DEFAULT_FUSION, Fusion, convex, parse_fusion, rrf
from rag.store.open import open_store
from tests.conftest import run


@pytest.mark.parametrize("spec,fusion", [("rrf", Fusion()), ("RRF:k=10:w=0.7", Fusion("rrf", 0.7, 10)),
                                         ("dbsf", Fusion("dbsf")), ("convex:w=0.6", Fusion("convex", 0.6)),
                                         ("convex:w=0.5", Fusion("convex"))])
def test_specs_parse_and_print_back(spec: str, fusion: Fusion):
    assert parse_fusion(spec) == fusion and parse_fusion(fusion.spec) == fusion
    assert parse_fusion(DEFAULT_FUSION).spec == DEFAULT_FUSION


@pytest.mark.parametrize("bad", ["sum", "convex:w=1.5", "rrf:k=0", "rrf:k=2.5", "dbsf:w=0.3", "convex:x=1", "rrf:w=a"])
def test_bad_specs_say_what_is_allowed(bad: str):
    with pytest.raises(InvalidSettingsError):
        parse_fusion(bad)


def test_convex_combination_normalises_each_list():
    dense = [("a", 0.9), ("b", 0.7), ("c", 0.5)]
    keyword = [("c", 12.0), ("d", 6.0), ("a", 2.0)]
    fused = dict(convex(dense, keyword, 0.6))
    assert fused == pytest.approx({"a": 0.6 * 1 + 0.4 * 0, "b": 0.6 * 0.5, "c": 0.6 * 0 + 0.4 * 1,
                                   "d": 0.4 * 0.4})
    assert [i for i, _ in convex(dense, keyword, 1.0)][:3] == ["a", "b", "c"]  # all dense
    assert [i for i, _ in convex(dense, keyword, 0.0)][:3] == ["c", "d", "a"]  # all keywords
    assert convex([], [("x", 3.0)], 0.5) == [("x", 0.5)]


def test_rrf_is_qdrants_formula_weighted_by_share_with_ties_in_the_given_order():
    dense, keyword = ["a", "b", "c"], ["c", "d"]
    assert dict(rrf(dense, keyword)) == pytest.approx({"a": 1 / 2, "b": 1 / 3, "c": 1 / 4 + 1 / 2, "d": 1 / 3})
    weighted = dict(rrf(dense, keyword, weight=0.7, k=10))  # shares 1.4 (dense) and 0.6 (keyword)
    assert weighted["c"] == pytest.approx(1 / (3 / 1.4 + 9) + 1 / (1 / 0.6 + 9))
    assert [i for i, s in rrf(dense, keyword, weight=1.0) if s > 0] == ["a", "b", "c"]  # the keyword list adds 0
    order = {"b": ("doc-1", 0), "d": ("doc-1", 1)}  # b and d tie at 1/3
    assert [i for i, _ in rrf(dense, keyword, order=order)] == ["c", "a", "b", "d"]
    assert [i for i, _ in Fusion("rrf").fuse([("a", 0.9)], [("a", 7.0)])] == ["a"]


def test_fused_scores_a_float32_hair_apart_count_as_equal():
    # keyword scores of one chunk differ in their last float32 digit between two collections of the same chunks
    dense, keyword = [("id-z", 0.9), ("id-m", 0.1)], [("id-a", 7.0000004), ("id-m", 1.0)]
    order = {"id-z": ("doc-1", 0), "id-a": ("doc-1", 4), "id-m": ("doc-2", 0)}
    assert [i for i, _ in convex(dense, keyword, 0.5 + 4e-7, order)][:2] == ["id-z", "id-a"]
    assert [i for i, _ in convex(dense, keyword, 0.5 - 4e-7, order)][:2] == ["id-z", "id-a"]


def test_equal_fused_scores_follow_the_given_order_not_the_ids():
    dense, keyword = [("id-z", 0.9), ("id-m", 0.1)], [("id-a", 7.0), ("id-m", 1.0)]  # z and a tie at 0.5
    assert [i for i, _ in convex(dense, keyword, 0.5)][:2] == ["id-a", "id-z"]  # by id without an order
    order = {"id-z": ("doc-1", 0), "id-a": ("doc-1", 4), "id-m": ("doc-2", 0)}
    assert [i for i, _ in convex(dense, keyword, 0.5, order)][:2] == ["id-z", "id-a"]  # chunk 0 before chunk 4


@pytest.fixture(scope="module")
def xquad(shared_data):
    documents, queries = sweep_input(import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(),
                                                  articles=3))
    store, fake = open_store(":memory:"), get_embedder("fake:32")
    files = [pipeline.SourceFile(d.title, d.text.encode()) for d in documents]
    pipeline.ingest(files, "x", pipeline.ChunkSettings(120, 20), fake, store=store)
    return store, fake, queries


def test_convex_and_weighted_rrf_search_explain_their_scores(xquad):
    store, fake, queries = xquad
    query = queries[0].text
    convex_hits = pipeline.search(query, "x", SearchRequest(top_k=8, fusion="convex:w=0.6"), store=store, embedder=fake)
    assert convex_hits
    assert all(h.score_kind == "convex" and 0 <= h.score <= 1 for h in convex_hits)
    assert [h.score for h in convex_hits] == sorted((h.score for h in convex_hits), reverse=True)
    assert all(h.dense_rank is not None or h.sparse_rank is not None for h in convex_hits)
    dense_only = pipeline.search(query, "x", SearchRequest(top_k=8, fusion="convex:w=1"), store=store, embedder=fake)
    plain = pipeline.search(query, "x", SearchRequest(top_k=8, mode="dense"), store=store, embedder=fake)
    assert [h.chunk_id for h in dense_only] == [h.chunk_id for h in plain]
    weighted = pipeline.search(query, "x", SearchRequest(top_k=8, fusion="rrf:w=0.9"), store=store, embedder=fake)
    assert weighted and all(h.score_kind == "rrf" for h in weighted)
    above = pipeline.search(query, "x", SearchRequest(top_k=8, score_threshold=0.5, fusion="convex"), store=store,
                            embedder=fake)
    assert above and all(h.score >= 0.5 for h in above)


@pytest.mark.slow
def test_tuning_picks_a_weight_and_cross_validates_it(xquad):
    store, fake, queries = xquad
    tuning = tune_fusion(queries, "x", fake, store=store, ks=[1, 5, 10])
    assert set(tuning.by_weight) == set(WEIGHTS) and tuning.best.method == "convex"
    assert tuning.by_weight[tuning.best.weight] == max(tuning.by_weight.values())
    assert 0 <= tuning.cv_metric <= 1 and len(tuning.cv_weights) == tuning.folds == 5
    assert tuning.cv_metric <= tuning.by_weight[tuning.best.weight] + 1e-9  # held out can only do as well
    assert tune_fusion(queries, "x", fake, store=store, ks=[1, 5, 10]).to_json() == tuning.to_json()  # seeded


def test_eval_tune_fusion_saves_the_collections_default(shared_data, tmp_path, capsys):
    imported = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=2)
    from rag.evaluation.querysets.squad import write_import

    write_import(imported, tmp_path / "docs")
    store = str(tmp_path / "q")
    files = sorted(str(p) for p in (tmp_path / "docs").glob("*.txt"))
    assert run(capsys, "ingest", *files, "--collection", "x", "--embedder", "fake:32", "--store", store)[0] == 0
    queries = str(tmp_path / "docs/queries.jsonl")
    code, out, _ = run(capsys, "eval", queries, "--collection", "x", "--store", store, "--tune-fusion", "--save",
                       "--json")
    data = json.loads(out)
    assert code == 0 and data["saved"] and data["best"].startswith("convex")
    assert len(load_query_set((tmp_path / "docs/queries.jsonl").read_bytes())) == data["queries"]
    opened = open_store(path=store)
    try:
        assert pipeline.search_defaults(opened, "x", SearchRequest()) == SearchRequest("hybrid", data["best"])
    finally:
        opened.close()
