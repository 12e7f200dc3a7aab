"""Use this configuration: a sweep row's chunking, search mode, fusion and rerank made a collection's own.

The sweep's documents are chunked again with the row's chunk_size, overlap and strategy and written to the
collection (pipeline.reingest: each document whole or not at all, an older version of it replaced), their vectors
taken from the embedding cache the sweep filled (nothing the sweep embedded is embedded again); only when
every document is stored are the row's mode, fusion (hybrid rows) and rerank (None: no reranking) saved as
the collection's defaults, with the id of the run that chose them ("run"). Searches then use them whenever the
user does not say otherwise (pipeline.search_defaults). Other documents of the collection are left as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rag import pipeline
from rag.chunking import ChunkSettings
from rag.documents import Document
from rag.embeddings import Embedder, EmbeddingCache
from rag.ingested import IngestOptions, Watch
from rag.store import DocumentArchive, Store

DEFAULT_KEYS = ("mode", "fusion", "rerank", "run")  # the collection settings a chosen configuration writes


@dataclass
class Applied:
    collection: str
    results: list[pipeline.IngestResult]
    saved: dict = field(default_factory=dict)  # the defaults saved; {} when a document failed

    @property
    def failed(self) -> list[pipeline.IngestResult]:
        return [r for r in self.results if not r.ok]

    def to_json(self) -> dict:
        """Return what `rag sweep --apply-best --json` says under "applied"."""
        return {"collection": self.collection, "saved": dict(self.saved), "documents": len(self.results),
                "failed": [{"name": r.filename, "error": r.error} for r in self.failed]}

    def summary(self) -> str:
        """Return what happened in one line: the documents written, the defaults saved (or why not)."""
        stored = len(self.results) - len(self.failed)
        if self.failed:
            return (f"{stored} of {len(self.results)} documents written to '{self.collection}'; its defaults were "
                    f"not changed because {self.failed[0].filename} failed: {self.failed[0].error}")
        shown = ", ".join(f"{k} {v}" for k, v in self.saved.items() if k != "run" and v is not None)
        chosen = f" (chosen by run {self.saved['run']})" if self.saved.get("run") is not None else ""
        return f"{stored} documents re-chunked into '{self.collection}'; its defaults are now {shown}{chosen}."


def row_settings(row: dict) -> ChunkSettings:
    """Return the chunk settings of a kept sweep row (rag.runs.records)."""
    return ChunkSettings(int(row["chunk_size"]), int(row["overlap"]), row.get("strategy") or "structure")


def apply_configuration(
    row: dict, collection: str, embedder: Embedder, *, store: Store, archive: DocumentArchive,
    run_id: int | None = None, documents: Sequence[Document] | None = None, watch: Watch = Watch(),  # noqa: B008
    cache: EmbeddingCache | None = None,
) -> Applied:
    """Return how a sweep row was made the collection's configuration (see the module docstring).

    row: a kept row (chunk_size, overlap, strategy, mode, fusion, rerank, collection: the sweep's collection of
    that configuration). documents: the sweep's documents, kept in the archive first so their text is exact;
    without them the documents of the row's collection are read back (archive, else their stored chunks).
    cache: the embedding cache the sweep used (default: the store's, as the app's sweeps use it): the row's chunks
    were embedded by the sweep, so only texts it lacks are embedded again.
    """
    settings = row_settings(row)
    if documents is not None:
        for document in documents:
            archive.save(document)
        ids = [d.id for d in documents]
    else:
        ids = [d.document_id for d in store.documents(row["collection"])]
    results = pipeline.reingest(ids, collection, settings, embedder, store=store, archive=archive,
                                source=row["collection"], options=IngestOptions(
                                    chunk_headers=row.get("chunk_headers"), child_size=row.get("child_size"),
                                    cache=cache), watch=watch)
    applied = Applied(collection, results)
    if applied.failed:
        return applied
    applied.saved = {"mode": row["mode"], "rerank": row.get("rerank"), "run": run_id}  # no rerank: none by default
    if row["mode"] == "hybrid" and row.get("fusion"):
        applied.saved["fusion"] = row["fusion"]
    for key, value in applied.saved.items():
        store.save_collection_setting(collection, key, value)
    return applied


def collection_defaults(store: Store, collection: str) -> dict:
    """Return the defaults saved with a collection (mode, fusion, rerank, and the run that chose them), None where
    unset."""
    return {key: store.collection_setting(collection, key) for key in DEFAULT_KEYS}
