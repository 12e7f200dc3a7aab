"""rag.evaluation.metrics.modes: mode names, parsing, and what a collection without keyword vectors says."""

from __future__ import annotations

import pytest

from rag.errors import CollectionNotFoundError, SparseVectorsMissingError
from rag.evaluation.metrics.modes import SearchMode, parse_mode, parse_modes, require_keywords
from rag.retrieval.fusion import DEFAULT_FUSION
from rag.store.open import open_store
from tests.conftest import fake_embedder, ingest, make_document, make_foreign, make_old


def test_labels_and_fusion_only_for_hybrid():
    assert [m.label for m in parse_modes("dense, sparse,hybrid,hybrid-dbsf")] == [
        "dense", "sparse", f"hybrid-{DEFAULT_FUSION}", "hybrid-dbsf"]  # hybrid: the one default fusion
    assert parse_mode("hybrid", "dbsf") == SearchMode("hybrid", "dbsf")
    assert parse_mode("HYBRID-rrf", "dbsf") == SearchMode("hybrid", "rrf")  # the name's fusion wins
    assert SearchMode("dense", "dbsf") == SearchMode("dense") and SearchMode("dense", "dbsf").fusion_used is None
    assert SearchMode("hybrid", "dbsf").fusion_used == "dbsf"
    sparse = SearchMode("sparse")
    assert not sparse.needs_vectors and sparse.needs_keywords
    assert SearchMode().needs_vectors and not SearchMode().needs_keywords
    assert parse_modes(f"dense,hybrid,dense,hybrid-{DEFAULT_FUSION}") == [SearchMode(), SearchMode("hybrid")]
    assert parse_modes(["sparse", SearchMode()]) == [SearchMode("sparse"), SearchMode()]


@pytest.mark.parametrize("bad", ["semantic", "hybrid-sum", "", " , "])
def test_unknown_or_no_modes_are_refused(bad):
    with pytest.raises(ValueError, match="search mode|fusion"):
        parse_modes(bad)


def test_require_keywords_explains_old_foreign_and_missing_collections():
    store, embedder = open_store(":memory:"), fake_embedder(16)
    make_old(store, embedder)
    ingest(store, embedder, make_document())
    require_keywords(store, "documents", [SearchMode()])  # dense needs nothing
    with pytest.raises(SparseVectorsMissingError) as error:
        require_keywords(store, "documents", [SearchMode(), SearchMode("hybrid", "dbsf"), SearchMode("sparse")])
    message = str(error.value)
    assert "'documents'" in message and "made before keyword search" in message
    assert "hybrid-dbsf or sparse" in message and "Re-ingest" in message
    ingest(store, embedder, make_document(), collection="neu")
    require_keywords(store, "neu", [SearchMode("sparse")])
    with pytest.raises(CollectionNotFoundError, match="'missing'"):
        require_keywords(store, "missing", [SearchMode("sparse")])
    foreign = open_store(":memory:")
    make_foreign(foreign.client)
    with pytest.raises(SparseVectorsMissingError, match="not made by RAG Lab"):
        require_keywords(foreign, "documents", [SearchMode("hybrid")])
