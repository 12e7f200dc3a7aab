"""rag.reports.embedding_map: PCA by hand, seeded sampling, the map of a real collection with its query and hits."""

from __future__ import annotations

import numpy as np
import pytest

from rag import pipeline
from rag.embeddings import get_embedder
from rag.errors import RagError
from rag.reports.embedding_map import available_methods, embedding_map, normalised, pca, preview, sample_ids
from rag.retrieval import SearchRequest
from rag.store.open import open_store
from tests.conftest import PARAGRAPHS, fake_embedder, make_foreign


def test_pca_of_a_known_matrix_up_to_sign():
    # centred already; variance 2 along y, 0.5 along x: the first component is y, carrying 8 / (8 + 2) of it
    matrix = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 2.0], [0.0, -2.0]])
    projection = pca(matrix)
    assert np.allclose(np.abs(projection.components), [[0, 1], [1, 0]])
    assert np.allclose(projection.explained, [0.8, 0.2])
    coords = projection.project(matrix)
    assert np.allclose(np.abs(coords), [[0, 1], [0, 1], [2, 0], [2, 0]])
    assert np.allclose(projection.components, [[0, 1], [1, 0]])  # the sign rule: largest loading positive
    shifted = pca(matrix + [5.0, -3.0])  # the mean is removed first
    assert np.allclose(shifted.project(matrix + [5.0, -3.0]), coords)


def test_pca_of_a_line_and_of_too_few_points():
    line = np.array([[t, 2 * t, 0.0] for t in (-2.0, -1.0, 0.5, 2.5)])
    projection = pca(line)
    assert np.allclose(np.abs(projection.components[0]), np.array([1, 2, 0]) / np.sqrt(5))
    assert projection.explained[0] == pytest.approx(1.0) and projection.explained[1] == pytest.approx(0.0)
    single = pca(np.array([[0.3, 0.4]]))
    assert np.allclose(single.project(np.array([[0.3, 0.4]])), [[0.0, 0.0]]) and not single.explained.any()


def test_sampling_is_seeded_and_says_so():
    ids = [f"id-{i:03d}" for i in range(100)]
    first, sampled = sample_ids(list(reversed(ids)), 10)
    assert sampled and len(first) == len(set(first)) == 10 and set(first) <= set(ids)
    assert sample_ids(ids, 10) == (first, True)  # the same sample whatever order the ids came in
    assert sample_ids(ids, 10, seed=1)[0] != first
    assert sample_ids(ids[:5], 10) == (sorted(ids[:5]), False)


def test_helpers():
    assert preview("  Ein\n\nlanger   Text " + "x" * 100) == "Ein langer Text " + "x" * 63 + "…"
    assert len(preview("y" * 200)) == 80 and preview("kurz") == "kurz"
    assert np.allclose(normalised(np.array([[3.0, 4.0], [0.0, 0.0]])), [[0.6, 0.8], [0.0, 0.0]])
    assert available_methods()[0] == "pca"


def test_map_of_a_collection_with_query_and_hits(collection):
    query = PARAGRAPHS["wien.txt"][2]
    m = embedding_map(collection, "c", get_embedder("fake:64"), request=SearchRequest(top_k=2), query=query)
    assert m.total == 6 and len(m.points) == 6 and not m.sampled and m.notes == () and m.method == "pca"
    assert [(p.document_title, p.chunk_index) for p in m.points] == [
        ("berlin.txt", 0), ("berlin.txt", 1), ("berlin.txt", 2), ("wien.txt", 0), ("wien.txt", 1), ("wien.txt", 2)]
    hits = pipeline.search(query, "c", SearchRequest(top_k=2), store=collection, embedder=get_embedder("fake:64"))
    assert sorted(p.hit_rank for p in m.points if p.is_hit) == [1, 2]
    best = next(p for p in m.points if p.hit_rank == 1)
    assert (best.document_title, best.chunk_index) == (hits[0].document_title, hits[0].chunk_index)
    # the query is the text of its best hit: the fake embedder gives the same vector, so the same place
    assert m.query_point == pytest.approx((best.x, best.y), abs=1e-6)
    assert best.preview == query and all(len(p.preview) <= 80 for p in m.points)
    assert 0 < m.explained[1] <= m.explained[0] <= 1
    again = embedding_map(collection, "c", get_embedder("fake:64"), request=SearchRequest(top_k=2), query=query)
    assert again.points == m.points and again.query_point == m.query_point
    assert {"x", "y", "document_title", "heading", "chunk_index", "preview", "is_hit"} <= set(m.rows()[0])


def test_sampled_map_keeps_the_hits_and_says_so(collection):
    query = PARAGRAPHS["berlin.txt"][1]
    m = embedding_map(collection, "c", get_embedder("fake:64"), request=SearchRequest(top_k=3), query=query, sample=2)
    hits = [p for p in m.points if p.is_hit]
    assert m.sampled and m.total == 6 and len(hits) == 3 and 3 <= len(m.points) <= 5
    assert m.notes[0].startswith("Showing a random sample of 2 of 6 chunks (seed 0)")
    plain = embedding_map(collection, "c", sample=3)  # no query: no embedder needed
    assert plain.sampled and len(plain.points) == 3 and plain.query_point is None and not any(
        p.is_hit for p in plain.points)
    assert embedding_map(collection, "c", sample=3).points == plain.points


def test_nonlinear_methods_and_errors(collection):
    if "tsne" in available_methods():
        m = embedding_map(collection, "c", get_embedder("fake:64"), request=SearchRequest(top_k=1), query="Wien",
                          method="tsne")
        assert m.method == "tsne" and len(m.points) == 6 and m.query_point is not None and "distorts" in m.notes[0]
        few = embedding_map(collection, "c", method="tsne", sample=3)
        assert few.method == "pca" and "too few" in few.notes[0]
    if "umap" not in available_methods():
        with pytest.raises(RagError, match="pip install umap-learn"):
            embedding_map(collection, "c", method="umap")
    with pytest.raises(RagError, match="Unknown map method 'mds'"):
        embedding_map(collection, "c", method="mds")


def test_foreign_collection_map():
    store = open_store(":memory:")
    make_foreign(store.client)  # unnamed 1536-dim vectors, chunk ids that are not the point ids
    big = fake_embedder(1536, "openai:text-embedding-3-small")
    m = embedding_map(store, "documents", big, request=SearchRequest(top_k=1), query="Passwörter lang")
    assert m.total == 3 and len(m.points) == 3 and sum(p.is_hit for p in m.points) == 1
    assert {p.document_title for p in m.points} == {"policy.pdf", "tiere.pdf"}


def test_a_document_under_one_title_is_split_by_its_next_heading_level():
    from rag.reports.embedding_map import split_headings

    chunks = [("a", ("Handbuch",)), ("a", ("Handbuch", "Installation")), ("a", ("Handbuch", "Betrieb", "Backup")),
              ("b", ()), ("b", ("Teil 1", "x")), ("b", ("Teil 2",)), ("c", ("Nur", "eins"))]
    assert split_headings(chunks) == ["Handbuch", "Installation", "Betrieb", "", "Teil 1", "Teil 2", "Nur"]
