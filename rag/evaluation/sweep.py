"""Sweeps: which chunk_size, overlap, top_k and search mode retrieve best on these documents, as numbers.

One collection per configuration, named from it (`sweep-<8 hex of the sorted document ids>-cs400-ov50-
<vector name>`), reused when it already holds exactly these documents chunked with those settings by this
embedder (and, when a keyword mode is asked for, has keyword vectors), rebuilt otherwise. Chunks and queries
go through an EmbeddingCache, so a chunk that several configurations share (or an earlier run embedded) is
embedded once; the queries are embedded once per run. Each configuration's collection is searched in every
mode (dense, sparse, hybrid-rrf, hybrid-dbsf: modes are query-time only), one batch request per mode at the
largest k, and each mode is scored by rag.evaluation as a row of its own (rag.sweep_results).
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.chunking.chunker import STRATEGIES, Chunk, chunk_document
from rag.documents.loader import SourceFile, load_document
from rag.documents.model import Document
from rag.embeddings.base import Embedder
from rag.embeddings.cache import EmbeddingCache
from rag.errors import InvalidSettingsError, QueryError
from rag.evaluation.metrics import DEFAULT_KS, Evaluation, covered_unit, evaluate, parse_ks
from rag.evaluation.modes import SearchMode, parse_mode, parse_modes, require_keywords
from rag.evaluation.queries import Query, check_spans, resolve_labels
from rag.evaluation.results import STAGES, ConfigResult, SweepConfig, SweepProgress, SweepResult
from rag.store.client import Store
from rag.store.rebuild import document_from_chunks
from rag.store.records import Hit, vector_name

__all__ = ["STAGES", "ConfigResult", "SweepConfig", "SweepProgress", "SweepResult", "collection_documents",
           "collection_name", "evaluate_collection", "grid", "load_documents", "parse_sizes", "prepare_queries",
           "query_set_paths", "relevant_chunks", "resolve_in_collection", "run_sweep", "search_queries"]

ProgressCallback = Callable[[SweepProgress], None]


def parse_sizes(text: str, what: str, minimum: int) -> list[int]:
    """Return the distinct whole numbers of "200,400,800" in the order given; ValueError names the bad one."""
    values: list[int] = []
    for item in text.split(","):
        item = item.strip()
        if not item.isdigit() or int(item) < minimum:
            raise InvalidSettingsError(
                f"{what} must be whole numbers >= {minimum} separated by commas, e.g. 200,400,800; "
                f"got {item!r}")
        if int(item) not in values:
            values.append(int(item))
    return values


def grid(chunk_sizes: Iterable[int], overlaps: Iterable[int], strategy: str = "structure"
         ) -> tuple[list[SweepConfig], list[str]]:
    """Return the configurations of chunk_sizes x overlaps, and a note for each one skipped (overlap >= size)."""
    if strategy not in STRATEGIES:
        raise InvalidSettingsError(f"Unknown chunking strategy {strategy!r}; use one of {', '.join(STRATEGIES)}.")
    configs, skipped = [], []
    for size in chunk_sizes:
        for overlap in overlaps:
            if overlap >= size:
                skipped.append(f"skipped chunk_size {size}, overlap {overlap}: overlap must be below chunk_size")
            else:
                configs.append(SweepConfig(size, overlap, strategy))
    return configs, skipped


SWEEP_PREFIX = "sweep-"


def is_sweep_collection(name: str) -> bool:
    """Return True for a collection a sweep made (named by collection_name)."""
    return name.startswith(SWEEP_PREFIX)


def sweep_groups(names: Sequence[str]) -> dict[str, list[str]]:
    """Return the sweep collections among names grouped per sweep (its document set's hash), in name order."""
    groups: dict[str, list[str]] = {}
    for name in sorted(n for n in names if is_sweep_collection(n)):
        groups.setdefault(name[len(SWEEP_PREFIX):].split("-")[0], []).append(name)
    return groups


def collection_name(document_ids: Iterable[str], config: SweepConfig, model_id: str) -> str:
    """Return the collection of a configuration: sweep-<hash of the sorted ids>-cs<size>-ov<overlap>-<vector>."""
    digest = hashlib.sha256("\n".join(sorted(set(document_ids))).encode()).hexdigest()[:8]
    strategy = f"-{config.strategy}" if config.strategy != "structure" else ""
    return f"sweep-{digest}-cs{config.chunk_size}-ov{config.overlap}{strategy}-{vector_name(model_id)}"


def load_documents(files: Sequence[SourceFile]) -> list[Document]:
    """Return the documents of files, each once (same bytes, same document); a bad file raises its DocumentError."""
    documents = {}
    for file in files:
        document = load_document(file.read(), file.name, password=file.password)
        documents.setdefault(document.id, document)
    return list(documents.values())


def prepare_queries(queries: Sequence[Query], documents: Sequence[Document]) -> list[Query]:
    """Return queries with labels resolved to documents; QuerySetError for unknown documents or wrong spans."""
    where = f"the {len(documents)} documents of the sweep"
    resolved = resolve_labels(queries, [(d.id, d.title) for d in documents], where)
    check_spans(resolved, {d.id: d.text for d in documents})
    return resolved


def evaluate_collection(
    queries: Sequence[Query],
    collection: str,
    embedder: Embedder | None,
    *,
    store: Store,
    cache: EmbeddingCache | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    mode: str | SearchMode = "dense",
    fusion: str = "rrf",
) -> Evaluation:
    """Return the metrics of queries on an existing collection, searched once at the largest k in one mode.

    mode: "dense", "sparse", "hybrid" (with fusion) or a SearchMode; sparse needs no embedder.
    QuerySetError when a label names a document the collection lacks, or an answer span misses its answer;
    SparseVectorsMissingError (before anything is embedded) when a keyword mode meets a collection without
    keyword vectors: it has to be re-ingested.
    """
    ks, cache, mode = parse_ks(ks), cache if cache is not None else EmbeddingCache(), _mode(mode, fusion)
    require_keywords(store, collection, [mode])
    if mode.needs_vectors and embedder is None:
        raise InvalidSettingsError(
            f"{mode.label.capitalize()} search embeds the queries: give an embedder (or use sparse).")
    queries = resolve_in_collection(queries, store, collection)
    vectors = cache.embed([q.text for q in queries], embedder, query=True) if mode.needs_vectors else None
    return evaluate(queries, search_queries(store, collection, queries, vectors, embedder, ks[-1], mode), ks)


def resolve_in_collection(queries: Sequence[Query], store: Store, collection: str) -> list[Query]:
    """Return queries with labels resolved to the collection's documents; QuerySetError for unknown ones or
    answer spans that miss their answer in the text rebuilt from the stored chunks."""
    infos = store.documents(collection)
    queries = resolve_labels(queries, [(d.document_id, d.title) for d in infos], f"collection '{collection}'")
    titles = {d.document_id: d.title for d in infos}
    spanned = {i for q in queries if q.answer_end is not None for ids in q.document_ids for i in ids}
    texts = {i: document_from_chunks(i, titles[i], store.document_chunks(collection, i)).text for i in spanned}
    check_spans(queries, texts)
    return queries


def _mode(mode: str | SearchMode, fusion: str) -> SearchMode:
    try:
        return parse_mode(mode, fusion)
    except ValueError as error:
        raise QueryError(f"{str(error)[0].upper()}{str(error)[1:]}.") from None


def search_queries(store: Store, collection: str, queries: Sequence[Query], vectors: np.ndarray | None,
                   embedder: Embedder | None, top_k: int, mode: SearchMode) -> list[list[Hit]]:
    """Return the top_k hits of each query in one mode, one batch request (vectors may be None for sparse)."""
    return store.search_batch(collection, vectors if mode.needs_vectors else None, embedder, top_k,
                              mode=mode.mode, fusion=mode.fusion, query_texts=[q.text for q in queries])


QUERY_SET_SUFFIXES = (".jsonl", ".csv", ".json")


def query_set_paths(folder: str | Path) -> list[Path]:
    """Return the query sets (.jsonl, .csv) and SQuAD-style .json files under folder, by path."""
    return sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.suffix.lower() in QUERY_SET_SUFFIXES)


