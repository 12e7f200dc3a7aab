"""Qdrant: embedded folder or server URL; collections, upsert, list, delete, search.

A collection made here remembers its embedder twice: its one dense vector (cosine) is named after the
model id (`local:all-MiniLM-L6-v2` -> `local-all-MiniLM-L6-v2`), and the collection metadata holds
`{"rag_lab": {"embedder": model id, "dimension": n, "vector": vector name}}`. Qdrant cannot add a vector
to an existing collection, so one collection serves one embedder. A collection without that metadata is
*foreign* (made by another program): it can be listed and searched with an embedder of the same
dimension, never written to. Collection metadata needs Qdrant server 1.16 or newer.

Keyword search: collections made here also get a sparse vector "bm25" with Qdrant's IDF modifier; each
point stores the BM25 term-frequency weights of its chunk (rag.sparse) and the metadata records
`"sparse": "bm25"` and the analyzer. Collections made before that (and foreign ones) have no such vector:
dense search works as before, sparse and hybrid search raise SparseVectorsMissingError (re-ingest into a
new collection). Searching is in rag.store_search.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from typing import Any

import httpx
import numpy as np
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ApiException, UnexpectedResponse

from rag import sparse
from rag.chunking import Chunk, ChunkSettings
from rag.documents import Document
from rag.embeddings.base import Embedder
from rag.errors import (
    CollectionNotFoundError,
    EmbedderMismatchError,
    RagError,
    StoreError,
    StoreUnavailableError,
)
from rag.records import (
    CollectionInfo,
    DocumentInfo,
    Hit,
    Layout,
    SparseVectorsMissingError,
    describe_vectors,
    hit_from_point,
    mismatch_error,
    payload_int,
    point_id,
    vector_name,
)
from rag.store_search import SearchMixin

DEFAULT_COLLECTION = "documents"
SYSTEM_COLLECTION = "system-docs"
DEFAULT_PATH = "./data/qdrant"
META_KEY = "rag_lab"
SPARSE_VECTOR = "bm25"  # the keyword vector of collections made here
UPSERT_BATCH = 256
SERVER_TIMEOUT = 10  # seconds per request to a Qdrant server
_WITHOUT_TEXT = models.PayloadSelectorExclude(exclude=["content", "heading_path"])


class Store(SearchMixin):
    """One Qdrant client (embedded folder, memory or server) and the operations RAG Lab needs."""

    def __init__(self, client: QdrantClient, location: str, local: bool):
        self.client, self.location, self.local = client, location, local
        # the embedded engine is not thread-safe; Streamlit sessions run in threads
        self._lock: AbstractContextManager = threading.RLock() if local else nullcontext()

    def close(self) -> None:
        """Release the client (and the folder lock); the Store is unusable afterwards."""
        from rag.connection import forget

        forget(self)
        self.client.close()

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """Run client calls under the lock; turn client failures into StoreError subclasses."""
        try:
            with self._lock:
                yield
        except RagError:
            raise
        except (ApiException, httpx.HTTPError) as e:
            if isinstance(e, UnexpectedResponse) and e.status_code not in (None, 502, 503, 504):
                raise StoreError(f"Qdrant at {self.location} refused {action}: {e}") from e
            raise StoreUnavailableError(
                f"Qdrant at {self.location} did not answer while {action} ({e}). Is the server running?"
            ) from e
        except (ValueError, RuntimeError, OSError) as e:
            raise StoreError(f"Qdrant at {self.location} failed {action}: {e}") from e

    # ---- collections -------------------------------------------------------------------------

    def has_collection(self, name: str) -> bool:
        """Return whether a collection of that name exists."""
        with self._guard(f"checking collection '{name}'"):
            return self.client.collection_exists(name)

    def _names(self) -> list[str]:
        with self._guard("listing collections"):
            return sorted(c.name for c in self.client.get_collections().collections)

    def _layout(self, name: str) -> Layout:
        """Return the vectors and embedders of a collection; CollectionNotFoundError if missing."""
        if not self.has_collection(name):
            existing = ", ".join(f"'{n}'" for n in self._names()) or "none"
            raise CollectionNotFoundError(
                f"Collection '{name}' does not exist in Qdrant at {self.location}. Existing: {existing}. "
                "Ingest documents into it first, or pick an existing collection."
            )
        with self._guard(f"reading collection '{name}'"):
            config = self.client.get_collection(name).config
        raw = config.params.vectors
        params = {"": raw} if isinstance(raw, models.VectorParams) else dict(raw or {})
        vectors = {k: v.size for k, v in params.items()}
        distances = {k: str(getattr(v.distance, "value", v.distance)).lower() for k, v in params.items()}
        meta = (config.metadata or {}).get(META_KEY) or {}
        if meta.get("vector") in vectors and meta.get("embedder"):
            keyword = meta.get("sparse") if meta.get("sparse") in (config.params.sparse_vectors or {}) else None
            return Layout(name, vectors, str(meta["embedder"]), meta["vector"], keyword, distances)
        return Layout(name, vectors, None, "" if "" in vectors else next(iter(vectors), ""), None, distances)

    def collection_embedder(self, collection: str) -> tuple[str | None, int]:
        """Return (model id, dimension) of the embedder that made a collection; None id when foreign."""
        layout = self._layout(collection)
        return layout.embedder, layout.vectors.get(layout.vector, 0)

    def collections(self) -> list[CollectionInfo]:
        """Return every collection with its point count, embedder and vectors, sorted by name."""
        infos = []
        for name in self._names():
            layout = self._layout(name)
            with self._guard(f"counting points of '{name}'"):
                points = self.client.count(name, exact=True).count
            size = layout.vectors.get(layout.vector, 0)
            infos.append(
                CollectionInfo(name, points, layout.embedder, size, layout.vectors, layout.foreign, bool(layout.sparse))
            )
        return infos

    def delete_collection(self, name: str) -> None:
        """Delete a collection and all its points (CollectionNotFoundError if it does not exist)."""
        self._layout(name)
        with self._guard(f"deleting collection '{name}'"):
            self.client.delete_collection(name)

    def _ensure_collection(self, name: str, embedder: Embedder) -> Layout:
        """Return the layout to write with; create the collection if needed, refuse mismatches."""
        vname = vector_name(embedder.model_id)
        created = not self.has_collection(name) and self._create_collection(name, embedder, vname)
        layout = self._layout(name)
        if layout.foreign and created:
            raise StoreError(
                f"Qdrant at {self.location} did not keep the metadata of the new collection '{name}'; "
                "RAG Lab needs Qdrant server 1.16 or newer."
            )
        if layout.foreign:
            raise StoreError(
                f"Collection '{name}' was not made by RAG Lab (vectors: {describe_vectors(layout.vectors)}); "
                "it can be searched but not written to. Ingest into another collection name."
            )
        if layout.embedder != embedder.model_id or layout.vectors[layout.vector] != embedder.dimension:
            raise mismatch_error(layout, embedder.model_id, embedder.dimension)
        return layout

    def _create_collection(self, name: str, embedder: Embedder, vname: str) -> bool:
        """Return True once the collection exists, False if another process created it first."""
        meta = {"embedder": embedder.model_id, "dimension": embedder.dimension, "vector": vname}
        meta |= {"sparse": SPARSE_VECTOR, "analyzer": sparse.ANALYZER}
        params = models.VectorParams(size=embedder.dimension, distance=models.Distance.COSINE)
        keyword = {SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)}
        try:
            with self._guard(f"creating collection '{name}'"):
                self.client.create_collection(
                    name, vectors_config={vname: params}, sparse_vectors_config=keyword, metadata={META_KEY: meta}
                )
        except StoreError:
            if self.has_collection(name):
                return False
            raise
        if not self.local:  # the embedded engine ignores payload indexes (and warns)
            with self._guard(f"indexing document_id in '{name}'"):
                self.client.create_payload_index(name, "document_id", models.PayloadSchemaType.KEYWORD)
        return True

    # ---- documents ---------------------------------------------------------------------------

    def _scroll(self, collection: str, flt: models.Filter | None, payload: Any) -> Iterator[Any]:
        """Yield every point matching flt (payload as selected, never vectors), page by page."""
        offset = None
        while True:
            with self._guard(f"reading points of '{collection}'"):
                points, offset = self.client.scroll(
                    collection,
                    scroll_filter=flt,
                    limit=1024,
                    offset=offset,
                    with_payload=payload,
                    with_vectors=False,
                )
            yield from points
            if offset is None:
                return

    def has_keywords(self, collection: str) -> bool:
        """Return whether collection has RAG Lab keyword (sparse) vectors for sparse and hybrid search."""
        return bool(self._layout(collection).sparse)

    def point_ids(self, collection: str) -> list[Any]:
        """Return the id of every point in collection."""
        return [point.id for point in self._scroll(collection, None, False)]

    def points_with_vectors(self, collection: str, ids: list[Any], vector: str, fields: list[str]) -> list[Any]:
        """Return the points of ids with the payload fields and their vectors (every vector when vector == "")."""
        found: list[Any] = []
        for i in range(0, len(ids), 256):
            with self._guard(f"reading vectors of '{collection}'"):
                found += self.client.retrieve(collection, ids[i : i + 256], with_vectors=[vector] if vector else True,
                                              with_payload=models.PayloadSelectorInclude(include=fields))
        return found

    def _document_filter(self, layout: Layout, document_ids: list[str]) -> models.Filter:
        match = models.MatchAny(any=list(document_ids))
        by_id = models.FieldCondition(key="document_id", match=match)
        if not layout.foreign:
            return models.Filter(must=[by_id])
        # foreign payloads may lack document_id; Hit.document_id falls back to the title
        return models.Filter(should=[by_id, models.FieldCondition(key="document_title", match=match)])

    def documents(self, collection: str) -> list[DocumentInfo]:
        """Return one entry per document in a collection (foreign: per document_title), sorted by title."""
        self._layout(collection)
        groups: dict[str, list[dict]] = {}
        for point in self._scroll(collection, None, _WITHOUT_TEXT):
            p = point.payload or {}
            key = str(p.get("document_id") or p.get("document_title") or "")
            groups.setdefault(key, []).append(p)
        infos = []
        for key, payloads in groups.items():
            first = payloads[0]
            stamps = [str(p["ingested_at"]) for p in payloads if p.get("ingested_at")]
            infos.append(
                DocumentInfo(
                    document_id=key,
                    title=str(first.get("document_title") or key),
                    chunks=len(payloads),
                    pages=payload_int(first.get("document_pages")),
                    chunk_size=payload_int(first.get("chunk_size")),
                    overlap=payload_int(first.get("overlap")),
                    strategy=first.get("strategy"),
                    embedder=first.get("embedder"),
                    ingested_at=max(stamps) if stamps else None,
                )
            )
        return sorted(infos, key=lambda d: (d.title.lower(), d.document_id))

    def document_chunks(self, collection: str, document_id: str) -> list[Hit]:
        """Return a document's chunks ordered by chunk_index (score None); [] for an unknown id."""
        flt = self._document_filter(self._layout(collection), [document_id])
        hits = [hit_from_point(p, None) for p in self._scroll(collection, flt, True)]
        return sorted(hits, key=lambda h: (h.chunk_index is None, h.chunk_index or 0, h.chunk_id))

    def _point_ids(self, collection: str, document_id: str) -> set[str]:
        flt = models.Filter(must=[models.FieldCondition(key="document_id", match=models.MatchValue(value=document_id))])
        return {str(p.id) for p in self._scroll(collection, flt, False)}

    def _delete_ids(self, collection: str, ids: list[str]) -> None:
        for i in range(0, len(ids), UPSERT_BATCH):
            with self._guard(f"deleting points from '{collection}'"):
                self.client.delete(collection, models.PointIdsList(points=ids[i : i + UPSERT_BATCH]), wait=True)

    def delete_document(self, collection: str, document_id: str) -> int:
        """Delete a document's chunks from a collection; return how many points were deleted."""
        flt = self._document_filter(self._layout(collection), [document_id])
        ids = [str(p.id) for p in self._scroll(collection, flt, False)]
        self._delete_ids(collection, ids)
        return len(ids)

    def upsert_document(
        self,
        collection: str,
        document: Document,
        chunks: list[Chunk],
        vectors: np.ndarray,
        settings: ChunkSettings,
        embedder: Embedder,
    ) -> int:
        """Write a document's chunks (replacing its chunks from other settings); return the point count.

        Guarantee (best effort, Qdrant has no transactions): new points are written in batches; if a batch
        fails, the points this call added are deleted again and StoreError is raised, so the document stays
        as it was (points that existed before with the same id are rewritten with the same chunk, since the
        id covers document hash, settings and index). Only after every batch succeeded are the document's
        old points (other chunk settings) deleted. Not covered: the rollback or that last delete failing too
        (the error says so; ingesting again repairs it), or the process dying mid-way. Searches running
        meanwhile may see old and new chunks together for a moment.
        """
        vectors = np.asarray(vectors, dtype=np.float32)
        if chunks and (vectors.ndim != 2 or len(vectors) != len(chunks) or vectors.shape[1] != embedder.dimension):
            raise EmbedderMismatchError(
                f"{len(chunks)} chunks of '{document.title}' came with vectors of shape {vectors.shape}, "
                f"but {embedder.model_id} should give {embedder.dimension} dimensions per chunk."
            )
        layout = self._ensure_collection(collection, embedder)
        before = self._point_ids(collection, document.id)
        points = [self._point(document, c, v, settings, embedder, layout) for c, v in zip(chunks, vectors, strict=True)]
        self._write_points(collection, points, before, document.title)
        new_ids = {str(p.id) for p in points}
        try:
            self._delete_ids(collection, sorted(before - new_ids))
        except StoreError as e:
            raise StoreError(
                f"{e} '{document.title}' now has chunks from two chunk settings; "
                "ingest it again to remove the old ones."
            ) from e
        return len(points)

    def _write_points(self, collection: str, points: list[models.PointStruct], before: set[str], title: str) -> None:
        """Upsert points in batches; on failure delete the ones that were not there before, then raise."""
        attempted: list[str] = []
        try:
            for i in range(0, len(points), UPSERT_BATCH):
                batch = points[i : i + UPSERT_BATCH]
                attempted.extend(str(p.id) for p in batch)
                with self._guard(f"writing chunks of '{title}' to '{collection}'"):
                    self.client.upsert(collection, batch, wait=True)
        except StoreError as e:
            try:
                self._delete_ids(collection, [i for i in attempted if i not in before])
                note = f"Nothing of '{title}' was changed; try again."
            except StoreError:  # the original failure is the one to report
                note = f"Some new chunks of '{title}' may remain; ingest it again once Qdrant works."
            raise type(e)(f"{e} {note}") from e

    @staticmethod
    def _point(
        document: Document,
        chunk: Chunk,
        vector: np.ndarray,
        settings: ChunkSettings,
        embedder: Embedder,
        layout: Layout,
    ) -> models.PointStruct:
        pid = point_id(document.id, settings, chunk.chunk_index)
        payload = {"content": chunk.content, "document_id": document.id, "document_title": document.title}
        payload |= {"chunk_id": pid, "chunk_index": chunk.chunk_index, "heading_path": list(chunk.heading_path)}
        payload |= {"token_count": chunk.token_count, "page_start": chunk.page_start, "page_end": chunk.page_end}
        payload |= {"start": chunk.start, "end": chunk.end, "chunk_size": settings.chunk_size}
        payload |= {"overlap": settings.overlap, "strategy": settings.strategy, "embedder": embedder.model_id}
        payload |= {"document_kind": document.kind, "document_pages": len(document.pages)}
        payload["ingested_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        vectors: dict[str, Any] = {layout.vector: vector.tolist()}
        if layout.sparse:  # older collections have no keyword vector to fill
            indices, values = sparse.chunk_vector(chunk.content)
            vectors[layout.sparse] = models.SparseVector(indices=indices, values=values)
        return models.PointStruct(id=pid, vector=vectors, payload=payload)


from rag.connection import open_store  # noqa: E402  (re-exported: the entry point; needs Store above)

__all__ = ["CollectionInfo", "DocumentInfo", "Hit", "SparseVectorsMissingError", "Store", "hit_from_point",
           "open_store", "point_id", "vector_name"]  # fmt: skip
