"""Sweeps: which chunk_size, overlap, top_k and search mode retrieve best on these documents, as numbers.

One collection per configuration (rag.evaluation.sweeps.sweep_collections), reused when it already holds exactly
these documents chunked with those settings by this embedder (and, when a keyword mode is asked for, has
keyword vectors), rebuilt otherwise; a sweep over a collection's documents (run_sweep's `collection`) searches
that collection as stored in a configuration at its own settings (sweep_collections.differs says why not, in one
line). Every configuration is chunked first, so the sweep knows its work and
can estimate the time left (rag.embeddings.pace). Chunks and queries go through one EmbeddingCache for all
configurations, so a chunk text that several configurations share (or an earlier run embedded) is embedded
once per model; the queries are embedded once per run. With embed_ahead (the default on 2 cores or more),
the next configuration's chunks are embedded on a background thread while this one is indexed and searched
(rag.evaluation.sweeps.ahead). Each configuration's collection is searched in every mode (dense, sparse,
hybrid-rrf, hybrid-dbsf, hybrid-convex: modes are query-time only) at the largest k, in one round trip whose
modes share the candidate lists (Store.search_many), and each mode is scored by rag.evaluation as a
row of its own (rag.evaluation.sweeps.results).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from rag import pipeline
from rag.chunking import Chunk, chunk_document
from rag.documents import Document, SourceFile, load_document
from rag.embeddings import BATCH_SECONDS, FIRST_BATCH, Embedder, EmbeddingCache, Pace, Paced, Stop
from rag.errors import InvalidSettingsError, QueryError
from rag.evaluation.funnel import relevant_chunks  # in __all__: the Evaluate page's missed questions
from rag.evaluation.metrics import (
    DEFAULT_KS,
    Evaluation,
    SearchMode,
    evaluate,
    parse_ks,
    parse_mode,
    parse_modes,
    require_keywords,
    search_in_modes,
)
from rag.evaluation.querysets import Query, check_spans, resolve_labels
from rag.evaluation.sweeps.ahead import Ahead, Relay
from rag.evaluation.sweeps.results import STAGES, ConfigResult, SweepConfig, SweepProgress, SweepResult
from rag.evaluation.sweeps.sweep_collections import (
    SWEEP_PREFIX,
    collection_documents,
    collection_name,
    differs,
    holds_chunks,
    index_chunks,
    indexed_texts,
    is_sweep_collection,
    sweep_groups,
)
from rag.evaluation.sweeps.sweep_grid import grid, parse_chunk_sizes, parse_grid, parse_overlaps, parse_sizes
from rag.rerank import DEFAULT_DEPTH as DEFAULT_RERANK_DEPTH
from rag.rerank import Reranker, check_depth, describe
from rag.retrieval import DEFAULT_REQUEST, Hit, SearchRequest
from rag.store import Store, document_from_chunks
from rag.words import counted

__all__ = ["STAGES", "SWEEP_PREFIX", "ConfigResult", "SweepConfig", "SweepProgress", "SweepResult",
           "collection_documents", "collection_name", "evaluate_collection", "grid", "is_sweep_collection",
           "load_documents", "parse_chunk_sizes", "parse_grid",
           "parse_overlaps", "parse_sizes", "plan_pace", "prepare_queries", "query_set_paths", "relevant_chunks",
           "resolve_in_collection", "run_sweep", "search_queries", "sweep_groups"]

ProgressCallback = Callable[[SweepProgress], None]


def load_documents(files: Sequence[SourceFile]) -> list[Document]:
    """Return the documents of files, each once (same bytes, same document); a bad file raises its DocumentError."""
    documents = {}
    for file in files:
        document = load_document(file.read(), file.name, password=file.password)
        documents.setdefault(document.id, document)
    return list(documents.values())


def prepare_queries(queries: Sequence[Query], documents: Sequence[Document]) -> list[Query]:
    """Return queries with labels resolved to documents; QuerySetError for unknown documents or wrong spans."""
    resolved = resolve_labels(queries, [(d.id, d.title) for d in documents],
                              f"the {counted(len(documents), 'document')} of the sweep")
    check_spans(resolved, {d.id: d.text for d in documents})
    return resolved


def evaluate_collection(
    queries: Sequence[Query],
    collection: str,
    embedder: Embedder | None,
    request: SearchRequest = DEFAULT_REQUEST,
    *,
    store: Store,
    cache: EmbeddingCache | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    reranker: Reranker | None = None,
) -> Evaluation:
    """Return the metrics of queries on an existing collection, searched once at the largest k in the request's mode
    (its top_k aside: ks say how deep).

    mode: "dense" (None too), "sparse" or "hybrid"; sparse needs no embedder. fusion: None means what rag.search
    takes for hybrid: the collection's saved fusion, else DEFAULT_FUSION. reranker: the first rerank_depth hits of
    each query are reordered by it before they are scored (the mode becomes +rerank).
    QuerySetError when a label names a document the collection lacks, or an answer span misses its answer;
    SparseVectorsMissingError (before anything is embedded) when a keyword mode meets a collection without
    keyword vectors: it has to be re-ingested.
    """
    fusion = pipeline.search_defaults(store, collection, SearchRequest("hybrid", request.fusion)).fusion
    ks, cache = parse_ks(ks), cache if cache is not None else EmbeddingCache()
    mode = _mode(request.searched_mode, fusion)
    mode = replace(mode, rerank=reranker is not None)
    require_keywords(store, collection, [mode])
    if mode.needs_vectors and embedder is None:
        raise InvalidSettingsError(
            f"{mode.label.capitalize()} search embeds the queries: give an embedder (or use sparse).")
    queries = resolve_in_collection(queries, store, collection)
    vectors = cache.embed([q.text for q in queries], embedder, query=True) if mode.needs_vectors else None
    found = search_in_modes(store, collection, [mode], vectors, embedder, ks[-1], [q.text for q in queries], reranker,
                            check_depth(request.rerank_depth))
    return evaluate(queries, found[0], ks)


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
    return store.search_batch(collection, vectors if mode.needs_vectors else None, embedder, mode.request(top_k),
                              query_texts=[q.text for q in queries])


QUERY_SET_SUFFIXES = (".jsonl", ".csv", ".json")


def query_set_paths(folder: str | Path) -> list[Path]:
    """Return the query sets (.jsonl, .csv) and SQuAD-style .json files under folder, by path."""
    return sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.suffix.lower() in QUERY_SET_SUFFIXES)


@dataclass(frozen=True)
class Sweep:
    """What a sweep measures, as one value: the documents, the questions, the chunkings (configs), the ks and search
    modes every chunking is scored at, how deep a "+rerank" mode reranks, and where the documents came from."""

    documents: Sequence[Document]
    queries: Sequence[Query]
    configs: Sequence[SweepConfig]
    ks: Sequence[int] = DEFAULT_KS
    modes: Sequence[str | SearchMode] = ("dense",)  # "dense", "sparse", "hybrid-rrf", "hybrid-dbsf" or SearchModes
    rerank_depth: int = DEFAULT_RERANK_DEPTH  # candidates a "+rerank" mode's reranker reorders
    collection: str | None = None  # the collection the documents were read from (collection_documents)
    skipped: Sequence[str] = ()  # what was left out before the sweep (files that could not be read ...), said with it


def run_sweep(
    sweep: Sweep,
    embedder: Embedder,
    *,
    store: Store,
    cache: EmbeddingCache | None = None,
    reranker: Reranker | None = None,
    progress: ProgressCallback | None = None,
    cancel: Callable[[], bool] | None = None,
    embed_ahead: bool | None = None,
) -> SweepResult:
    """Return one row per configuration and mode: metrics of the sweep's queries on its documents, chunk count, mean
    tokens, times.

    Rows come per configuration, in the order of the sweep's modes. Every configuration is chunked first (and its
    collection checked for reuse), so the progress events can say how long the sweep has left (rag.embeddings.pace);
    they come on the caller's thread. embed_ahead: embed the next configuration's chunks on a background thread
    while this one is indexed and searched (rag.evaluation.sweeps.ahead); None (the default) does so where there are
    at least 2 cores (on the 2-core machine a cold XQuAD sweep took 11-28 % less time: bench/sweep.py). A "+rerank"
    mode (a SearchMode) has `reranker` reorder the first `sweep.rerank_depth` candidates; its rows are on and off of
    rerank, the paired test of each pair in SweepResult.rerank_effect. The rows are the same either way; a row's
    "embedding" seconds are then the wall time its chunks took to embed next to the previous configuration's
    indexing and searching, so the stages add up to more than the wall time (the result's one total, `seconds`).
    cancel: asked before each embedding slice (about a second); once true, pace.Cancelled is raised.
    sweep.collection: the collection the documents were read from (collection_documents): a configuration at its own
    settings searches it as stored (no collection built, no chunk embedded); one line in the result's `skipped` says
    which did, or why none could.
    """
    documents, configs, collection = sweep.documents, sweep.configs, sweep.collection
    began, ks, cache = time.perf_counter(), parse_ks(sweep.ks), cache if cache is not None else EmbeddingCache()
    modes = parse_modes(sweep.modes)
    reranking = (reranker, check_depth(sweep.rerank_depth)) if any(m.rerank for m in modes) else (None, 0)
    queries = prepare_queries(sweep.queries, documents)
    embed_ahead = (os.cpu_count() or 1) >= 2 if embed_ahead is None else embed_ahead
    keywords = any(m.needs_keywords for m in modes)
    vectors_needed = any(m.needs_vectors for m in modes)
    if progress:
        progress(SweepProgress("chunking", 0, len(configs), None, 0, 1,
                               f"chunking {counted(len(documents), 'document')} for "
                               f"{counted(len(configs), 'configuration')}"))
    plans = [_plan(documents, config, embedder, store, keywords, collection) for config in configs]
    skipped = [*sweep.skipped, *([own_note(collection, plans)] if collection else [])]
    pace = plan_pace([None if p.reused else p.texts for p in plans], [q.text for q in queries] if vectors_needed
                     else [], modes, embed_ahead, cache=cache, embedder=embedder)  # the cache's texts count as done
    relay, stop = Relay(progress, pace), Stop(cancel)

    def stage_of(index: int) -> Callable[..., None]:
        def stage(name: str, done: int = 0, total: int = 1, message: str = "") -> None:
            relay(SweepProgress(name, index, len(configs), configs[index], done, total, message))
        return stage

    started = time.perf_counter()
    query_vectors = None
    if vectors_needed:
        def queries_done(done: int = 0) -> None:  # after each slice: a progress callback may cancel in between
            relay(SweepProgress("queries", 0, len(configs), None, done, len(queries),
                                f"embedding {counted(len(queries), 'query', 'queries')}"))

        queries_done()
        paced = Paced(embedder, pace, None, stop, queries_done, first=FIRST_BATCH, seconds=BATCH_SECONDS)
        query_vectors = cache.embed([q.text for q in queries], paced, query=True)
        pace.finished_embedding(None)  # cached queries are never paced: without this no estimate is ever given
    query_seconds = time.perf_counter() - started
    results = []
    def embed(index: int, flag: Stop) -> np.ndarray | None:
        return _embed_plan(plans[index], index, embedder, cache, pace, stage_of(index), flag)

    with Ahead(embed, len(plans), relay, embed_ahead, stop) as ahead:
        for index, plan in enumerate(plans):
            vectors = ahead.result(index)
            if vectors is not None:
                clock = time.perf_counter()
                stage_of(index)("indexing", message=f"{plan.config.label}: indexing "
                                                    f"{counted(len(plan.every), 'chunk')} in "
                                f"'{plan.name}'")
                index_chunks(store, plan.name, documents, plan.chunks, vectors, plan.config, embedder)
                plan.seconds["indexing"] = time.perf_counter() - clock
                pace.indexed(index, plan.seconds["indexing"])
            results.extend(_search_modes(plan, queries, query_vectors, embedder, store, ks, modes, stage_of(index),
                                         lambda mode, seconds, i=index: pace.searched(i, mode, seconds), reranking))
    return SweepResult(results, embedder.model_id, ks, len(queries), [d.title for d in documents], query_seconds,
                       list(skipped), rerank=describe(*reranking), seconds=time.perf_counter() - began,
                       collection=collection)


@dataclass
class _Plan:
    """A configuration's chunks and collection, whether that collection is reused, and what building it took."""

    config: SweepConfig
    name: str
    chunks: dict[str, list[Chunk]]  # per document id
    every: list[Chunk]  # in document order
    texts: list[str]  # what every chunk is embedded as (its content, with its header when config.chunk_headers)
    seconds: dict[str, float]
    reused: bool
    embedded: int = 0  # texts the embedder had to embed (the rest came from the cache)
    cut: float = 0.0  # the share of chunks longer than the model reads
    differs: str | None = None  # why the documents' own collection is not searched as stored, in words


def _plan(documents, config, embedder, store, keywords: bool, collection: str | None = None) -> _Plan:
    """Return the configuration chunked, and whether its collection already holds these chunks (reused): the
    documents' own collection when it holds them at config's settings, else the sweep's one of config."""
    name = collection_name([d.id for d in documents], config, embedder.model_id)
    seconds = dict.fromkeys(STAGES, 0.0)
    clock = time.perf_counter()
    chunks = {d.id: chunk_document(d, config.chunk_size, config.overlap, config.strategy) for d in documents}
    seconds["chunking"] = time.perf_counter() - clock
    every = [c for d in documents for c in chunks[d.id]]
    texts = indexed_texts(documents, chunks, config)
    differ = differs(store, collection, chunks, config, embedder, keywords) if collection else None
    if collection and differ is None:
        return _Plan(config, collection, chunks, every, texts, seconds, True)
    return _Plan(config, name, chunks, every, texts, seconds,
                 holds_chunks(store, name, chunks, config, embedder, keywords), differs=differ)


def own_note(collection: str, plans: Sequence[_Plan]) -> str:
    """Return in one line which configurations searched the documents' own collection as stored, or why none did."""
    own = [p.config.short for p in plans if p.differs is None]
    other = next((p for p in plans if p.differs is not None), None)
    if other is None:
        return (f"Searched '{collection}' as stored at its own settings ({', '.join(own)}): no collection built, "
                "no chunk embedded, only the questions.")
    why = f"{other.differs}" + (f" (for {other.config.short})" if len(plans) > 1 else "")
    if own:
        return (f"{', '.join(own)} searched '{collection}' as stored (only the questions embedded); the other "
                f"configurations got collections of their own: {why}.")
    return f"Not searched as stored: {why}; {'each configuration' if len(plans) > 1 else 'the sweep'} built its own."


def plan_pace(texts: Sequence[Sequence[str] | None], query_texts: Sequence[str], modes: Sequence[SearchMode],
              ahead: bool, *, cache: EmbeddingCache | None = None, embedder: Embedder | None = None) -> Pace:
    """Return the Pace of a sweep from what it will really embed: per configuration the distinct texts it adds
    that the cache lacks (texts: what each one embeds, None when its collection is reused), the characters it
    indexes, and the queries the cache lacks. Without a cache (or embedder) every text counts as to embed."""
    lacking = None
    if cache is not None and embedder is not None:
        lacking = set(cache.lacking([t for some in texts if some is not None for t in some], embedder))
        query_texts = cache.lacking(query_texts, embedder, query=True) if query_texts else []
    seen: set[str] = set()
    embed, index = [], []
    for some in texts:
        new = set() if some is None else set(some) - seen
        seen |= new
        new = new if lacking is None else new & lacking
        embed.append((len(new), sum(len(t) for t in new)))
        index.append(0 if some is None else sum(map(len, some)))
    return Pace(embed, index, [m.label for m in modes], query_chars=sum(len(t) for t in set(query_texts)),
                ahead=ahead)


def _embed_plan(plan: _Plan, index: int, embedder, cache, pace: Pace, stage, cancel) -> np.ndarray | None:
    """Return the vectors of a configuration's chunks (None when its collection is reused), cache first.

    Everything that calls the embedder happens here, on the thread that embeds: a tokenizer (Hugging Face's
    fast ones) may not be used by two threads at once.
    """
    plan.cut = cut_share(plan.every, embedder)
    if plan.reused:
        return None
    label, todo = plan.config.label, [0]

    def counted(done: int, total: int) -> None:  # the cache's progress: (0, texts it lacks) comes first
        if done == 0:
            todo[0] = total
            pace.cached(index, total)
            stage("embedding", 0, total, f"{label}: embedding")

    paced = Paced(embedder, pace, index, cancel, lambda done: stage("embedding", done, todo[0], f"{label}: embedding"),
                  first=FIRST_BATCH, seconds=BATCH_SECONDS)  # calls of about a second, as an ingest's
    clock = time.perf_counter()
    vectors = cache.embed(plan.texts, paced, counted)
    plan.seconds["embedding"], plan.embedded = time.perf_counter() - clock, paced.embedded
    pace.finished_embedding(index)
    return vectors


def _search_modes(plan: _Plan, queries, query_vectors, embedder, store, ks, modes, stage, searched, reranking
                  ) -> list[ConfigResult]:
    """Return one row per mode: search the built collection in every mode at the largest k, then score each.

    The modes share one round trip (Store.search_many: dense and sparse are the first k of hybrid's
    candidate lists); the first mode's row carries its seconds, every row its own scoring.
    """
    label, rows = plan.config.label, []
    mean = statistics.fmean(c.token_count for c in plan.every) if plan.every else 0.0
    reusing = f" (reusing '{plan.name}')" if plan.reused else ""
    stage("searching", 0, 1, f"{label}: searching {counted(len(queries), 'query', 'queries')}, "
                             f"{', '.join(m.label for m in modes)}"
          f"{reusing}")
    clock = time.perf_counter()
    vectors = query_vectors if any(m.needs_vectors for m in modes) else None
    found = search_in_modes(store, plan.name, modes, vectors, embedder, ks[-1], [q.text for q in queries], *reranking)
    together = time.perf_counter() - clock
    for done, (mode, hits) in enumerate(zip(modes, found, strict=True)):
        seconds = dict(plan.seconds) if done == 0 else dict.fromkeys(STAGES, 0.0)
        clock = time.perf_counter()
        evaluation = evaluate(queries, hits, ks)
        seconds["searching"] = (together if done == 0 else 0.0) + time.perf_counter() - clock
        searched(mode.label, seconds["searching"])
        rows.append(ConfigResult(plan.config, plan.name, evaluation, len(plan.every), mean, seconds,
                                 plan.reused, plan.embedded if done == 0 else 0, mode, plan.cut))
    stage("done", 1, 1, f"{label}: done")
    return rows


def cut_share(chunks: Sequence[Chunk], embedder: Embedder | None) -> float:
    """Return the share of chunks longer than the embedder reads (0 for one that reads long chunks in windows)."""
    limit = getattr(embedder, "max_input_tokens", None)
    if not chunks or limit is None or not hasattr(embedder, "count_tokens") or getattr(embedder, "windowed", False):
        return 0.0
    return sum(embedder.count_tokens(c.content) > limit for c in chunks) / len(chunks)
