"""Qdrant: embedded folder or server URL; collections, upsert, list, delete, search.

A collection made here remembers its embedder twice: its one dense vector (cosine) is named after the
model id (`local:all-MiniLM-L6-v2` -> `local-all-MiniLM-L6-v2`), and the collection metadata holds
`{"rag_lab": {"embedder": model id, "dimension": n, "vector": vector name}}`. Qdrant cannot add a vector
to an existing collection, so one collection serves one embedder. A collection without that metadata is
*foreign* (made by another program): it can be listed and searched with an embedder of the same
dimension, never written to. Collection metadata needs Qdrant server 1.16 or newer.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import numpy as np
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ApiException, UnexpectedResponse

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

DEFAULT_COLLECTION = "documents"
SYSTEM_COLLECTION = "system-docs"
DEFAULT_PATH = "./data/qdrant"
META_KEY = "rag_lab"
UPSERT_BATCH = 256
SERVER_TIMEOUT = 10  # seconds per request to a Qdrant server
_POINT_NAMESPACE = uuid.UUID("6f1d9c2e-6a0b-5c1e-9d4f-2b7a8e3c5d10")
_WITHOUT_TEXT = models.PayloadSelectorExclude(exclude=["content", "heading_path"])


@dataclass(frozen=True)
class Hit:
    score: float | None
    content: str
    document_id: str
    document_title: str
    chunk_id: str
    chunk_index: int | None
    heading_path: tuple[str, ...]
    page_start: int | None
    page_end: int | None
    start: int | None
    end: int | None
    payload: dict = field(default_factory=dict, compare=False)  # the full payload, for display


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    points: int
    embedder: str | None  # model id; None for a foreign collection
    dimension: int
    vectors: dict[str, int]  # vector name -> size; "" is the unnamed vector
    foreign: bool


@dataclass(frozen=True)
class DocumentInfo:
    document_id: str
    title: str
    chunks: int
    pages: int | None
    chunk_size: int | None
    overlap: int | None
    strategy: str | None
    embedder: str | None
    ingested_at: str | None


@dataclass(frozen=True)
class _Layout:
    name: str
    vectors: dict[str, int]  # "" for the unnamed vector
    embedder: str | None  # model id from our metadata; None when foreign
    vector: str  # the vector our embedder fills ("" when foreign)

    @property
    def foreign(self) -> bool:
        return self.embedder is None


def vector_name(model_id: str) -> str:
    """Return the Qdrant vector name for an embedder's model id (unsafe characters -> '-')."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", model_id).strip("-") or "vector"


def point_id(document_id: str, settings: ChunkSettings, chunk_index: int) -> str:
    """Return the deterministic point id of one chunk of a document under given chunk settings."""
    key = f"{document_id}|{settings.chunk_size}|{settings.overlap}|{settings.strategy}|{chunk_index}"
    return str(uuid.uuid5(_POINT_NAMESPACE, key))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def hit_from_point(point: Any, score: float | None) -> Hit:
    """Return a Hit from a Qdrant point; fields the payload lacks become None or ''."""
    p = dict(point.payload or {})
    title = str(p.get("document_title") or "")
    heading = p.get("heading_path")
    return Hit(
        score=score,
        content=str(p.get("content") or ""),
        document_id=str(p.get("document_id") or title),
        document_title=title,
        chunk_id=str(point.id if p.get("chunk_id") is None else p["chunk_id"]),
        chunk_index=_int(p.get("chunk_index")),
        heading_path=tuple(str(h) for h in heading) if isinstance(heading, list | tuple) else (),
        page_start=_int(p.get("page_start")),
        page_end=_int(p.get("page_end")),
        start=_int(p.get("start")),
        end=_int(p.get("end")),
        payload=p,
    )


