"""rag.evaluation.sweeps.sweep and rag.embeddings.cache: grids, collections per configuration, reuse, the cache, the
CLI, the model."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from rag.chunking.chunker import chunk_document
from rag.cli import main
from rag.embeddings import get_embedder
from rag.embeddings.cache import EmbeddingCache, default_cache_dir
from rag.errors import InvalidSettingsError, QuerySetError
from rag.evaluation.querysets.queries import Query
from rag.evaluation.querysets.squad import import_squad, write_import
from rag.evaluation.sweeps.sweep import Sweep, SweepConfig, collection_name, grid, parse_sizes, run_sweep
from rag.store.open import open_store


class Counting:
    """Wraps an embedder and records every text it is asked to embed."""

    def __init__(self, inner):
        self.inner, self.model_id, self.dimension, self.seen = inner, inner.model_id, inner.dimension, []
        self.query_prompt, self.document_prompt = inner.query_prompt, inner.document_prompt

    def embed_documents(self, texts):
        self.seen.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, texts):
        self.seen.extend(texts)
        return self.inner.embed_query(texts)



# ---- grid and names --------------------------------------------------------------------------------------


def test_grid_skips_overlaps_not_below_the_chunk_size():
    configs, skipped = grid([100, 400], [0, 100, 150])
    assert configs == [SweepConfig(100, 0), SweepConfig(400, 0), SweepConfig(400, 100), SweepConfig(400, 150)]
    assert len(skipped) == 2 and "chunk_size 100, overlap 100" in skipped[0]
    assert parse_sizes("400, 200,400", "--chunk-size", 4) == [400, 200]
    with pytest.raises(ValueError, match="'2x'"):
        parse_sizes("200,2x", "--chunk-size", 4)


def test_collection_name_comes_from_documents_configuration_and_embedder():
    name = collection_name(["b", "a"], SweepConfig(400, 50), "local:all-MiniLM-L6-v2")
    assert name == collection_name(["a", "b", "a"], SweepConfig(400, 50), "local:all-MiniLM-L6-v2")
    assert name.startswith("sweep-") and name.endswith("-cs400-ov50-local-all-MiniLM-L6-v2")
    assert len(name.split("-")[1]) == 8
    others = {collection_name(["a"], SweepConfig(400, 50), "fake:8"), collection_name(["a", "b"], SweepConfig(400, 0),
              "fake:8"), collection_name(["a", "b"], SweepConfig(400, 50, "tokens"), "fake:8")}
    assert len(others | {collection_name(["a", "b"], SweepConfig(400, 50), "fake:8")}) == 4


# ---- the embedding cache ---------------------------------------------------------------------------------


def test_cache_embeds_each_text_once_per_model(tmp_path):
    fake = Counting(get_embedder("fake:16"))
    cache = EmbeddingCache(tmp_path)
    first = cache.embed(["a b", "c d", "a b"], fake)
    assert fake.seen == ["a b", "c d"]
    assert np.allclose(first, fake.inner.embed_documents(["a b", "c d", "a b"]))
    again = EmbeddingCache(tmp_path).embed(["c d", "e"], fake)  # a new object: read from the file
    assert fake.seen == ["a b", "c d", "e"]
    assert np.allclose(again[0], first[1])
    other = Counting(get_embedder("fake:8"))
    EmbeddingCache(tmp_path).embed(["a b"], other)
    assert other.seen == ["a b"]  # another model's vectors are never mixed in
    memory = EmbeddingCache()
    memory.embed(["x"], fake)
    memory.embed(["x", "y"], fake)
    assert fake.seen[-2:] == ["x", "y"] and (memory.hits, memory.misses) == (1, 2)
    assert memory.embed([], fake).shape == (0, 16)


def test_cache_lives_next_to_the_store_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("RAG_EMBEDDING_CACHE", raising=False)
    store = open_store(path=str(tmp_path / "qdrant"))
    assert default_cache_dir(store) == tmp_path / "embedding-cache"
    monkeypatch.setenv("RAG_EMBEDDING_CACHE", str(tmp_path / "elsewhere"))
    assert default_cache_dir(store) == tmp_path / "elsewhere"


# ---- sweeps ------------------------------------------------------------------------------------------------


def oracle_ranks(document_texts, queries, config, embedder, depth):
    """Return the first relevant rank per query by brute force over all chunks (spans checked here, anew)."""
    chunks = [c for d in document_texts for c in chunk_document(d, config.chunk_size, config.overlap)]
    titles = {d.id: d.title for d in document_texts}
    scores = embedder.embed_query([q.text for q in queries]) @ embedder.embed_documents([c.content for c in chunks]).T
    ranks, ties = [], []
    for query, row in zip(queries, scores, strict=True):
        order = np.argsort(-row, kind="stable")[:depth]
        relevant = [titles[chunks[i].document_id] == query.documents[0] and chunks[i].start < query.answer_end
                    and chunks[i].end > query.answer_start for i in order]
        rank = relevant.index(True) + 1 if True in relevant else None
        ranks.append(rank)
        ties.append(np.any(np.isclose(np.diff(row[np.argsort(-row)][: depth + 1]), 0, atol=1e-6)))
    return ranks, ties


@pytest.mark.slow
def test_sweep_ranks_match_a_brute_force_search_with_span_labels(xquad):
    documents, queries = xquad
    fake = get_embedder("fake:64")
    configs, _ = grid([60, 150], [0, 20])
    result = run_sweep(Sweep(documents, queries, configs, ks=[1, 5]), fake, store=open_store(":memory:"))
    assert [r.config for r in result.results] == configs
    for outcome in result.results:
        ranks, ties = oracle_ranks(documents, queries, outcome.config, fake, 5)
        got = [o.rank for o in outcome.evaluation.per_query]
        compared = [(a, b) for a, b, tie in zip(got, ranks, ties, strict=True) if not tie]
        assert len(compared) > len(queries) * 0.9
        assert all(a == b for a, b in compared)
        expected_hit5 = sum(r is not None for r in ranks) / len(ranks)
        assert outcome.metrics["hit@5"] == pytest.approx(expected_hit5, abs=sum(ties) / len(ties) + 1e-9)
    smaller, larger = result.results[0], result.results[2]
    assert smaller.chunks > larger.chunks and smaller.mean_tokens < larger.mean_tokens


@pytest.mark.slow
def test_sweep_rows_reuse_and_cache(xquad):
    documents, queries = xquad
    fake = Counting(get_embedder("fake:32"))
    store, cache, events = open_store(":memory:"), EmbeddingCache(), []
    configs = [SweepConfig(80, 0), SweepConfig(80, 20), SweepConfig(4000, 0), SweepConfig(4000, 100)]
    first = run_sweep(Sweep(documents, queries, configs, ks=[1, 3]), fake, store=store, cache=cache,
                      progress=events.append)
    for row in first.results:
        chunks = [c for d in documents for c in chunk_document(d, row.config.chunk_size, row.config.overlap)]
        assert row.chunks == len(chunks) and row.mean_tokens == pytest.approx(np.mean([c.token_count for c in chunks]))
        assert set(row.seconds) == {"chunking", "embedding", "indexing", "searching"} and not row.reused
        infos = store.documents(row.collection)
        assert {i.title for i in infos} == {d.title for d in documents} and sum(i.chunks for i in infos) == row.chunks
    # each article fits one 4000-token chunk, with or without overlap: the second config embeds nothing
    assert first.results[2].embedded == len(documents) and first.results[3].embedded == 0
    assert len(fake.seen) == len(set(fake.seen))  # no text was ever embedded twice
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert [e.stage for e in events[:2]] == ["chunking", "queries"]  # every configuration is chunked first
    fake.seen.clear()
    second = run_sweep(Sweep(documents, queries, configs, ks=[1, 3]), fake, store=store, cache=EmbeddingCache())
    assert all(r.reused and r.embedded == 0 for r in second.results)
    assert fake.seen == list(dict.fromkeys(q.text for q in queries))  # only the queries, once, for all configs
    assert [r.metrics for r in second.results] == [r.metrics for r in first.results]
    store.delete_document(first.results[0].collection, documents[0].id)  # a damaged collection is rebuilt
    third = run_sweep(Sweep(documents, queries, configs[:1], ks=[1, 3]), fake, store=store, cache=cache)
    assert not third.results[0].reused and third.results[0].metrics == first.results[0].metrics
    best = first.best("hit@3")
    assert best.metrics["hit@3"] == max(r.metrics["hit@3"] for r in first.results)
    assert best.config.label in first.summary("hit@3")


def test_sweep_refuses_labels_outside_its_documents(xquad):
    documents, queries = xquad
    store, fake = open_store(":memory:"), get_embedder("fake:8")
    with pytest.raises(QuerySetError, match="'Paris.txt'"):
        run_sweep(Sweep(documents, [*queries, Query("q", ("Paris.txt",), line=99)], [SweepConfig(100, 0)]), fake,
                  store=store)
    shifted = Query(queries[0].text, queries[0].documents, queries[0].answer, queries[0].answer_start + 1, 1)
    with pytest.raises(QuerySetError, match="1 answer span does not point at its answer"):
        run_sweep(Sweep(documents, [shifted], [SweepConfig(100, 0)]), fake, store=store)


@pytest.mark.slow
def test_sweep_command(shared_data, tmp_path, capsys):
    imported = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=2)
    write_import(imported, tmp_path / "docs")
    argv = ["sweep", str(tmp_path / "docs"), "--queries", str(tmp_path / "docs/queries.jsonl"), "--chunk-size",
            "100,200", "--overlap", "0,150", "--k", "1,5", "--embedder", "fake:32", "--store", str(tmp_path / "q"),
            "--mode", "dense"]
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert [(c["chunk_size"], c["overlap"]) for c in data["configs"]] == [(100, 0), (200, 0), (200, 150)]
    assert "chunk_size 100, overlap 150" in err and "searching" in err  # skipped note and progress on stderr
    assert data["embedder"] == "fake:32" and data["queries"] == len(imported.queries) and data["created_at"]
    row = data["configs"][0]
    assert set(row["metrics"]) >= {"hit@1", "hit@5", "recall@5", "precision@5", "mrr@5", "ndcg@5"}
    assert row["chunks"] > data["configs"][1]["chunks"] and set(row["seconds"]) == {
        "chunking", "embedding", "indexing", "searching"}
    assert data["best"]["by"] == "mrr@5"
    assert (tmp_path / "embedding-cache" / "embeddings.sqlite").exists()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("(reused)") == 3 and "Best by mrr@5: chunk_size" in out
    assert "are indistinguishable by mrr@5" in out or "every other configuration is worse" in out
    rows = [line.rstrip() for line in out.splitlines() if re.match(r"\s*\d+\s+\d+\s", line)]
    standing = [re.search(r"  (best|(tie|worse) \((p [=<] [\d.]+|too few differ)\))$", row) for row in rows]
    assert len(rows) == 3 and all(standing), rows  # every row says what it is
    marks = [place.group(1).split()[0] for place in standing]
    assert marks.count("best") == 1 and marks.count("tie") == len(data["ties"])
    assert main([*argv[:4], "--chunk-size", "100", "--overlap", "100", "--store", str(tmp_path / "q")]) == 1
    assert "No configuration is left" in capsys.readouterr().err


@pytest.mark.model
def test_sweep_with_the_local_model(xquad, tmp_path):
    documents, queries = xquad
    local = get_embedder("local:all-MiniLM-L6-v2")  # the faster model; e5 has tests of its own
    configs = [SweepConfig(100, 0), SweepConfig(200, 30)]
    store = open_store(path=str(tmp_path / "qdrant"))
    result = run_sweep(Sweep(documents, queries, configs, ks=[1, 5, 10]), local, store=store,
                       cache=EmbeddingCache(tmp_path / "cache"))
    assert result.embedder == "local:all-MiniLM-L6-v2" and len(result.results) == 2
    for row in result.results:
        # a random ranking finds the one answer chunk first with chance ~ documents/chunks; the model must beat it
        chance = 1 / row.chunks * 2
        assert row.metrics["mrr@10"] > 3 * chance
        assert row.metrics["hit@10"] >= row.metrics["hit@5"] >= row.metrics["hit@1"] > 0
    counting = Counting(local)
    again = run_sweep(Sweep(documents, queries, configs, ks=[1, 5, 10]), counting, store=store,
                      cache=EmbeddingCache(tmp_path / "cache"))
    assert all(r.reused for r in again.results) and counting.seen == []  # collections and the cache on disk
    for before, after in zip(result.results, again.results, strict=True):
        assert after.metrics == pytest.approx(before.metrics)


# ---- search modes ----------------------------------------------------------------------------------------


def make_old_sweep_collection(store, name: str, embedder, documents, config) -> None:
    """Create a sweep collection the way RAG Lab did before keyword vectors (dense only), holding these chunks."""
    from qdrant_client import models

    from rag.retrieval.records import vector_name

    meta = {"rag_lab": {"embedder": embedder.model_id, "dimension": embedder.dimension,
                        "vector": vector_name(embedder.model_id)}}
    params = models.VectorParams(size=embedder.dimension, distance=models.Distance.COSINE)
    store.client.create_collection(name, vectors_config={vector_name(embedder.model_id): params}, metadata=meta)
    for document in documents:
        chunks = chunk_document(document, config.chunk_size, config.overlap)
        vectors = embedder.embed_documents([c.content for c in chunks])
        store.upsert_document(name, document, chunks, vectors, config.settings, embedder)


@pytest.mark.slow
def test_sweep_modes_share_the_collection_and_rebuild_old_ones(xquad):
    documents, queries = xquad
    fake = Counting(get_embedder("fake:32"))
    store, config = open_store(":memory:"), SweepConfig(100, 0)
    name = collection_name([d.id for d in documents], config, fake.model_id)
    make_old_sweep_collection(store, name, fake.inner, documents, config)
    dense = run_sweep(Sweep(documents, queries, [config], ks=[1, 5]), fake, store=store)
    assert dense.results[0].reused and dense.modes == ["dense"]  # dense needs no keyword vectors: kept
    assert not next(c for c in store.collections() if c.name == name).sparse
    fake.seen.clear()
    both = run_sweep(Sweep(documents, queries, [config], ks=[1, 5], modes=["dense", "sparse"]), fake, store=store)
    first, second = both.results
    assert not first.reused and first.embedded > 0  # rebuilt: the old collection had no keyword vectors
    assert next(c for c in store.collections() if c.name == name).sparse
    assert (first.mode.label, second.mode.label) == ("dense", "sparse") and first.collection == second.collection
    assert first.metrics == pytest.approx(dense.results[0].metrics)
    assert second.seconds["embedding"] == second.seconds["indexing"] == 0.0 and second.embedded == 0
    assert second.seconds["searching"] > 0 and second.chunks == first.chunks
    assert second.metrics["hit@5"] > 0.3  # XQuAD questions share words with their paragraphs
    assert second.evaluation.per_query[0].hits[0].score_kind == "bm25"
    assert both.best().label.endswith(" search") and both.best().label in both.summary()
    assert [r["mode"] for r in both.table()] == ["dense", "sparse"]
    fake.seen.clear()
    keyword = run_sweep(Sweep(documents, queries, [config], ks=[1, 5], modes=["sparse"]), fake, store=store)
    assert fake.seen == [] and keyword.results[0].reused  # sparse embeds no query, the collection is kept
    assert keyword.results[0].metrics == second.metrics


@pytest.mark.slow
def test_sweep_command_with_modes(shared_data, tmp_path, capsys):
    imported = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=1)
    write_import(imported, tmp_path / "docs")
    argv = ["sweep", str(tmp_path / "docs"), "--queries", str(tmp_path / "docs/queries.jsonl"), "--chunk-size",
            "100,200", "--overlap", "0", "--k", "1,5", "--embedder", "fake:32", "--store", str(tmp_path / "q"),
            "--mode", "dense,sparse", "--no-cache"]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(c["chunk_size"], c["mode"], c["fusion"]) for c in data["configs"]] == [
        (100, "dense", None), (100, "sparse", None), (200, "dense", None), (200, "sparse", None)]
    assert data["modes"] == ["dense", "sparse"] and data["configs"][0]["collection"] == data["configs"][1]["collection"]
    assert data["best"]["mode"] in ("dense", "sparse")
    assert main([*argv[:-3], "--mode", "hybrid,dense", "--fusion", "dbsf"]) == 0
    out = capsys.readouterr().out
    assert "hybrid-dbsf" in out and "mode" in out.splitlines()[0].split() and out.count("(reused)") == 4
    with pytest.raises(SystemExit) as usage:
        main([*argv[:-3], "--mode", "dense,bm25"])
    assert usage.value.code == 2 and "unknown search mode 'bm25'" in capsys.readouterr().err


@pytest.mark.slow
def test_the_share_cut_by_the_model_and_hit_at_k_by_construction_are_said(xquad):
    documents, queries = xquad
    small = get_embedder("fake:32")
    small.max_input_tokens = 256  # a model that reads 256 tokens, like all-MiniLM-L6-v2
    result = run_sweep(Sweep(documents, queries, [SweepConfig(200, 0), SweepConfig(4000, 0)], ks=[1, 10]), small,
                       store=open_store(":memory:"), cache=EmbeddingCache())
    short, long = result.results
    assert short.cut_share == 0.0 and long.to_json()["cut_by_model"] == long.cut_share
    assert long.cut_share == pytest.approx(
        np.mean([small.count_tokens(c.content) > 256 for d in documents for c in chunk_document(d, 4000, 0)]))
    assert long.cut_share > 0.5 and {row["cut_by_model"] for row in result.table()} == {0.0, round(long.cut_share, 4)}
    only_long = run_sweep(Sweep(documents, queries, [SweepConfig(4000, 0)], ks=[1, 10]), small,
                          store=open_store(":memory:"), cache=EmbeddingCache())
    assert f"But {long.cut_share:.0%} of its chunks are longer than fake:32 reads" in only_long.summary()
    assert "longer than" not in run_sweep(Sweep(documents, queries, [SweepConfig(200, 0)], ks=[1, 10]), small,
                                          store=open_store(
        ":memory:"), cache=EmbeddingCache()).summary()
    assert long.chunks <= 10 < short.chunks  # each article is one 4000-token chunk
    assert result.notes() == [f"chunk_size 4000, overlap 0: {long.chunks} chunks, at most k = 10: every chunk is "
                              "returned, so hit@10 and recall@10 are 1 by construction, not by retrieval."]
    assert long.metrics["hit@10"] == 1.0


def test_the_sweep_grid_is_parsed_by_one_rule_for_the_page_and_the_cli():
    from rag.chunking.chunker import MIN_CHUNK_SIZE
    from rag.evaluation.sweeps.sweep import parse_chunk_sizes, parse_grid

    configs, skipped = parse_grid("400, 200,400", "0,300", "tokens")
    assert [(c.chunk_size, c.overlap, c.strategy) for c in configs] == [(400, 0, "tokens"), (400, 300, "tokens"),
                                                                         (200, 0, "tokens")]
    assert skipped == ["skipped chunk_size 200, overlap 300: overlap must be below chunk_size"]
    assert parse_grid([400], [0])[0] == parse_grid("400", "0")[0]  # the CLI's parsed flags give the same grid
    with pytest.raises(InvalidSettingsError, match=f"chunk sizes must be whole numbers >= {MIN_CHUNK_SIZE}"):
        parse_chunk_sizes(str(MIN_CHUNK_SIZE - 1))
    with pytest.raises(InvalidSettingsError, match="overlaps must be whole numbers >= 0.*'-5'"):
        parse_grid("200", "-5")
    with pytest.raises(InvalidSettingsError, match="No configuration is left"):
        parse_grid("100", "100")
