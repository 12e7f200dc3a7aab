"""Evaluating a collection at its own settings searches it as stored (issue 34.3): no collection is built, no chunk
is embedded, only the questions; the metrics are those of today's path (a sweep collection of its own) and of
`rag eval`. Other settings or other documents say why in one line and fall back. The real Qdrant Edge engine in a
folder, the project's fake embedder counting what it is given."""

from __future__ import annotations

from rag import pipeline
from rag.chunking import ChunkSettings
from rag.documents.loader import SourceFile
from rag.embeddings.cache import EmbeddingCache
from rag.evaluation.sweeps.sweep import Sweep, SweepConfig, collection_documents, evaluate_collection, run_sweep
from rag.retrieval import SearchRequest
from rag.runs.records import sweep_run
from rag.store.open import open_store
from tests.conftest import Counting

MODES = ("dense", "sparse", "hybrid-rrf")


def mine(xquad, tmp_path):
    """Return (store, embedder, documents as the Evaluate page reads them from 'mine') after an ingest at 350/50."""
    documents, _ = xquad
    store, embedder = open_store(path=str(tmp_path / "qdrant")), Counting()
    files = [SourceFile(d.title, d.text.encode()) for d in documents]
    pipeline.ingest(files, "mine", ChunkSettings(350, 50), embedder, store=store, cache=EmbeddingCache(),
                    child_size=0)  # as SweepConfig(350, 50): no children
    read = collection_documents(store, "mine", EmbeddingCache())  # its vectors go to a cache thrown away
    embedder.documents.clear()
    return store, embedder, read


def names(store) -> dict[str, int]:
    """Return each collection's name and point count."""
    return {c.name: c.points for c in store.collections()}


def test_a_collection_at_its_own_settings_is_searched_as_stored_with_todays_metrics(xquad, tmp_path):
    _, queries = xquad
    store, embedder, read = mine(xquad, tmp_path)
    before = names(store)
    result = run_sweep(Sweep(read, queries, [SweepConfig(350, 50)], modes=MODES, collection="mine"), embedder,
                       store=store, cache=EmbeddingCache())  # an empty cache: nothing can come from it
    assert embedder.documents == []  # not one chunk embedded
    assert sorted(embedder.queries) == sorted({q.text for q in queries})
    assert names(store) == before  # no collection built, 'mine' untouched
    assert {r.collection for r in result.results} == {"mine"} and all(r.reused for r in result.results)
    assert [n for n in result.skipped if n.startswith("Searched 'mine' as stored")]
    today = run_sweep(Sweep(read, queries, [SweepConfig(350, 50)], modes=MODES), embedder, store=store,
                      cache=EmbeddingCache())  # the path before: a sweep collection of its own, every chunk embedded
    assert embedder.documents and {r.collection for r in today.results} != {"mine"}
    assert [r.metrics for r in result.results] == [r.metrics for r in today.results]
    cli = evaluate_collection(queries, "mine", embedder, SearchRequest(mode="dense"), store=store,
                              ks=result.ks)  # `rag eval`
    assert cli.metrics == result.results[0].metrics


def test_other_settings_or_documents_say_why_in_one_line_and_build_a_collection(xquad, tmp_path):
    _, queries = xquad
    store, embedder, read = mine(xquad, tmp_path)
    points = names(store)["mine"]
    result = run_sweep(Sweep(read, queries, [SweepConfig(200, 0)], collection="mine"), embedder, store=store,
                       cache=EmbeddingCache())
    assert result.skipped == ["Not searched as stored: 'mine' is chunked 350/50, not 200/0; the sweep built its own."]
    assert result.results[0].collection != "mine" and embedder.documents
    kept, _ = sweep_run(result, queries, query_set="q.jsonl", prompts=("", ""), seconds=1.0)
    assert kept["settings"]["collection"] == "mine"  # the run list names it, though no row searched it as stored
    one = [d for d in read if any(q.documents == (d.title,) for q in queries)][:1]
    asked = [q for q in queries if q.documents == (one[0].title,)]
    other = run_sweep(Sweep(one, asked, [SweepConfig(350, 50)], collection="mine"), embedder, store=store,
                      cache=EmbeddingCache())
    assert other.skipped == ["Not searched as stored: 'mine' holds other documents than the 1 of the sweep; the "
                             "sweep built its own."]
    mixed = run_sweep(Sweep(read, queries, [SweepConfig(350, 50), SweepConfig(200, 0)], collection="mine"), embedder,
                      store=store, cache=EmbeddingCache())
    assert mixed.skipped == ["350/50 searched 'mine' as stored (only the questions embedded); the other "
                             "configurations got collections of their own: 'mine' is chunked 350/50, not 200/0 "
                             "(for 200/0)."]
    assert names(store)["mine"] == points  # the analyst's collection is never deleted or rebuilt
