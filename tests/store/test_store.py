"""rag.store.client against the real Qdrant engine: in memory, in a folder, across processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from rag.chunking.chunker import ChunkSettings
from rag.embeddings.fake import FakeEmbedder
from rag.errors import CollectionNotFoundError, EmbedderMismatchError, StoreError, StoreUnavailableError
from rag.retrieval import SearchRequest
from rag.retrieval.records import Hit, hit_from_point, point_id, vector_name
from rag.store import documents as store_documents
from rag.store.client import Store
from rag.store.open import open_store
from rag.store.versions import REGISTRY_ID
from tests.conftest import TEXT, fake_embedder, ingest, make_chunks, make_document, make_foreign

ROOT = Path(__file__).resolve().parents[2]


def all_ids(store: Store, collection: str = "documents") -> set[str]:
    """Return the ids of the collection's chunk points, read from the engine (the registry point left out)."""
    points, _ = store.client.scroll(collection, limit=10_000, with_payload=False)
    return {str(p.id) for p in points} - {REGISTRY_ID}


@pytest.fixture
def embedder() -> FakeEmbedder:
    return fake_embedder()


def test_vector_name_is_sanitised_model_id() -> None:
    assert vector_name("local:all-MiniLM-L6-v2") == "local-all-MiniLM-L6-v2"
    assert vector_name("openai:text-embedding-3-small") == "openai-text-embedding-3-small"


def test_ingest_writes_payload_and_reports_collection(store: Store, embedder: FakeEmbedder) -> None:
    document = make_document()
    count, settings = ingest(store, embedder, document)
    assert count == len(make_chunks(document, 60, 10)) > 3
    (info,) = store.collections()
    assert (info.name, info.points, info.embedder, info.dimension) == ("documents", count, "fake:16", 16)
    assert info.vectors == {"fake-16": 16} and not info.foreign
    assert store.collection_embedder("documents") == ("fake:16", 16)
    chunks = store.document_chunks("documents", "doc-a")
    assert [h.chunk_index for h in chunks] == list(range(count))
    first = chunks[0]
    assert first.score is None and first.content == document.text[first.start : first.end]
    assert first.chunk_id == point_id("doc-a", settings, 0, first.payload["generation"]) == first.payload["chunk_id"]
    assert first.heading_path == ("Kapitel 1",) and (first.page_start, first.page_end) == (1, 1)
    payload = first.payload
    assert payload["embedder"] == "fake:16" and payload["document_kind"] == "markdown"
    assert payload["document_pages"] == 1 and payload["heading_path"] == ["Kapitel 1"]
    assert (payload["chunk_size"], payload["overlap"], payload["strategy"]) == (60, 10, "tokens")
    assert payload["ingested_at"].endswith("+00:00")
    (doc,) = store.documents("documents")
    assert (doc.document_id, doc.title, doc.chunks, doc.pages) == ("doc-a", "richtlinie.md", count, 1)
    assert (doc.chunk_size, doc.overlap, doc.strategy, doc.embedder) == (60, 10, "tokens", "fake:16")


def test_new_collection_stores_keyword_vectors_next_to_dense(store: Store, embedder: FakeEmbedder) -> None:
    from rag.store import keywords

    count, _ = ingest(store, embedder, make_document())
    config = store.client.get_collection("documents").config
    assert config.params.sparse_vectors["bm25"].modifier == models.Modifier.IDF
    meta = config.metadata["rag_lab"]
    assert (meta["sparse"], meta["analyzer"], meta["language"]) == ("bm25", keywords.ANALYZER, "auto")
    analyzer = store.analyzer("documents")
    assert store.collections()[0].sparse
    points, _ = store.client.scroll("documents", limit=100, with_payload=True, with_vectors=True)
    points = [p for p in points if str(p.id) != REGISTRY_ID]
    assert len(points) == count
    for point in points:
        assert set(point.vector) == {"fake-16", "bm25"}
        indices, values = analyzer.document_vector(point.payload["content"], point.payload["language"])
        assert point.vector["bm25"].indices == indices and point.vector["bm25"].values == pytest.approx(values)
    hits = store.search("documents", embedder.embed_documents(["Passwörter"])[0], embedder, SearchRequest(top_k=3))
    assert [(h.score_kind, h.dense_rank, h.sparse_rank) for h in hits] == [("cosine", r, None) for r in (1, 2, 3)]
    assert all(h.dense_score == h.score for h in hits)


