"""A chunk whose text, model and prompt were embedded once is never embedded again (issue 34.3): "Use this
configuration" after a sweep, and a one-configuration evaluation of a collection at its own settings, embed only
the questions. The real Qdrant Edge engine in a folder, the project's fake embedder counting what it is given."""

from __future__ import annotations

from rag import pipeline
from rag.chunking import ChunkSettings
from rag.documents.loader import SourceFile
from rag.embeddings import pace
from rag.embeddings.cache import EmbeddingCache, default_cache_dir, store_cache
from rag.embeddings.fake import FakeEmbedder
from rag.evaluation.sweeps.sweep import Sweep, SweepConfig, collection_documents, run_sweep
from rag.retrieval import SearchRequest
from rag.runs.records import sweep_row
from rag.store.archive import DocumentArchive
from rag.store.open import open_store
from tests.conftest import Counting
from ui.jobs.apply import ApplyJob


def folder_store(tmp_path):
    """Return a store in a folder, as the app and the CLI open one (the cache file lies beside it)."""
    return open_store(path=str(tmp_path / "qdrant"))


def test_use_this_configuration_embeds_nothing_the_sweep_embedded(xquad, tmp_path):
    documents, queries = xquad
    store, embedder = folder_store(tmp_path), Counting()
    cache = EmbeddingCache(default_cache_dir(store))  # what the Evaluate page gives its sweep
    result = run_sweep(Sweep(documents, queries, [SweepConfig(350, 0)]), embedder, store=store, cache=cache)
    assert embedder.documents and sorted(embedder.queries) == sorted({q.text for q in queries})
    embedder.documents.clear()
    archive = DocumentArchive(tmp_path / "documents")
    for document in documents:
        archive.save(document)
    job = ApplyJob(sweep_row(result.best(), result), "chosen", embedder, store, store.location, archive)
    job.run()  # as the queue's worker runs it
    assert job.status == "done", job.error
    assert embedder.documents == []  # the sweep's 350/0 chunks come from the cache
    assert sum(r.chunks for r in job.result.results) == result.best().chunks
    hits = pipeline.search(queries[0].text, "chosen", SearchRequest(top_k=3), store=store, embedder=embedder)
    assert hits and hits[0].score > 0.0  # the vectors were stored, not left empty


def test_a_one_configuration_evaluation_of_a_collection_embeds_only_the_questions(xquad, tmp_path):
    documents, queries = xquad
    store, embedder = folder_store(tmp_path), Counting()
    files = [SourceFile(d.title, d.text.encode()) for d in documents]
    ingested = pipeline.ingest(files, "mine", ChunkSettings(350, 50), embedder, store=store, child_size=0)
    assert len(embedder.documents) == sum(r.chunks for r in ingested)
    embedder.documents.clear()
    cache = EmbeddingCache(default_cache_dir(store))  # the Evaluate page's sweep over "A collection"
    run_sweep(Sweep(collection_documents(store, "mine"), queries, [SweepConfig(350, 50)]), embedder, store=store,
              cache=cache)
    assert embedder.documents == []
    assert sorted(embedder.queries) == sorted({q.text for q in queries})


def test_a_reingest_embeds_only_chunks_it_never_embedded(xquad, tmp_path):
    documents, _ = xquad
    store, embedder = folder_store(tmp_path), Counting()
    archive = DocumentArchive(tmp_path / "documents")
    files = [SourceFile(d.title, d.text.encode()) for d in documents]
    pipeline.ingest(files, "mine", ChunkSettings(350, 50), embedder, store=store, archive=archive)
    first = set(embedder.documents)
    embedder.documents.clear()
    ids = [d.document_id for d in store.documents("mine")]
    pipeline.reingest(ids, "other", ChunkSettings(350, 50), embedder, store=store, archive=archive)
    assert embedder.documents == []
    pipeline.reingest(ids, "other", ChunkSettings(200, 0), embedder, store=store, archive=archive)
    assert embedder.documents and not first & set(embedder.documents)  # new texts only, each once
    assert len(embedder.documents) == len(set(embedder.documents))


def test_embed_chunks_embeds_what_the_cache_lacks_and_counts_the_rest_done():
    embedder, cache = Counting(), EmbeddingCache()
    texts = [f"Absatz {i}: die Frist beträgt {i} Tage." for i in range(10)]
    cache.embed(texts[:6], embedder)
    embedder.documents.clear()
    done: list[int] = []
    vectors = pace.embed_chunks(texts, embedder, done.append, cache=cache)
    assert sorted(embedder.documents) == sorted(texts[6:])
    assert done[0] == 6 and done[-1] == 10
    assert (vectors == FakeEmbedder(16).embed_documents(texts)).all()


def test_a_store_in_memory_keeps_its_cache_in_memory_for_its_life():
    store = open_store(path=":memory:")
    assert store_cache(store) is store_cache(store) and store_cache(store).path is None


def test_a_collection_ingested_without_the_cache_is_evaluated_embedding_only_the_questions(xquad, tmp_path):
    documents, queries = xquad
    store, embedder = folder_store(tmp_path), Counting()
    files = [SourceFile(d.title, d.text.encode()) for d in documents]
    pipeline.ingest(files, "old", ChunkSettings(350, 50), embedder, store=store, cache=EmbeddingCache())  # as before
    embedder.documents.clear()
    cache = EmbeddingCache(default_cache_dir(store))  # the Evaluate page's sweep over "A collection"
    run_sweep(Sweep(collection_documents(store, "old"), queries, [SweepConfig(350, 50)]), embedder, store=store,
              cache=cache)
    assert embedder.documents == []  # its stored vectors were put into the cache
    run_sweep(Sweep(collection_documents(store, "old"), queries, [SweepConfig(200, 0)]), embedder, store=store,
              cache=cache)
    assert embedder.documents  # other settings, other chunk texts: those are embedded


def test_stored_vectors_of_a_collection_with_chunk_headers_are_kept_under_their_headed_texts(xquad, tmp_path):
    documents, queries = xquad
    store, embedder = folder_store(tmp_path), Counting()
    files = [SourceFile(d.title, d.text.encode()) for d in documents]
    pipeline.ingest(files, "headed", ChunkSettings(350, 50), embedder, store=store, cache=EmbeddingCache(),
                    chunk_headers=True)
    embedder.documents.clear()
    cache = EmbeddingCache(default_cache_dir(store))
    run_sweep(Sweep(collection_documents(store, "headed"), queries, [SweepConfig(350, 50, "structure", True)]),
              embedder, store=store, cache=cache)
    assert embedder.documents == []