def collection_documents(store: Store, collection: str) -> list[Document]:
    """Return the documents of a collection rebuilt from their stored chunks (offsets kept), by title."""
    return [document_from_chunks(i.document_id, i.title, store.document_chunks(collection, i.document_id))
            for i in store.documents(collection)]


def relevant_chunks(store: Store, collection: str, query: Query) -> list[Hit]:
    """Return the chunks of collection that are relevant to a resolved query, in document order."""
    found = []
    for ids in query.document_ids:
        for document_id in sorted(ids):
            chunks = store.document_chunks(collection, document_id)
            found.extend(h for h in chunks if covered_unit(query, h) is not None)
    return found


def run_sweep(
    documents: Sequence[Document],
    queries: Sequence[Query],
    configs: Sequence[SweepConfig],
    embedder: Embedder,
    *,
    store: Store,
    cache: EmbeddingCache | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    progress: ProgressCallback | None = None,
    skipped: Sequence[str] = (),
    modes: Sequence[str | SearchMode] = ("dense",),
) -> SweepResult:
    """Return one row per configuration and mode: metrics of queries on documents, chunk count, mean tokens, times.

    modes: "dense", "sparse", "hybrid-rrf", "hybrid-dbsf" (or SearchModes); rows come per configuration, in
    the order of modes.
    """
    ks, cache = parse_ks(ks), cache if cache is not None else EmbeddingCache()
    modes = parse_modes(modes)
    report = progress or (lambda event: None)
    queries = prepare_queries(queries, documents)
    started = time.perf_counter()
    query_vectors = None
    if any(m.needs_vectors for m in modes):
        report(SweepProgress("queries", 0, len(configs), None, 0, len(queries), f"embedding {len(queries)} queries"))
        query_vectors = cache.embed([q.text for q in queries], embedder, query=True)
    query_seconds = time.perf_counter() - started
    results = []
    for index, config in enumerate(configs):
        def stage(name: str, done: int = 0, total: int = 1, message: str = "", i=index, c=config) -> None:
            report(SweepProgress(name, i, len(configs), c, done, total, message))

        built = _build(documents, config, embedder, store, cache, stage, any(m.needs_keywords for m in modes))
        results.extend(_search_modes(built, queries, query_vectors, embedder, store, ks, modes, stage))
    return SweepResult(results, embedder.model_id, ks, len(queries), [d.title for d in documents], query_seconds,
                       list(skipped))


