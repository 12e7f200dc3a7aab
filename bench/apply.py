"""Embedded once: "Use this configuration" and a one-configuration evaluation, without and with the shared cache,
and the evaluation searching the collection as stored.

    python -m bench.apply [--squad FILE] [--articles 6] [--embedder local] [--repeat 2]

Issue 34.3: apply re-embedded every document the sweep had just embedded, and a one-configuration sweep of a
collection at its own settings re-embedded the chunks stored in it, because ingest and re-ingest never used the
embedding cache. Both are timed twice in one run, alternating, on the first --articles XQuAD-de articles with
the real model (the default local e5), in one embedded Qdrant folder:

- apply: a sweep of 350/0 fills the cache (folder), then the row is applied into a new collection with
  `reference` an empty cache in memory (what ingest had before: every chunk embedded) and `cached` a copy of the
  sweep's cache file (the store's cache, as the app and `rag sweep --apply-best` use it now);
- evaluation: the documents are ingested at 350/50 without the cache (a collection made before this change),
  then a sweep of that one configuration over the collection's documents (the Evaluate page's "A collection"),
  its sweep collection deleted before each run: `reference` as before (an empty cache, the documents read as
  collection_documents read them: old_collection_documents), `cached` an empty cache file that
  collection_documents fills with the collection's stored vectors (a sweep collection built from them), `stored`
  the Evaluate page's path now: the same read, then run_sweep(collection=...) searches the collection as stored
  (no collection built). The questions are embedded in every way, from an empty cache; the medians are given
  with and without that time.

Prints the load average at the start and the end, each run's seconds and chunk texts embedded, and the medians.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from rag import pipeline  # noqa: E402 (imported after the offline switches above)
from rag.chunking import ChunkSettings  # noqa: E402
from rag.documents import SourceFile  # noqa: E402
from rag.embeddings import EmbeddingCache, default_cache_dir, get_embedder  # noqa: E402
from rag.evaluation.querysets import import_squad, sweep_input  # noqa: E402
from rag.evaluation.sweeps import Sweep, SweepConfig, collection_documents, collection_name, run_sweep  # noqa: E402
from rag.runs import apply_configuration, sweep_row  # noqa: E402
from rag.store import DocumentArchive, document_from_chunks, open_store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SQUAD = ROOT.parent / "shared" / "data" / "xquad-de" / "xquad.de.dev.json"
WAYS = ("reference", "cached")
EVALUATION_WAYS = (*WAYS, "stored")


def load() -> str:
    return "load average " + " / ".join(f"{v:.2f}" for v in os.getloadavg()) + " (1 / 5 / 15 min)"


def copy_cache(source: Path, folder: str, name: str) -> EmbeddingCache:
    """Return a cache holding exactly what source held (a copy of its SQLite file)."""
    target = Path(folder) / name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copy(source / "embeddings.sqlite", target / "embeddings.sqlite")
    return EmbeddingCache(target)


def old_collection_documents(store, collection: str) -> list:
    """Return the documents of collection as collection_documents did before: its stored vectors left unread."""
    return [document_from_chunks(i.document_id, i.title, store.document_chunks(collection, i.document_id))
            for i in store.documents(collection)]


def timed(label: str, run) -> tuple[float, int]:
    """Return (seconds, chunk texts embedded) of run(cache) and print them."""
    started = time.perf_counter()
    embedded = run()
    seconds = time.perf_counter() - started
    print(f"  {label}: {seconds:.1f} s, {embedded} chunk texts embedded", flush=True)
    return seconds, embedded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--squad", default=str(DEFAULT_SQUAD))
    parser.add_argument("--articles", type=int, default=6)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each way, alternating")
    args = parser.parse_args()
    documents, queries = sweep_input(import_squad(Path(args.squad).read_bytes(), args.squad, args.articles))
    embedder = get_embedder(args.embedder)
    folder = tempfile.mkdtemp(prefix="bench-apply-")
    store = open_store(path=f"{folder}/qdrant")
    archive = DocumentArchive(f"{folder}/documents")
    shared = default_cache_dir(store)  # the store's cache: what the app's sweeps and (now) ingests use
    print(f"{load()}; {len(documents)} articles, {len(queries)} questions, embedder {embedder.model_id}")
    embedder.embed_documents(["warm up"])  # the model's load is no part of either way
    times: dict[str, dict[str, list[float]]] = {"apply": {w: [] for w in WAYS},
                                                "evaluation": {w: [] for w in EVALUATION_WAYS},
                                                "evaluation without the questions": {w: [] for w in EVALUATION_WAYS}}

    result = run_sweep(Sweep(documents, queries, [SweepConfig(350, 0)]), embedder, store=store,
                       cache=EmbeddingCache(shared))
    row = sweep_row(result.best(), result)
    print(f"apply of the sweep's row {row['label']} ({row['chunks']} chunks):")
    for document in documents:
        archive.save(document)

    def apply(way: str) -> int:
        cache = EmbeddingCache() if way == "reference" else copy_cache(shared, folder, "apply-cache")
        store.delete_collection("applied") if store.has_collection("applied") else None
        applied = apply_configuration(row, "applied", embedder, store=store, archive=archive, documents=documents,
                                      cache=cache)
        assert not applied.failed, applied.summary()
        return cache.misses

    files = [SourceFile(d.title, d.text.encode()) for d in documents]
    ingested = pipeline.ingest(files, "mine", ChunkSettings(350, 50), embedder, store=store, cache=EmbeddingCache())
    config = SweepConfig(350, 50)
    name = collection_name([d.id for d in collection_documents(store, "mine", EmbeddingCache())], config,
                           embedder.model_id)

    questions: dict[str, float] = {}  # the last run's seconds embedding the questions (the same work in every way)

    def evaluation(way: str) -> int:
        if way == "reference":
            cache, read = EmbeddingCache(), old_collection_documents(store, "mine")
        else:
            shutil.rmtree(Path(folder) / "evaluation-cache", ignore_errors=True)
            cache = EmbeddingCache(Path(folder) / "evaluation-cache")
            read = collection_documents(store, "mine", cache)
        store.delete_collection(name) if store.has_collection(name) else None
        swept = run_sweep(Sweep(read, queries, [config], collection="mine" if way == "stored" else None), embedder,
                          store=store, cache=cache)
        assert (swept.results[0].collection == "mine") == (way == "stored"), swept.skipped
        questions[way] = swept.query_seconds
        return swept.results[0].embedded

    order = [WAYS[i % 2] if (i // 2) % 2 == 0 else WAYS[1 - i % 2] for i in range(2 * args.repeat)]  # r c c r ...
    for way in order:
        times["apply"][way].append(timed(f"apply, {way}", lambda w=way: apply(w))[0])
    print(f"one-configuration evaluation of 'mine' (350/50, {sum(r.chunks for r in ingested)} chunks, "
          f"{len({q.text for q in queries})} questions embedded each run):")
    rounds = [EVALUATION_WAYS if i % 2 == 0 else EVALUATION_WAYS[::-1] for i in range(args.repeat)]  # r c s s c r
    for way in (w for ways in rounds for w in ways):
        seconds = timed(f"evaluation, {way}", lambda w=way: evaluation(w))[0]
        print(f"    of which embedding the questions {questions[way]:.1f} s", flush=True)
        times["evaluation"][way].append(seconds)
        times["evaluation without the questions"][way].append(seconds - questions[way])
    print(load())
    for what, ways in times.items():
        medians = {w: statistics.median(seconds) for w, seconds in ways.items()}
        ref = medians["reference"]
        print(f"{what} (median of {args.repeat}): " + ", ".join(
            f"{w} {m:.1f} s" + (f" ({ref / m:.1f}x)" if w != "reference" else "") for w, m in medians.items()))
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
