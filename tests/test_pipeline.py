"""rag.pipeline end to end on real files, the real Qdrant engine and the fake (or real) embedder."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from rag import pipeline
from rag.chunking import tokens
from rag.chunking.chunker import ChunkSettings
from rag.documents.loader import SourceFile
from rag.embeddings import get_embedder, pace
from rag.errors import EmbedderMismatchError, EmbeddingError, IngestCancelled, RagError
from rag.retrieval import SearchRequest


@pytest.fixture
def fake():
    return get_embedder("fake:32")


def source(shared_data, relative: str, password: str | None = None) -> SourceFile:
    path = shared_data / relative
    return SourceFile(path.name, path.read_bytes(), password)


def test_bad_files_are_reported_and_the_others_go_on(shared_data, store, fake):
    files = [source(shared_data, "pdfs/invalid.pdf"), source(shared_data, "pdfs/hausarbeit-jura.pdf"),
             source(shared_data, "pdfs/encrypted-file.pdf"), source(shared_data, "pdfs/c02-22.pdf"),
             SourceFile("empty.txt", b""), source(shared_data, "markdown/asvs-de-Using-ASVS.md")]
    results = pipeline.ingest(files, "documents", ChunkSettings(300, 50), fake, store=store)
    by_name = {r.filename: r for r in results}
    assert [r.ok for r in results] == [False, True, False, False, False, True]
    assert by_name["invalid.pdf"].error_type == "CorruptDocumentError"
    assert by_name["encrypted-file.pdf"].needs_password and "password" in by_name["encrypted-file.pdf"].error
    assert by_name["c02-22.pdf"].error_type == "NoTextLayerError" and "OCR" in by_name["c02-22.pdf"].error
    assert by_name["empty.txt"].error_type == "EmptyDocumentError"
    good = by_name["hausarbeit-jura.pdf"]
    assert good.pages == 8 and good.chunks > 5 and good.characters > 5000
    assert set(good.stage_seconds) == {"extract", "chunk", "embed", "store"}
    titles = {d.title: d for d in store.documents("documents")}
    assert set(titles) == {"hausarbeit-jura.pdf", "asvs-de-Using-ASVS.md"}
    assert titles["hausarbeit-jura.pdf"].chunks == good.chunks


def test_encrypted_pdf_retried_with_its_password(shared_data, store, fake):
    wrong = pipeline.ingest([source(shared_data, "pdfs/encrypted-file.pdf", "nope")], "c", embedder=fake, store=store)
    assert not wrong[0].ok and wrong[0].needs_password and "wrong" in wrong[0].error.lower()
    right = pipeline.ingest([source(shared_data, "pdfs/encrypted-file.pdf", "test")], "c", embedder=fake, store=store)
    assert right[0].ok and right[0].chunks >= 1


def test_progress_reports_every_stage_with_counts(shared_data, store, fake):
    events = []
    pipeline.ingest([source(shared_data, "markdown/asvs-de-V2-Authentication.md")], "c", ChunkSettings(100, 10),
                    fake, store=store, progress=events.append)
    stages = [e.stage for e in events]
    assert stages[0] == "extract" and stages[-1] == "done"
    assert [s for s in dict.fromkeys(stages)] == ["extract", "chunk", "embed", "store", "done"]
    embeds = [e for e in events if e.stage == "embed"]
    assert len(embeds) > 1 and embeds[-1].done == embeds[-1].total > pace.FIRST_BATCH


@pytest.mark.slow
def test_reingest_is_idempotent_and_new_settings_replace(shared_data, store, fake):
    pdf = source(shared_data, "pdfs/hausarbeit-jura.pdf")
    first = pipeline.ingest([pdf], "c", ChunkSettings(200, 20), fake, store=store)[0]
    again = pipeline.ingest([pdf], "c", ChunkSettings(200, 20), fake, store=store)[0]
    assert first.chunks == again.chunks == store.collections()[0].points
    bigger = pipeline.ingest([pdf], "c", ChunkSettings(600, 80), fake, store=store)[0]
    assert bigger.chunks < first.chunks
    assert store.collections()[0].points == bigger.chunks
    (info,) = store.documents("c")
    assert (info.chunk_size, info.overlap) == (600, 80)


class FailingEmbedder:
    """The fake embedder that fails on its second batch, like a server dying mid-document."""

    def __init__(self):
        self.inner, self.calls = get_embedder("fake:32"), 0
        self.model_id, self.dimension, self.max_input_tokens = "fake:32", 32, self.inner.max_input_tokens
        self.query_prompt = self.document_prompt = ""

    def count_tokens(self, text):
        return self.inner.count_tokens(text)

    def embed_query(self, texts):
        return self.inner.embed_query(texts)

    def embed_documents(self, texts):
        self.calls += 1
        if self.calls == 2:
            raise EmbeddingError("server went away")
        return self.inner.embed_documents(texts)


def test_failure_mid_document_writes_nothing_of_it(shared_data, store):
    files = [source(shared_data, "markdown/asvs-de-V2-Authentication.md"), source(shared_data, "pdfs/crazyones.pdf")]
    results = pipeline.ingest(files, "c", ChunkSettings(60, 0), FailingEmbedder(), store=store)
    assert not results[0].ok and "server went away" in results[0].error
    assert results[1].ok
    assert [d.title for d in store.documents("c")] == ["crazyones.pdf"]


def test_search_uses_the_collections_own_embedder(shared_data, store, fake):
    pipeline.ingest([source(shared_data, "markdown/asvs-de-V2-Authentication.md")], "c", ChunkSettings(200, 20),
                    fake, store=store)
    hits = pipeline.search("Passwort Länge Zeichen", "c", SearchRequest(top_k=5), store=store)
    assert len(hits) == 5
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.document_title == "asvs-de-V2-Authentication.md" and h.content for h in hits)
    with pytest.raises(EmbedderMismatchError, match="fake:32"):
        pipeline.search("Passwort", "c", store=store, embedder=get_embedder("fake:16"))
    with pytest.raises(RagError, match="empty"):
        pipeline.search("  ", "c", store=store)


def test_mismatched_embedder_is_refused_before_anything_is_embedded(shared_data, store, fake, monkeypatch):
    pipeline.ingest([source(shared_data, "pdfs/crazyones.pdf")], "c", embedder=fake, store=store)
    other, calls = get_embedder("fake:16"), []
    monkeypatch.setattr(other, "embed_documents", lambda texts: calls.append(texts))
    with pytest.raises(EmbedderMismatchError, match="made by fake:32"):
        pipeline.ingest([source(shared_data, "pdfs/hausarbeit-jura.pdf")], "c", embedder=other, store=store)
    assert calls == []


def test_foreign_collection_needs_an_embedder(store):
    from qdrant_client import models

    store.client.create_collection("documents", models.VectorParams(size=32, distance=models.Distance.COSINE))
    vector = get_embedder("fake:32").embed_documents(["Kündigung des Vertrags"])[0]
    store.client.upsert("documents", [models.PointStruct(id=1, vector=vector.tolist(), payload={
        "content": "Kündigung des Vertrags", "document_title": "alt.pdf", "chunk_id": "alt-1"})])
    with pytest.raises(EmbedderMismatchError, match="not made by RAG Lab"):
        pipeline.search("Kündigung", "documents", store=store)
    (hit,) = pipeline.search("Kündigung", "documents", store=store, embedder=get_embedder("fake:32"))
    assert hit.document_title == "alt.pdf" and hit.content == "Kündigung des Vertrags" and hit.score > 0.5


def test_retrieve_builds_context_within_budget_on_german_text(shared_data, store, fake):
    pipeline.ingest([source(shared_data, "markdown/asvs-de-V2-Authentication.md"),
                     source(shared_data, "pdfs/hausarbeit-jura.pdf")], "c", ChunkSettings(300, 60), fake, store=store)
    for budget in (400, 1000, 3000):
        context = pipeline.retrieve("Passwörter und Authentifizierung", "c", SearchRequest(top_k=10), budget,
                                    store=store)
        assert context.token_count == tokens.count(context.text) <= budget
        assert context.text.startswith("[Quelle 1: ")
        assert len(context.sources) == len(context.included)
        assert len(context.included) + len(context.dropped) == 10


def test_embed_chunks_reports_progress_and_shape(fake):
    seen = []
    texts = [f"Text {i} " + "Wort " * (i % 17) for i in range(130)]  # lengths vary: batches are re-ordered
    vectors = pace.embed_chunks(texts, fake, seen.append)
    assert vectors.shape == (130, 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, fake.embed_documents(texts), rtol=1e-6)  # row i is still the vector of text i
    assert seen[0] == pace.FIRST_BATCH and seen[-1] == 130 and seen == sorted(seen)
    assert max(b - a for a, b in zip([0, *seen], seen, strict=False)) <= 64  # a fast embedder gets requests of 64


class Slow:
    """The fake embedder on a fake clock: each text takes `per_text` seconds; what it was asked is recorded."""

    def __init__(self, per_text: float, on_call=None):
        self.inner, self.per_text, self.on_call = get_embedder("fake:16"), per_text, on_call
        self.now, self.calls = 0.0, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def clock(self) -> float:
        return self.now

    def embed_documents(self, texts):
        self.calls.append(len(texts))
        if self.on_call:
            self.on_call(len(self.calls))
        self.now += self.per_text * len(texts)
        return self.inner.embed_documents(texts)


def test_a_slow_model_gets_calls_of_about_a_second_and_a_cancel_waits_for_one_at_most():
    texts = [f"Satz {i:03d} über die Kündigungsfrist." for i in range(40)]  # all of one length
    slow = Slow(per_text=0.25)  # 4 texts a second, as the e5 model on a busy core
    vectors = pace.embed_chunks(texts, slow, clock=slow.clock)
    np.testing.assert_allclose(vectors, slow.inner.embed_documents(texts), rtol=1e-6)
    assert slow.calls == [2] + [4] * 9 + [2]  # the first call is small, then one second's worth each
    cancelled = []

    def progress(done: int) -> None:  # what ingest's report does once Cancel was pressed
        if cancelled:
            raise IngestCancelled("cancelled")

    slow = Slow(per_text=0.25, on_call=lambda n: n == 3 and cancelled.append(True))  # Cancel during the 3rd call
    with pytest.raises(IngestCancelled):
        pace.embed_chunks(texts, slow, progress, clock=slow.clock)
    assert slow.calls == [2, 4, 4]  # the call under way ends; none starts after it


def test_cancel_during_embedding_starts_no_other_call_and_stores_nothing(store):
    asked = []
    slow = Slow(per_text=0.0, on_call=lambda n: n == 2 and asked.append(True))
    text = "# Frist\n\n" + "".join(f"Die Kündigungsfrist {i} beträgt drei Monate zum Quartal. " for i in range(200))
    (result,) = pipeline.ingest([SourceFile("frist.md", text.encode())], "c", ChunkSettings(100, 10), slow,
                                store=store, cancel=lambda: bool(asked))
    assert result.error_type == "IngestCancelled" and len(slow.calls) == 2
    assert not store.has_collection("c") or store.documents("c") == []


def test_ingest_progress_estimates_the_time_left_once_a_batch_was_timed(shared_data, store, fake):
    events = []
    files = [source(shared_data, "markdown/asvs-de-V2-Authentication.md"), source(shared_data, "pdfs/crazyones.pdf")]
    pipeline.ingest(files, "c", ChunkSettings(100, 10), fake, store=store, progress=events.append)
    first = [e for e in events if e.file_index == 0]
    assert first[0].stage == "extract" and first[0].seconds_left is None  # nothing measured yet
    embedding = [e for e in first if e.stage == "embed" and 0 < e.done < e.total]  # at the end: the store, unmeasured
    # chunk texts the embedding cache held are done before any batch is timed: from the first estimate on, every
    # event has one
    timed = [i for i, e in enumerate(embedding) if e.seconds_left is not None]
    assert timed and all(e.seconds_left is not None and e.seconds_left >= 0 for e in embedding[timed[0]:])
    second = [e for e in events if e.file_index == 1 and e.stage == "extract"][0]
    assert second.seconds_left > 0  # the unread PDF is estimated by its size at the first file's characters per byte


@pytest.mark.model
def test_real_model_finds_the_section_of_a_real_pdf(shared_data, store):
    local = get_embedder("local")
    results = pipeline.ingest([source(shared_data, "pdfs/hausarbeit-jura.pdf")], "c", ChunkSettings(200, 30),
                              local, store=store)
    assert results[0].ok
    hits = pipeline.search("Einbindung von Literatur mit biblatex", "c", SearchRequest(top_k=3), store=store)
    assert any("Literatur" in h.heading_path[-1] for h in hits if h.heading_path), [h.heading_path for h in hits]
    assert 0 < hits[0].score <= 1


class NoEmbedder:
    """An embedder that must not be called: keyword (sparse) search embeds nothing."""

    model_id, dimension, max_input_tokens = "fake:32", 32, 512

    def embed(self, texts):
        raise AssertionError("sparse search embedded the query")


def test_search_modes_on_a_german_document(shared_data, store, fake):
    pipeline.ingest([source(shared_data, "markdown/asvs-de-V2-Authentication.md")], "c", ChunkSettings(200, 20),
                    fake, store=store)
    keyword = pipeline.search("2.1.1", "c", SearchRequest(top_k=3, mode="sparse"), store=store, embedder=NoEmbedder())
    assert "**2.1.1**" in keyword[0].content and keyword[0].score_kind == "bm25"
    assert [h.sparse_rank for h in keyword] == list(range(1, len(keyword) + 1))
    hybrid = pipeline.search("Passwörter mindestens 12 Zeichen", "c", SearchRequest(top_k=5, mode="hybrid"),
                             store=store)
    assert len(hybrid) == 5 and {h.score_kind for h in hybrid} == {"convex"}  # the default fusion
    assert [h.score for h in hybrid] == sorted((h.score for h in hybrid), reverse=True)
    assert all(h.dense_rank or h.sparse_rank for h in hybrid)
    dbsf = pipeline.search("Passwörter mindestens 12 Zeichen", "c",
                           SearchRequest(top_k=5, mode="hybrid", fusion="dbsf"), store=store)
    assert {h.score_kind for h in dbsf} == {"dbsf"}
    with pytest.raises(RagError, match="only stop words"):
        pipeline.search("und die der", "c", SearchRequest(mode="sparse"), store=store)
    with pytest.raises(RagError, match="Unknown search mode"):
        pipeline.search("Passwort", "c", SearchRequest(mode="bm25"), store=store)
    context = pipeline.retrieve("2.1.1 Passwortlänge", "c", SearchRequest(top_k=4, mode="hybrid"), 1000, store=store)
    assert context.included and context.included[0].score_kind == "convex"
    assert context.to_dict()["included"][0]["score_kind"] == "convex"


def test_the_public_api_runs_the_pipeline_from_import_rag(tmp_path):
    import rag

    doc = tmp_path / "richtlinie.md"
    doc.write_text("# Kündigung\n\nDie Kündigungsfrist beträgt drei Monate zum Quartalsende.\n", encoding="utf-8")
    store = rag.open_store(path=":memory:")
    embedder = rag.get_embedder("fake:32")
    [result] = rag.ingest([rag.SourceFile(doc.name, path=doc)], "documents", embedder=embedder, store=store)
    assert result.ok and result.chunks == 1
    context = rag.retrieve("Kündigungsfrist", "documents", store=store, embedder=embedder)
    assert context.text.startswith("[Quelle 1: richtlinie.md") and "drei Monate" in context.text
    with pytest.raises(rag.QueryError):
        rag.search("   ", "documents", store=store, embedder=embedder)
    assert issubclass(rag.QueryError, rag.RagError)


def test_import_rag_stays_cheap():
    """A PDF worker imports rag.documents; rag's API must not pull Qdrant's client in with it."""
    code = "import sys, rag, rag.documents.pdf; print('qdrant_client' in sys.modules, 'rag.pipeline' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "False"], done.stderr