@dataclass
class _Built:
    """A configuration's collection, ready to search, and what building it took."""

    config: SweepConfig
    name: str
    chunks: list[Chunk]
    seconds: dict[str, float]
    reused: bool
    embedded: int


def _build(documents, config, embedder, store, cache, stage, keywords: bool) -> _Built:
    """Return the configuration's collection: chunk, then embed + index unless the collection can be reused."""
    name = collection_name([d.id for d in documents], config, embedder.model_id)
    seconds = dict.fromkeys(STAGES, 0.0)
    clock = time.perf_counter()
    stage("chunking", message=f"{config.label}: chunking {len(documents)} documents")
    chunks = {d.id: chunk_document(d, config.chunk_size, config.overlap, config.strategy) for d in documents}
    seconds["chunking"] = time.perf_counter() - clock
    every = [c for d in documents for c in chunks[d.id]]
    reused = _holds(store, name, chunks, config, embedder, keywords)
    misses = cache.misses
    if not reused:
        clock = time.perf_counter()
        vectors = cache.embed([c.content for c in every], embedder,
                              lambda done, total: stage("embedding", done, total, f"{config.label}: embedding"))
        seconds["embedding"] = time.perf_counter() - clock
        clock = time.perf_counter()
        stage("indexing", message=f"{config.label}: indexing {len(every)} chunks in '{name}'")
        _index(store, name, documents, chunks, vectors, config, embedder)
        seconds["indexing"] = time.perf_counter() - clock
    return _Built(config, name, every, seconds, reused, cache.misses - misses)


def _search_modes(built: _Built, queries, query_vectors, embedder, store, ks, modes, stage) -> list[ConfigResult]:
    """Return one row per mode: search the built collection once per mode at the largest k and score it."""
    label, rows = built.config.label, []
    mean = statistics.fmean(c.token_count for c in built.chunks) if built.chunks else 0.0
    cut = cut_share(built.chunks, embedder)
    for done, mode in enumerate(modes):
        reusing = f" (reusing '{built.name}')" if built.reused else ""
        stage("searching", done, len(modes), f"{label}: searching {len(queries)} queries, {mode.label}{reusing}")
        seconds = dict(built.seconds) if done == 0 else dict.fromkeys(STAGES, 0.0)
        clock = time.perf_counter()
        hits = search_queries(store, built.name, queries, query_vectors, embedder, ks[-1], mode)
        evaluation = evaluate(queries, hits, ks)
        seconds["searching"] = time.perf_counter() - clock
        rows.append(ConfigResult(built.config, built.name, evaluation, len(built.chunks), mean, seconds,
                                 built.reused, built.embedded if done == 0 else 0, mode, cut))
    stage("done", 1, 1, f"{label}: done")
    return rows


def cut_share(chunks: Sequence[Chunk], embedder: Embedder | None) -> float:
    """Return the share of chunks longer than the embedder reads (0 for one that reads long chunks in windows)."""
    limit = getattr(embedder, "max_input_tokens", None)
    if not chunks or limit is None or not hasattr(embedder, "count_tokens") or getattr(embedder, "windowed", False):
        return 0.0
    return sum(embedder.count_tokens(c.content) > limit for c in chunks) / len(chunks)


def _holds(store: Store, name: str, chunks: dict[str, list[Chunk]], config: SweepConfig, embedder: Embedder,
           keywords: bool = False) -> bool:
    """Return whether collection name holds exactly these chunks (settings, embedder, keyword vectors if asked).

    A stale one (other chunker, interrupted run, made before keyword vectors) is deleted: it is ours by name.
    """
    if not store.has_collection(name):
        return False
    infos = store.documents(name)
    same = {i.document_id: i.chunks for i in infos} == {d: len(c) for d, c in chunks.items()} and all(
        (i.chunk_size, i.overlap, i.strategy, i.embedder)
        == (config.chunk_size, config.overlap, config.strategy, embedder.model_id)
        for i in infos
    )
    if same and keywords:
        same = store.has_keywords(name)
    if not same:
        store.delete_collection(name)
    return same


def _index(store: Store, name: str, documents: Sequence[Document], chunks: dict[str, list[Chunk]],
           vectors: np.ndarray, config: SweepConfig, embedder: Embedder) -> None:
    """Write each document's chunks with their rows of vectors (in document order) to collection name."""
    row = 0
    for document in documents:
        count = len(chunks[document.id])
        store.upsert_document(name, document, chunks[document.id], vectors[row : row + count], config.settings,
                              embedder)
        row += count