def test_same_document_twice_is_one_version(store: Store, embedder: FakeEmbedder) -> None:
    document = make_document()
    first, _ = ingest(store, embedder, document)
    ids = all_ids(store)
    second, _ = ingest(store, embedder, document)
    assert first == second == len(ids) == len(all_ids(store))
    assert not ids & all_ids(store)  # a new write replaced the old one whole
    hits = store.search("documents", embedder.embed_documents(["Passwörter"])[0], embedder, SearchRequest(top_k=50))
    assert len(hits) == second and store.registry("documents") == {}


def test_new_settings_replace_old_chunks(store: Store, embedder: FakeEmbedder) -> None:
    document = make_document()
    ingest(store, embedder, document, size=60)
    old_ids = all_ids(store)
    count, settings = ingest(store, embedder, document, size=90)
    new_ids = all_ids(store)
    assert len(new_ids) == count and not (old_ids & new_ids)
    assert {h.payload["chunk_size"] for h in store.document_chunks("documents", "doc-a")} == {90}
    (generation,) = {h.payload["generation"] for h in store.document_chunks("documents", "doc-a")}
    assert new_ids == {point_id("doc-a", settings, i, generation) for i in range(count)}


@pytest.mark.slow
def test_failed_batch_leaves_document_as_before(store: Store, embedder: FakeEmbedder, monkeypatch) -> None:
    document = make_document()
    ingest(store, embedder, document, size=60)
    before = {h.chunk_id: h.content for h in store.document_chunks("documents", "doc-a")}
    monkeypatch.setattr(store_documents, "UPSERT_BATCH", 2)
    real_upsert, calls = store.client.upsert, []

    def failing_upsert(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise sqlite3.OperationalError("database or disk is full")  # as the embedded engine raises it
        return real_upsert(*args, **kwargs)

    monkeypatch.setattr(store.client, "upsert", failing_upsert)
    with pytest.raises(StoreError, match="is full.*Nothing of 'richtlinie.md' was changed"):
        ingest(store, embedder, document, size=30)
    after = {h.chunk_id: h.content for h in store.document_chunks("documents", "doc-a")}
    assert after == before


def test_delete_document_and_collection(store: Store, embedder: FakeEmbedder) -> None:
    count_a, _ = ingest(store, embedder, make_document())
    count_b, _ = ingest(store, embedder, make_document(TEXT[:100], "doc-b", "kurz.md"))
    assert [d.document_id for d in store.documents("documents")] == ["doc-b", "doc-a"]  # by title
    assert store.delete_document("documents", "doc-a") == count_a
    assert store.delete_document("documents", "doc-a") == 0
    assert [d.document_id for d in store.documents("documents")] == ["doc-b"]
    assert store.collections()[0].points == count_b
    store.delete_collection("documents")
    assert not store.has_collection("documents") and store.collections() == []
    with pytest.raises(CollectionNotFoundError):
        store.delete_collection("documents")


def test_search_scores_filter_threshold_and_top_k(store: Store, embedder: FakeEmbedder) -> None:
    ingest(store, embedder, make_document())
    ingest(store, embedder, make_document("Ganz anderer Text über Katzen und Hunde im Garten.", "doc-b", "b.md"))
    query = embedder.embed_documents(["Mehrfaktor-Authentifizierung schützt Konten"])[0]
    hits = store.search("documents", query, embedder, SearchRequest(top_k=3))
    assert len(hits) == 3 and "Mehrfaktor" in hits[0].content
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and all(-1.0 <= s <= 1.0 + 1e-6 for s in scores)
    everything = store.search("documents", query, embedder, SearchRequest(top_k=1000))
    assert len(everything) == store.collections()[0].points
    only_b = store.search("documents", query, embedder, SearchRequest(top_k=10, document_ids=["doc-b"]))
    assert only_b and {h.document_id for h in only_b} == {"doc-b"}
    threshold = scores[1]
    above = store.search("documents", query, embedder, SearchRequest(top_k=10, score_threshold=threshold))
    assert above and all(h.score >= threshold - 1e-6 for h in above) and len(above) < len(everything)
    batch = store.search_batch("documents", np.vstack([query, query]), embedder, SearchRequest(top_k=3))
    assert [[h.chunk_id for h in hits]] * 2 == [[h.chunk_id for h in row] for row in batch]


def test_unknown_collection_lists_existing(store: Store, embedder: FakeEmbedder) -> None:
    ingest(store, embedder, make_document())
    with pytest.raises(CollectionNotFoundError, match="'nope'.*Existing: 'documents'"):
        store.search("nope", np.ones(16), embedder)
    with pytest.raises(CollectionNotFoundError):
        store.documents("nope")


def test_other_embedder_or_dimension_is_refused(store: Store, embedder: FakeEmbedder) -> None:
    ingest(store, embedder, make_document())
    other = fake_embedder(16, "ollama:nomic-embed-text")
    wider = fake_embedder(32, "fake:16")  # same id, other dimension
    with pytest.raises(EmbedderMismatchError, match="made by fake:16 \\(16 dimensions\\).*Pick fake:16"):
        store.search("documents", other.embed_documents(["x"])[0], other)
    with pytest.raises(EmbedderMismatchError, match="fake:16"):
        store.search("documents", wider.embed_documents(["x"])[0], wider)
    with pytest.raises(EmbedderMismatchError, match="ollama:nomic-embed-text"):
        ingest(store, other, make_document(doc_id="doc-b"))
    with pytest.raises(EmbedderMismatchError):
        ingest(store, wider, make_document(doc_id="doc-b"))
    assert [d.document_id for d in store.documents("documents")] == ["doc-a"]
    ingest(store, other, make_document(doc_id="doc-b"), collection="documents-nomic")
    assert store.collection_embedder("documents-nomic") == ("ollama:nomic-embed-text", 16)


def test_foreign_collection_is_searchable_not_writable(store: Store) -> None:
    make_foreign(store.client)
    (info,) = store.collections()
    assert info.foreign and info.embedder is None and info.dimension == 1536 and info.vectors == {"": 1536}
    assert store.collection_embedder("documents") == (None, 1536)
    big = fake_embedder(1536, "openai:text-embedding-3-small")
    hits = store.search("documents", big.embed_documents(["Passwörter lang"])[0], big, SearchRequest(top_k=5))
    assert len(hits) == 3 and hits[0].content == "Passwörter müssen lang sein."
    top = hits[0]
    assert top.document_id == top.document_title == "policy.pdf" and top.chunk_id == "0"
    assert (top.chunk_index, top.start, top.page_start, top.heading_path) == (None, None, None, ())
    assert top.payload == {"content": "Passwörter müssen lang sein.", "document_title": "policy.pdf", "chunk_id": 0}
    only = store.search("documents", big.embed_documents(["Passwörter"])[0], big,
                        SearchRequest(document_ids=["tiere.pdf"]))
    assert [h.document_title for h in only] == ["tiere.pdf"]
    docs = store.documents("documents")
    assert [(d.document_id, d.chunks, d.embedder) for d in docs] == [("policy.pdf", 2, None), ("tiere.pdf", 1, None)]
    assert [h.content for h in store.document_chunks("documents", "policy.pdf")][
        1
    ] == "Passwörter niemals protokollieren."
    with pytest.raises(EmbedderMismatchError, match="not made by RAG Lab.*1536"):
        store.search("documents", np.ones(16), fake_embedder(16))
    with pytest.raises(StoreError, match="not made by RAG Lab.*another collection"):
        ingest(store, big, make_document())
    assert store.collections()[0].points == 3


@pytest.mark.slow
def test_folder_persists_across_processes(tmp_path: Path, embedder: FakeEmbedder) -> None:
    folder = tmp_path / "qdrant"
    store = open_store(str(folder))
    assert open_store(str(folder)) is store  # one client per location
    count, _ = ingest(store, embedder, make_document())
    store.close()
    script = (
        "from rag.store import open_store; s = open_store(); "
        "print(s.collections()[0].points, s.documents('documents')[0].title)"
    )
    env = {"RAG_QDRANT_PATH": str(folder), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(count), "richtlinie.md"]


def test_folder_locked_in_same_process(tmp_path: Path) -> None:
    other = QdrantClient(path=str(tmp_path))
    try:
        with pytest.raises(StoreUnavailableError, match=f"{tmp_path}.*QDRANT_URL"):
            open_store(str(tmp_path))
    finally:
        other.close()
    open_store(str(tmp_path)).close()  # free again once the other client is gone


@pytest.mark.slow
def test_folder_locked_by_another_process(tmp_path: Path) -> None:
    script = (
        "import sys, time; from rag.store import open_store; "
        "open_store(sys.argv[1]); print('ok', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "ok"
        with pytest.raises(StoreUnavailableError, match="in use by another process"):
            open_store(str(tmp_path))
    finally:
        holder.kill()
        holder.wait()


def test_environment_selects_location(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAG_QDRANT_PATH", str(tmp_path / "env"))
    monkeypatch.delenv("QDRANT_URL", raising=False)
    store = open_store()
    try:
        assert store.location == str(tmp_path / "env") and store.local
    finally:
        store.close()
    monkeypatch.setenv("QDRANT_URL", "http://127.0.0.1:1")
    with pytest.raises(StoreUnavailableError, match="127.0.0.1:1"):
        open_store()


def test_server_down_fails_fast() -> None:
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError, match="http://127.0.0.1:1.*cannot be reached"):
        open_store(url="http://127.0.0.1:1")
    assert time.monotonic() - started < 15


def test_hit_from_missing_payload_fields() -> None:
    hit = hit_from_point(models.Record(id=7, payload={"content": "x"}), 0.5)
    assert hit == Hit(0.5, "x", "", "", "7", None, (), None, None, None, None)


def test_foreign_named_vectors_picked_by_dimension_or_name(store: Store) -> None:
    vectors = {
        "dense": models.VectorParams(size=8, distance="Cosine"),
        "small": models.VectorParams(size=4, distance="Cosine"),
    }
    store.client.create_collection("fremd", vectors_config=vectors)
    store.client.upsert(
        "fremd",
        [models.PointStruct(id=1, vector={"dense": [1.0] * 8, "small": [1.0] * 4}, payload={"content": "eins"})],
    )
    assert store.search("fremd", np.ones(8), fake_embedder(8))[0].content == "eins"
    assert store.search("fremd", np.ones(4), vector_name="small")[0].score == pytest.approx(1.0)
    with pytest.raises(EmbedderMismatchError, match="vector 'missing'"):
        store.search("fremd", np.ones(4), vector_name="missing")
    with pytest.raises(EmbedderMismatchError, match="dense: 8 dimensions, small: 4 dimensions"):
        store.search("fremd", np.ones(5))
    assert store.search_batch("fremd", np.ones((2, 8)), None, SearchRequest(top_k=1))[1][0].content == "eins"


def test_search_without_embedder_checks_dimension(store: Store, embedder: FakeEmbedder) -> None:
    ingest(store, embedder, make_document())
    vector = embedder.embed_documents(["Passwörter"])[0]
    assert len(store.search("documents", vector, None, SearchRequest(top_k=2))) == 2
    with pytest.raises(EmbedderMismatchError, match="made by fake:16"):
        store.search("documents", np.ones(8))
    assert store.search_batch("documents", np.zeros((0, 16)), embedder) == []


@pytest.mark.slow
def test_document_without_chunks_removes_old_ones(store: Store, embedder: FakeEmbedder) -> None:
    document = make_document()
    ingest(store, embedder, document)
    empty = np.zeros((0, 16), dtype=np.float32)
    assert store.upsert_document("documents", document, [], empty, ChunkSettings(), embedder) == 0
    assert store.document_chunks("documents", "doc-a") == [] and store.documents("documents") == []