class Store:
    """One Qdrant client (embedded folder, memory or server) and the operations RAG Lab needs."""

    def __init__(self, client: QdrantClient, location: str, local: bool):
        self.client, self.location, self.local = client, location, local
        # the embedded engine is not thread-safe; Streamlit sessions run in threads
        self._lock: AbstractContextManager = threading.RLock() if local else nullcontext()

    def close(self) -> None:
        """Release the client (and the folder lock); the Store is unusable afterwards."""
        with _CACHE_LOCK:
            for key, store in list(_STORES.items()):
                if store is self:
                    del _STORES[key]
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

    def _layout(self, name: str) -> _Layout:
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
        vectors = {"": raw.size} if isinstance(raw, models.VectorParams) else {k: v.size for k, v in raw.items()}
        meta = (config.metadata or {}).get(META_KEY) or {}
        if meta.get("vector") in vectors and meta.get("embedder"):
            return _Layout(name, vectors, str(meta["embedder"]), meta["vector"])
        return _Layout(name, vectors, None, "" if "" in vectors else next(iter(vectors), ""))

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
            infos.append(CollectionInfo(name, points, layout.embedder, size, layout.vectors, layout.foreign))
        return infos

    def delete_collection(self, name: str) -> None:
        """Delete a collection and all its points (CollectionNotFoundError if it does not exist)."""
        self._layout(name)
        with self._guard(f"deleting collection '{name}'"):
            self.client.delete_collection(name)

    def _ensure_collection(self, name: str, embedder: Embedder) -> str:
        """Return the vector name to write with; create the collection if needed, refuse mismatches."""
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
                f"Collection '{name}' was not made by RAG Lab (vectors: {_describe(layout.vectors)}); "
                "it can be searched but not written to. Ingest into another collection name."
            )
        if layout.embedder != embedder.model_id or layout.vectors[layout.vector] != embedder.dimension:
            raise _mismatch(layout, embedder.model_id, embedder.dimension)
        return vname

    def _create_collection(self, name: str, embedder: Embedder, vname: str) -> bool:
        """Return True once the collection exists, False if another process created it first."""
        meta = {META_KEY: {"embedder": embedder.model_id, "dimension": embedder.dimension, "vector": vname}}
        params = models.VectorParams(size=embedder.dimension, distance=models.Distance.COSINE)
        try:
            with self._guard(f"creating collection '{name}'"):
                self.client.create_collection(name, vectors_config={vname: params}, metadata=meta)
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

    def _document_filter(self, layout: _Layout, document_ids: list[str]) -> models.Filter:
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
                    pages=_int(first.get("document_pages")),
                    chunk_size=_int(first.get("chunk_size")),
                    overlap=_int(first.get("overlap")),
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
        vname = self._ensure_collection(collection, embedder)
        before = self._point_ids(collection, document.id)
        points = [self._point(document, c, v, settings, embedder, vname) for c, v in zip(chunks, vectors, strict=True)]
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
        vname: str,
    ) -> models.PointStruct:
        pid = point_id(document.id, settings, chunk.chunk_index)
        payload = {"content": chunk.content, "document_id": document.id, "document_title": document.title}
        payload |= {"chunk_id": pid, "chunk_index": chunk.chunk_index, "heading_path": list(chunk.heading_path)}
        payload |= {"token_count": chunk.token_count, "page_start": chunk.page_start, "page_end": chunk.page_end}
        payload |= {"start": chunk.start, "end": chunk.end, "chunk_size": settings.chunk_size}
        payload |= {"overlap": settings.overlap, "strategy": settings.strategy, "embedder": embedder.model_id}
        payload |= {"document_kind": document.kind, "document_pages": len(document.pages)}
        payload["ingested_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        return models.PointStruct(id=pid, vector={vname: vector.tolist()}, payload=payload)

    # ---- search ------------------------------------------------------------------------------

    def _using(self, layout: _Layout, dimension: int, embedder: Embedder | None, name: str | None) -> str | None:
        """Return the vector to search (None = unnamed); EmbedderMismatchError when none fits."""
        model_id = embedder.model_id if embedder else None
        if not layout.foreign and model_id not in (None, layout.embedder):
            raise _mismatch(layout, model_id, dimension)
        if name is None and layout.foreign and len(layout.vectors) > 1:
            fits = [n for n, size in layout.vectors.items() if size == dimension]
            name = fits[0] if len(fits) == 1 else None
            if name is None:
                raise _mismatch(layout, model_id, dimension)
        name = layout.vector if name is None else name
        if name not in layout.vectors or layout.vectors[name] != dimension:
            raise _mismatch(layout, model_id, dimension, name)
        return name or None

    def _query_args(
        self, collection: str, dimension: int, embedder: Embedder | None, vector_name: str | None, **options: Any
    ) -> dict[str, Any]:
        """Return the arguments every query row shares: vector name, document filter, limit, threshold."""
        layout = self._layout(collection)
        ids = options.pop("document_ids")
        return {
            "using": self._using(layout, dimension, embedder, vector_name),
            "filter": self._document_filter(layout, ids) if ids else None,
            "limit": max(int(options.pop("top_k")), 1),
            "with_payload": True,
            **options,
        }

    def search(
        self,
        collection: str,
        vector: np.ndarray,
        embedder: Embedder | None = None,
        *,
        vector_name: str | None = None,
        top_k: int = 5,
        score_threshold: float | None = None,
        document_ids: list[str] | None = None,
    ) -> list[Hit]:
        """Return the top_k chunks nearest to vector, highest cosine score first (Qdrant's scores)."""
        query = np.asarray(vector, dtype=np.float32).ravel().tolist()
        args = self._query_args(
            collection,
            len(query),
            embedder,
            vector_name,
            top_k=top_k,
            score_threshold=score_threshold,
            document_ids=document_ids,
        )
        with self._guard(f"searching '{collection}'"):
            response = self.client.query_points(collection, query, query_filter=args.pop("filter"), **args)
        return [hit_from_point(p, p.score) for p in response.points]

    def search_batch(
        self,
        collection: str,
        vectors: np.ndarray,
        embedder: Embedder | None = None,
        top_k: int = 5,
        *,
        vector_name: str | None = None,
        score_threshold: float | None = None,
        document_ids: list[str] | None = None,
    ) -> list[list[Hit]]:
        """Return the hits of each query vector (rows of vectors), in one round trip."""
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.size == 0:
            return []
        matrix = matrix.reshape(len(matrix), -1)
        args = self._query_args(
            collection,
            matrix.shape[1],
            embedder,
            vector_name,
            top_k=top_k,
            score_threshold=score_threshold,
            document_ids=document_ids,
        )
        with self._guard(f"searching '{collection}'"):
            responses = self.client.query_batch_points(
                collection, [models.QueryRequest(query=v, **args) for v in matrix.tolist()]
            )
        return [[hit_from_point(p, p.score) for p in r.points] for r in responses]


def _describe(vectors: dict[str, int]) -> str:
    return ", ".join(f"{name or 'unnamed'}: {size} dimensions" for name, size in vectors.items())


def _mismatch(layout: _Layout, model_id: str | None, dimension: int, name: str | None = None) -> EmbedderMismatchError:
    """Return the error that says which embedder made the collection and what to do."""
    asked = f"{model_id or 'the query vector'} ({dimension} dimensions)"
    if name is not None and name not in layout.vectors:
        asked += f", vector '{name}'"
    if layout.foreign:
        made = f"was not made by RAG Lab (vectors: {_describe(layout.vectors)})"
        todo = "Pick an embedder with the same dimension as the one that filled it, or use another collection."
    else:
        made = f"was made by {layout.embedder} ({layout.vectors[layout.vector]} dimensions)"
        todo = f"Pick {layout.embedder} as the embedder, or use another collection."
    return EmbedderMismatchError(f"Collection '{layout.name}' {made}; cannot use {asked}. {todo}")


_STORES: dict[tuple[str, ...], Store] = {}
_CACHE_LOCK = threading.Lock()


def open_store(path: str | None = None, url: str | None = None, api_key: str | None = None) -> Store:
    """Return the process's Store for a location: url/QDRANT_URL (server) or path/RAG_QDRANT_PATH (folder).

    Explicit arguments win over environment variables (read now, not at import). One Store per location
    is cached, because an embedded folder can be opened by one client only; path=":memory:" gives a new
    in-memory engine every call (for tests).
    """
    if path == ":memory:":
        return Store(QdrantClient(location=":memory:"), "memory", local=True)
    url = url or (None if path else os.environ.get("QDRANT_URL") or None)
    if url:
        api_key = api_key or os.environ.get("QDRANT_API_KEY") or None
        key = ("url", url.rstrip("/"), api_key or "")
    else:
        path = os.path.abspath(os.path.expanduser(path or os.environ.get("RAG_QDRANT_PATH") or DEFAULT_PATH))
        key = ("path", path)
    with _CACHE_LOCK:
        if key not in _STORES:
            _STORES[key] = _connect_server(url, api_key) if url else _open_folder(path)
        return _STORES[key]


def _open_folder(path: str) -> Store:
    try:
        client = QdrantClient(path=path)
    except RuntimeError as e:
        if "already accessed" not in str(e):
            raise
        raise StoreUnavailableError(
            f"The Qdrant folder {path} is in use by another process (another RAG Lab app or CLI). "
            "Close that one, or run a Qdrant server and set QDRANT_URL so several processes can share it."
        ) from e
    except OSError as e:
        raise StoreUnavailableError(
            f"The Qdrant folder {path} cannot be opened: {e}. Set RAG_QDRANT_PATH to a writable folder."
        ) from e
    return Store(client, path, local=True)


def _connect_server(url: str, api_key: str | None) -> Store:
    client = QdrantClient(url=url, api_key=api_key, timeout=SERVER_TIMEOUT, check_compatibility=False)
    try:
        client.get_collections()  # the client is lazy: probe now, not at the first search
    except UnexpectedResponse as e:
        client.close()
        hint = "Check QDRANT_API_KEY." if e.status_code in (401, 403) else "Check QDRANT_URL."
        raise StoreUnavailableError(f"Qdrant at {url} answered {e.status_code} {e.reason_phrase}. {hint}") from e
    except (ApiException, httpx.HTTPError, OSError) as e:
        client.close()
        raise StoreUnavailableError(
            f"Qdrant at {url} cannot be reached ({e}). Start the server, fix QDRANT_URL, "
            "or unset QDRANT_URL to use the embedded folder."
        ) from e
    return Store(client, url, local=False)
