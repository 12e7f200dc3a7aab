"""What RAG Lab relies on in qdrant-edge-py (pinned 0.9.0), through rag.store.edge: an upgrade runs these first.

Each test uses the real engine in a tmp folder and checks one behaviour Store depends on against a reference
computed here (numpy for scores, Python for filters and fusion), not against the engine's own answers.
"""

from __future__ import annotations

import importlib.metadata
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import models

from rag.store.edge import EdgeClient, api
from rag.store.edge.client import FolderInUseError

ROOT = Path(__file__).resolve().parents[2]
DIM = 8


@pytest.fixture
def client(tmp_path: Path):
    edge = EdgeClient(str(tmp_path / "q"))
    yield edge
    edge.close()


def vectors(n: int, seed: int = 0) -> np.ndarray:
    m = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def fill(client: EdgeClient, n: int = 50) -> tuple[list[str], np.ndarray]:
    client.create_collection("c", vectors_config={"d": models.VectorParams(size=DIM, distance="Cosine")},
                             sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
                             metadata={"rag_lab": {"embedder": "x", "vector": "d"}})
    ids, m = [str(uuid.UUID(int=i + 1)) for i in range(n)], vectors(n)
    keyword = [models.SparseVector(indices=[i % 5, 100], values=[1.0 + i / 100, 0.5]) for i in range(n)]  # no ties
    points = [models.PointStruct(id=ids[i], vector={"d": m[i].tolist(), "bm25": keyword[i]},
                                 payload={"document_id": f"doc{i % 3}", "chunk_index": i,
                                          "flags": ["toc"] if i % 7 == 0 else []})
              for i in range(n)]
    client.upsert("c", points)
    return ids, m


def test_the_installed_engine_is_the_pinned_one():
    pinned = [line.split("==")[1].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
              if line.startswith("qdrant-edge-py==")]
    assert pinned == [api.VERSION] == [importlib.metadata.version("qdrant-edge-py")]


def test_collections_keep_vectors_metadata_and_disappear_whole(client: EdgeClient, tmp_path: Path):
    fill(client)
    config = client.get_collection("c").config
    assert config.params.vectors["d"].size == DIM
    assert config.params.sparse_vectors["bm25"].modifier == models.Modifier.IDF
    assert config.metadata == {"rag_lab": {"embedder": "x", "vector": "d"}}
    client.update_collection("c", metadata={"rag_lab": {"embedder": "y"}})
    client.close()
    again = EdgeClient(str(tmp_path / "q"))  # everything read back from disk
    try:
        assert again.get_collection("c").config.metadata == {"rag_lab": {"embedder": "y"}}
        assert [c.name for c in again.get_collections().collections] == ["c"] and again.count("c").count == 50
        assert again.delete_collection("c") and not again.collection_exists("c")
        assert os.listdir(tmp_path / "q" / "edge") == []
    finally:
        again.close()


def test_exact_dense_search_is_numpy_cosine_with_filters(client: EdgeClient):
    ids, m = fill(client)
    query = vectors(1, seed=9)[0]
    flt = models.Filter(must=[models.FieldCondition(key="document_id", match=models.MatchAny(any=["doc0", "doc1"]))],
                        must_not=[models.FieldCondition(key="flags", match=models.MatchAny(any=["toc"]))])
    (response,) = client.query_batch_points("c", [models.QueryRequest(query=query.tolist(), using="d", filter=flt,
                                                                      limit=5, with_payload=True)])
    allowed = [i for i in range(len(ids)) if i % 3 != 2 and i % 7 != 0]
    expected = sorted(allowed, key=lambda i: -float(m[i] @ query))[:5]
    assert [p.id for p in response.points] == [ids[i] for i in expected]
    assert [p.score for p in response.points] == pytest.approx([float(m[i] @ query) for i in expected], abs=1e-5)
    assert all(isinstance(p.id, str) and p.payload["chunk_index"] in expected for p in response.points)


def test_sparse_search_weighs_rare_terms_by_idf_and_fusion_matches_rrf(client: EdgeClient):
    ids, m = fill(client)
    sparse = models.SparseVector(indices=[3], values=[1.0])  # term 3: every fifth point
    (hits,) = client.query_batch_points("c", [models.QueryRequest(query=sparse, using="bm25", limit=50)])
    assert {p.id for p in hits.points} == {ids[i] for i in range(50) if i % 5 == 3}
    query = vectors(1, seed=3)[0]
    prefetch = [models.Prefetch(query=query.tolist(), using="d", limit=20), models.Prefetch(query=sparse, using="bm25",
                                                                                            limit=20)]
    weighted = models.RrfQuery(rrf=models.Rrf(k=2, weights=[1.0, 1.0]))
    fused, plain = client.query_batch_points("c", [
        models.QueryRequest(prefetch=prefetch, query=weighted, limit=5),
        models.QueryRequest(prefetch=prefetch, query=models.FusionQuery(fusion=models.Fusion.RRF), limit=5)])
    dense = sorted(range(50), key=lambda i: -float(m[i] @ query))[:20]
    keyword = [i for i in range(50) if i % 5 == 3]
    keyword_ranked = [p.id for p in hits.points][:20]
    score = {ids[i]: 1 / (r + 2) for r, i in enumerate(dense)}
    for r, point_id in enumerate(keyword_ranked):
        score[point_id] = score.get(point_id, 0) + 1 / (r + 2)
    top = sorted(score.values(), reverse=True)[:5]
    assert [p.score for p in plain.points] == pytest.approx(top, abs=1e-6)
    assert [p.score for p in fused.points] == pytest.approx(top, abs=1e-6)
    assert len(keyword) == 10


