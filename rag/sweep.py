"""Sweeps: which chunk_size, overlap and top_k retrieve best on these documents, as numbers.

One collection per configuration, named from it (`sweep-<8 hex of the sorted document ids>-cs400-ov50-
<vector name>`), reused when it already holds exactly these documents chunked with those settings by this
embedder, rebuilt otherwise. Chunks and queries go through an EmbeddingCache, so a chunk that several
configurations share (or an earlier run embedded) is embedded once; the queries are embedded once per run.
Each configuration is searched with one batch request at the largest k and scored by rag.evaluation.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rag.chunking import STRATEGIES, Chunk, ChunkSettings, chunk_document
from rag.documents import Document, load_document
from rag.embedding_cache import EmbeddingCache
from rag.embeddings.base import Embedder
from rag.evaluation import (
    DEFAULT_KS,
    Evaluation,
    Query,
    check_spans,
    covered_unit,
    evaluate,
    parse_ks,
    resolve_labels,
)
from rag.inspection import document_from_chunks
from rag.pipeline import SourceFile
from rag.store import Hit, Store, vector_name

STAGES = ("chunking", "embedding", "indexing", "searching")  # the time split of every configuration


@dataclass(frozen=True)
class SweepConfig:
    chunk_size: int
    overlap: int
    strategy: str = "structure"

    @property
    def settings(self) -> ChunkSettings:
        return ChunkSettings(self.chunk_size, self.overlap, self.strategy)

    @property
    def label(self) -> str:
        """Return the configuration in words, e.g. "chunk_size 400, overlap 50"."""
        extra = f", {self.strategy}" if self.strategy != "structure" else ""
        return f"chunk_size {self.chunk_size}, overlap {self.overlap}{extra}"


@dataclass(frozen=True)
class SweepProgress:
    stage: str  # "queries", then per configuration one of STAGES, then "done"
    config_index: int  # 0-based
    configs: int
    config: SweepConfig | None
    done: int = 0  # units of the stage done (texts for embedding, 0/1 otherwise)
    total: int = 1
    message: str = ""

    @property
    def fraction(self) -> float:
        """Return how much of the whole sweep is done, 0.0 - 1.0 (for a progress bar)."""
        if self.stage == "queries" or not self.configs:
            return 0.0
        if self.stage == "done":
            return (self.config_index + 1) / self.configs
        within = (STAGES.index(self.stage) + (self.done / self.total if self.total else 1.0)) / len(STAGES)
        return min((self.config_index + within) / self.configs, 1.0)


@dataclass
class ConfigResult:
    config: SweepConfig
    collection: str
    evaluation: Evaluation
    chunks: int
    mean_tokens: float
    seconds: dict[str, float]  # one entry per STAGES
    reused: bool  # the collection already held these chunks: nothing embedded or indexed
    embedded: int  # chunks the embedder had to embed (the rest came from the cache)

    @property
    def metrics(self) -> dict[str, float]:
        return self.evaluation.metrics

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())

    def to_json(self) -> dict:
        """Return one row of the sweep: configuration, metrics, chunk count, mean tokens and times."""
        return {"chunk_size": self.config.chunk_size, "overlap": self.config.overlap,
                "strategy": self.config.strategy, "collection": self.collection, "chunks": self.chunks,
                "mean_tokens": round(self.mean_tokens, 1), "metrics": dict(self.metrics), "reused": self.reused,
                "embedded": self.embedded, "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "total_seconds": round(self.total_seconds, 3)}


@dataclass
class SweepResult:
    results: list[ConfigResult]
    embedder: str
    ks: tuple[int, ...]
    queries: int
    documents: list[str]  # titles
    query_seconds: float  # embedding the queries, once for all configurations
    skipped: list[str] = field(default_factory=list)  # notes on configurations left out
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def default_metric(self) -> str:
        return f"mrr@{self.ks[-1]}"

    def best(self, metric: str | None = None) -> ConfigResult | None:
        """Return the configuration with the highest metric (ties: higher hit@max k, then fewer chunks)."""
        metric = metric or self.default_metric()
        hit = f"hit@{self.ks[-1]}"
        return max(self.results, key=lambda r: (r.metrics[metric], r.metrics[hit], -r.chunks), default=None)

    def summary(self, metric: str | None = None) -> str:
        """Return the best configuration in words, e.g. "Best: chunk_size 400, overlap 50 (mrr@10 0.712, ...)"."""
        metric = metric or self.default_metric()
        best = self.best(metric)
        if best is None:
            return "No configuration was run."
        hit = f"hit@{self.ks[-1]}"
        also = f", {hit} {best.metrics[hit]:.3f}" if hit != metric else ""
        return (f"Best by {metric}: {best.config.label} ({metric} {best.metrics[metric]:.3f}{also}; "
                f"{best.chunks} chunks of {best.mean_tokens:.0f} tokens on average).")

    def to_json(self, per_query: bool = False) -> dict:
        """Return the whole sweep: embedder, date, ks, the rows (with each query's outcome if asked), the best."""
        best = self.best()
        configs = [r.to_json() | ({"per_query": r.evaluation.to_json()["per_query"]} if per_query else {})
                   for r in self.results]
        return {"embedder": self.embedder, "created_at": self.created_at, "ks": list(self.ks),
                "queries": self.queries, "documents": self.documents, "query_seconds": round(self.query_seconds, 3),
                "skipped": self.skipped, "configs": configs,
                "best": best.to_json() | {"by": self.default_metric()} if best else None}

    def table(self) -> list[dict]:
        """Return one flat row per configuration (for CSV): configuration, embedder, date, metrics, times."""
        return [{"chunk_size": r.config.chunk_size, "overlap": r.config.overlap, "strategy": r.config.strategy,
                 "embedder": self.embedder, "created_at": self.created_at, "chunks": r.chunks,
                 "mean_tokens": round(r.mean_tokens, 1), **r.metrics,
                 **{f"{stage}_seconds": round(r.seconds[stage], 3) for stage in STAGES},
                 "total_seconds": round(r.total_seconds, 3), "collection": r.collection}
                for r in self.results]


ProgressCallback = Callable[[SweepProgress], None]


def parse_sizes(text: str, what: str, minimum: int) -> list[int]:
    """Return the distinct whole numbers of "200,400,800" in the order given; ValueError names the bad one."""
    values: list[int] = []
    for item in text.split(","):
        item = item.strip()
        if not item.isdigit() or int(item) < minimum:
            raise ValueError(f"{what} must be whole numbers >= {minimum} separated by commas, e.g. 200,400,800; "
                             f"got {item!r}")
        if int(item) not in values:
            values.append(int(item))
    return values


def grid(chunk_sizes: Iterable[int], overlaps: Iterable[int], strategy: str = "structure"
         ) -> tuple[list[SweepConfig], list[str]]:
    """Return the configurations of chunk_sizes x overlaps, and a note for each one skipped (overlap >= size)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"Unknown chunking strategy {strategy!r}; use one of {', '.join(STRATEGIES)}.")
    configs, skipped = [], []
    for size in chunk_sizes:
        for overlap in overlaps:
            if overlap >= size:
                skipped.append(f"skipped chunk_size {size}, overlap {overlap}: overlap must be below chunk_size")
            else:
                configs.append(SweepConfig(size, overlap, strategy))
    return configs, skipped


def collection_name(document_ids: Iterable[str], config: SweepConfig, model_id: str) -> str:
    """Return the collection of a configuration: sweep-<hash of the sorted ids>-cs<size>-ov<overlap>-<vector>."""
    digest = hashlib.sha256("\n".join(sorted(set(document_ids))).encode()).hexdigest()[:8]
    strategy = f"-{config.strategy}" if config.strategy != "structure" else ""
    return f"sweep-{digest}-cs{config.chunk_size}-ov{config.overlap}{strategy}-{vector_name(model_id)}"


def load_documents(files: Sequence[SourceFile]) -> list[Document]:
    """Return the documents of files, each once (same bytes, same document); a bad file raises its DocumentError."""
    documents = {}
    for file in files:
        document = load_document(file.data, file.name, password=file.password)
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
    embedder: Embedder,
    *,
    store: Store,
    cache: EmbeddingCache | None = None,
    ks: Sequence[int] = DEFAULT_KS,
) -> Evaluation:
    """Return the metrics of queries on an existing collection, searched once at the largest k.

    QuerySetError when a label names a document the collection lacks, or an answer span misses its answer.
    """
    ks, cache = parse_ks(ks), cache if cache is not None else EmbeddingCache()
    infos = store.documents(collection)
    queries = resolve_labels(queries, [(d.document_id, d.title) for d in infos], f"collection '{collection}'")
    titles = {d.document_id: d.title for d in infos}
    spanned = {i for q in queries if q.answer_end is not None for ids in q.document_ids for i in ids}
    texts = {i: document_from_chunks(i, titles[i], store.document_chunks(collection, i)).text for i in spanned}
    check_spans(queries, texts)
    vectors = cache.embed([q.text for q in queries], embedder)
    return evaluate(queries, store.search_batch(collection, vectors, embedder, top_k=ks[-1]), ks)


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
) -> SweepResult:
    """Return one result per configuration: metrics of queries on documents, chunk count, mean tokens, times."""
    ks, cache = parse_ks(ks), cache if cache is not None else EmbeddingCache()
    report = progress or (lambda event: None)
    queries = prepare_queries(queries, documents)
    started = time.perf_counter()
    report(SweepProgress("queries", 0, len(configs), None, 0, len(queries), f"embedding {len(queries)} queries"))
    query_vectors = cache.embed([q.text for q in queries], embedder)
    query_seconds = time.perf_counter() - started
    results = []
    for index, config in enumerate(configs):
        def stage(name: str, done: int = 0, total: int = 1, message: str = "", i=index, c=config) -> None:
            report(SweepProgress(name, i, len(configs), c, done, total, message))

        results.append(_run_config(documents, queries, query_vectors, config, embedder, store, cache, ks, stage))
    return SweepResult(results, embedder.model_id, ks, len(queries), [d.title for d in documents], query_seconds,
                       list(skipped))


def _run_config(documents, queries, query_vectors, config, embedder, store, cache, ks, stage) -> ConfigResult:
    """Return the result of one configuration: chunk, embed + index unless reusable, search, score."""
    name = collection_name([d.id for d in documents], config, embedder.model_id)
    seconds = dict.fromkeys(STAGES, 0.0)
    clock = time.perf_counter()
    stage("chunking", message=f"{config.label}: chunking {len(documents)} documents")
    chunks = {d.id: chunk_document(d, config.chunk_size, config.overlap, config.strategy) for d in documents}
    seconds["chunking"] = time.perf_counter() - clock
    every = [c for d in documents for c in chunks[d.id]]
    reused = _holds(store, name, chunks, config, embedder)
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
    clock = time.perf_counter()
    stage("searching", message=f"{config.label}: searching {len(queries)} queries"
          + (f" (reusing '{name}')" if reused else ""))
    hits = store.search_batch(name, query_vectors, embedder, top_k=ks[-1])
    evaluation = evaluate(queries, hits, ks)
    seconds["searching"] = time.perf_counter() - clock
    stage("done", 1, 1, f"{config.label}: done")
    mean = statistics.fmean(c.token_count for c in every) if every else 0.0
    return ConfigResult(config, name, evaluation, len(every), mean, seconds, reused, cache.misses - misses)


def _holds(store: Store, name: str, chunks: dict[str, list[Chunk]], config: SweepConfig, embedder: Embedder) -> bool:
    """Return whether collection name holds exactly these chunks (settings, embedder); a stale one is deleted."""
    if not store.has_collection(name):
        return False
    infos = store.documents(name)
    same = {i.document_id: i.chunks for i in infos} == {d: len(c) for d, c in chunks.items()} and all(
        (i.chunk_size, i.overlap, i.strategy, i.embedder)
        == (config.chunk_size, config.overlap, config.strategy, embedder.model_id)
        for i in infos
    )
    if not same:
        store.delete_collection(name)  # ours by name; stale (other chunker, interrupted run): rebuild it
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