def test_scroll_pages_count_retrieve_and_payload_updates(client: EdgeClient):
    ids, m = fill(client)
    seen, offset = [], None
    while True:
        page, offset = client.scroll("c", limit=7, offset=offset, with_payload=models.PayloadSelectorExclude(
            exclude=["flags"]), with_vectors=False)
        seen += page
        if offset is None:
            break
    assert sorted(p.id for p in seen) == sorted(ids) and all("flags" not in p.payload for p in seen)
    no_toc = models.Filter(must_not=[models.FieldCondition(key="flags", match=models.MatchAny(any=["toc"]))])
    assert client.count("c", count_filter=no_toc).count == 50 - 8
    client.set_payload("c", {"generation": "g1"}, points=ids[:3])
    client.delete_payload("c", ["chunk_index"], points=ids[:1])
    (first,) = client.retrieve("c", [ids[0]], with_payload=True, with_vectors=["d"])
    assert first.payload["generation"] == "g1" and "chunk_index" not in first.payload
    assert first.vector["d"] == pytest.approx(m[0].tolist(), abs=1e-6)
    empty = models.Filter(must=[models.IsEmptyCondition(is_empty=models.PayloadField(key="generation"))])
    assert client.count("c", count_filter=empty).count == 47
    client.delete("c", models.PointIdsList(points=ids[:2]))
    client.delete("c", models.FilterSelector(filter=models.Filter(must=[models.HasIdCondition(has_id=[ids[2]])])))
    assert client.count("c").count == 47 and client.retrieve("c", ids[:3]) == []


def test_a_point_without_vectors_and_an_unnamed_vector_collection(client: EdgeClient):
    fill(client)
    registry = str(uuid.uuid4())
    client.upsert("c", [models.PointStruct(id=registry, vector={}, payload={"reg": 1})])
    assert client.retrieve("c", [registry])[0].payload == {"reg": 1}
    client.create_collection("u", vectors_config=models.VectorParams(size=DIM, distance="Cosine"))
    client.upsert("u", [models.PointStruct(id=7, vector=[1.0] * DIM, payload={"a": 1})])
    (hit,) = client.query_points("u", query=[1.0] * DIM, limit=3, with_vectors=True).points
    assert (hit.id, round(hit.score, 5)) == (7, 1.0)  # cosine: stored normalised, as by Qdrant server
    assert hit.vector == pytest.approx([DIM**-0.5] * DIM, abs=1e-6)


def test_unsupported_requests_are_refused_not_half_translated(client: EdgeClient):
    fill(client)
    geo = models.FieldCondition(key="x", geo_radius=models.GeoRadius(center=models.GeoPoint(lon=0, lat=0), radius=1))
    with pytest.raises(ValueError, match="does not support"):
        client.count("c", count_filter=models.Filter(must=[geo]))


def test_one_process_holds_a_folder(client: EdgeClient, tmp_path: Path):
    with pytest.raises(FolderInUseError, match="already accessed"):
        EdgeClient(str(tmp_path / "q"))


KILLED_WRITER = """
import os, signal, sys, uuid
from qdrant_client import models
from rag.store.edge import EdgeClient
client = EdgeClient(sys.argv[1])
client.create_collection("c", vectors_config={"d": models.VectorParams(size=4, distance="Cosine")})
for batch in range(5):
    client.upsert("c", [models.PointStruct(id=batch * 100 + i, vector={"d": [1.0, i, 0, 1]}, payload={"b": batch})
                        for i in range(100)])
os.kill(os.getpid(), signal.SIGKILL)  # no close, no flush: only the write-ahead log has the points
"""


@pytest.mark.crash
def test_points_written_before_a_kill_9_are_there_on_the_next_open(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(tmp_path / "q")], env=env, capture_output=True,
                          timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    again = EdgeClient(str(tmp_path / "q"))  # the lock died with the process
    try:
        assert again.count("c").count == 500
        assert again.retrieve("c", [499])[0].payload == {"b": 4}
    finally:
        again.close()


def test_keyword_scores_do_not_count_deleted_points(tmp_path: Path):
    """Qdrant's IDF counts deleted points until their segment is vacuumed: after deleting, a collection must score
    as one made without those points (else a re-ingested document changes every keyword score)."""
    query = models.SparseVector(indices=[1, 3], values=[1.0, 1.0])
    keyword = {"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)}
    scores = {}
    for name, deleted in (("deleted", True), ("fresh", False)):
        client = EdgeClient(str(tmp_path / name))
        client.create_collection("c", vectors_config={"d": models.VectorParams(size=DIM, distance="Cosine")},
                                 sparse_vectors_config=keyword)
        m = vectors(20)
        points = [models.PointStruct(id=i + 1, vector={"d": m[i].tolist(), "bm25": models.SparseVector(
            indices=[1, 2 + i % 3], values=[1.0, 1.0])}) for i in range(20)]
        client.upsert("c", points if deleted else points[3:])
        if deleted:
            client.delete("c", models.PointIdsList(points=[1, 2, 3]))
        found = client.query_points("c", query=query, using="bm25", limit=20).points
        scores[name] = sorted(round(p.score, 5) for p in found)
        client.close()
    assert scores["deleted"] == scores["fresh"]
