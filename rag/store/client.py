"""Qdrant: embedded folder or server URL; collections, upsert, list, delete, search.

A collection made here remembers its embedder twice: its one dense vector (cosine) is named after the
model id (`local:all-MiniLM-L6-v2` -> `local-all-MiniLM-L6-v2`), and the collection metadata holds
`{"rag_lab": {"embedder": model id, "dimension": n, "vector": vector name}}`. Qdrant cannot add a vector
to an existing collection, so one collection serves one embedder. A collection without that metadata is
*foreign* (made by another program): it can be listed and searched with an embedder of the same
dimension, never written to. Collection metadata needs Qdrant server 1.16 or newer.

Keyword search: collections made here also get a sparse vector "bm25" with Qdrant's IDF modifier; each
point stores the BM25 term-frequency weights of its chunk (rag.store.keywords) and the metadata records
`"sparse": "bm25"` and the analyzer. Collections made before that (and foreign ones) have no such vector:
dense search works as before, sparse and hybrid search raise SparseVectorsMissingError (re-ingest into a
new collection). Searching is in rag.retrieval.search.

`"chunk_headers"` (rag.chunking.headers) records whether chunks are embedded and keyword-indexed with their
title and heading path; a collection without the record is indexed without, as before. `"child_size"`
(rag.chunking.children) is the tokens per child of a parent–child collection (rag.store.children); a
collection without it (or 0) is searched over its chunks, as before.
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import httpx
import pydantic
from qdrant_client import models
from qdrant_client.http.exceptions import ApiException, UnexpectedResponse

import rag.store.keywords as keywords
from rag.chunking import children, headers
from rag.embeddings import Embedder
from rag.errors import (
    CollectionNotFoundError,
    EmbedderMismatchError,
    InvalidSettingsError,
    RagError,
    StoreError,
    StoreUnavailableError,
)
from rag.retrieval import CollectionInfo, Layout, SearchMixin, describe_vectors, mismatch_error, vector_name
from rag.store.children import IS_CHILD, ChildrenMixin
from rag.store.contract import WRITE_CALLS, StoreClient, StoreReads
from rag.store.documents import DocumentsMixin
from rag.store.edge import EdgeClient
from rag.store.edge.api import EdgeError
from rag.store.indexing import IndexMixin
from rag.store.keywords import Analyzer, analyzer_for
from rag.store.versions import NOT_REGISTRY, VersionsMixin

SYSTEM_COLLECTION = "system-docs"
META_KEY = "rag_lab"
SPARSE_VECTOR = "bm25"  # the keyword vector of collections made here
UPSERT_BATCH = 256
_WITHOUT_TEXT = models.PayloadSelectorExclude(exclude=["content", "heading_path"])


def timed_out(error: BaseException) -> bool:
    """Return whether a Qdrant client error is a timeout (qdrant-client wraps httpx's in its own exception)."""
    seen: BaseException | None = error
    for _ in range(5):
        if seen is None:
            return False
        if isinstance(seen, httpx.TimeoutException | TimeoutError):
            return True
        seen = getattr(seen, "source", None) or seen.__cause__ or seen.__context__
    return False


class Store(DocumentsMixin, VersionsMixin, SearchMixin, IndexMixin, ChildrenMixin):
    """One Qdrant client (embedded folder, memory or server) and the operations RAG Lab needs; the client is a
    StoreClient, or a StoreReads that only reads (rag.store.contract)."""

    def __init__(self, client: StoreClient | StoreReads, location: str, local: bool,
                 on_close: Callable[[Store], None] | None = None):
        self.client, self.location, self.local = client, location, local
        self._on_close = on_close  # rag.store.open drops the store from its cache
        # an embedded folder removed while the client runs: sqlite goes on writing to the deleted files, and
        # the engine serves what it holds in memory; comparing the folder's identity catches that
        self._folder = _identity(location) if local and os.path.isabs(location) else None
        # the embedded engine is not thread-safe; Streamlit sessions run in threads
        self._lock: AbstractContextManager = threading.RLock() if local else nullcontext()

    def close(self) -> None:
        """Release the client (and the folder lock); the Store is unusable afterwards."""
        if self._on_close is not None:
            self._on_close(self)
        self.client.close()

    @contextmanager
    def reading(self) -> Iterator[StoreReads]:
        """Yield the client for reads made on it directly (another process's: rag.store.reads) under the lock the
        Store's own reads and writes take; its errors pass unchanged."""
        with self._lock:
            yield self.client

    @contextmanager
    def _guard(self, action: str, hold: bool = True) -> Iterator[None]:
        """Run client calls under the lock (hold=False: without it, for work that locks its own steps); turn client
        failures into StoreError subclasses."""
        try:
            with self._lock if hold else nullcontext():
                self._check_folder(action)
                yield
        except RagError:
            raise
        except (ApiException, httpx.HTTPError) as e:
            if (invalid := invalid_reply(e)) is not None:
                raise StoreError(not_qdrant(self.location, action, invalid)) from e
            if isinstance(e, UnexpectedResponse) and e.status_code not in (None, 502, 503, 504):
                raise StoreError(f"Qdrant at {self.location} refused {action}: {e}") from e
            if timed_out(e):
                raise StoreUnavailableError(
                    f"Qdrant at {self.location} did not answer in time while {action}. Check that the server "
                    "is up; raise RAG_QDRANT_TIMEOUT (seconds) if it is only slow."
                ) from e
            raise StoreUnavailableError(
                f"Qdrant at {self.location} did not answer while {action} ({e}). Is the server running?"
            ) from e
        except pydantic.ValidationError as e:  # a ValueError whose text is a many-line dump of the reply
            raise StoreError(not_qdrant(self.location, action, e)) from e
        except (sqlite3.Error, OSError) as e:  # the embedded engine's files (sqlite, meta.json)
            if self.local:
                raise self._disk_error(action, e) from e
            raise StoreError(f"Qdrant at {self.location} failed {action}: {e}") from e
        except AttributeError as e:  # a write on a client that only reads: the one line saying where writes go
            if e.obj is not self.client or e.name not in WRITE_CALLS or not hasattr(e.obj, "refusal"):
                raise
            raise StoreUnavailableError(e.obj.refusal) from None
        except (ValueError, RuntimeError) as e:
            if not engine_refusal(e):
                raise  # ours, or the engine's for a cause no user can fix: a bug, shown as one
            raise StoreError(f"Qdrant at {self.location} failed {action}: {e}") from e

    def _check_folder(self, action: str) -> None:
        """Raise StoreUnavailableError when the embedded folder was removed or replaced since it was opened."""
        if self._folder is not None and _identity(self.location) != self._folder:
            raise StoreUnavailableError(
                f"The Qdrant folder {self.location} was removed while RAG Lab was using it; {action} did not run. "
                "Restart RAG Lab to start a new, empty store there, or choose another folder (RAG_QDRANT_PATH)."
            )

    def _disk_error(self, action: str, error: Exception) -> StoreError:
        """Return the StoreError of a failed read or write of the embedded engine's files."""
        full = getattr(error, "errno", None) == errno.ENOSPC or "disk is full" in str(error)
        if full:
            return StoreError(f"The disk holding the Qdrant folder {self.location} is full: {action} failed. "
                              "Free disk space, then try again.")
        return StoreError(f"Qdrant at {self.location} failed {action}: {error}. Check that the folder exists "
                          "and is writable, or set RAG_QDRANT_PATH to another folder.")

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
            return Layout(name, vectors, str(meta["embedder"]), meta["vector"], keyword, distances, dict(meta))
        return Layout(name, vectors, None, "" if "" in vectors else next(iter(vectors), ""), None, distances)

    def collection_embedder(self, collection: str) -> tuple[str | None, int]:
        """Return (model id, dimension) of the embedder that made a collection; None id when foreign."""
        layout = self._layout(collection)
        return layout.embedder, layout.vectors.get(layout.vector, 0)

    def analyzer(self, collection: str) -> Analyzer:
        """Return how the collection turns text into keyword vectors (its recorded analyzer and languages)."""
        layout = self._layout(collection)
        return self._analyzer(layout)

    def _analyzer(self, layout: Layout) -> Analyzer:
        if layout.meta.get("analyzer") == keywords.ANALYZER and layout.meta.get("language") == "auto":
            return analyzer_for(layout.meta, self.document_languages(layout.name))
        return analyzer_for(layout.meta)

    def collection_meta(self, collection: str) -> dict:
        """Return what RAG Lab recorded about a collection (embedder, prompts, analyzer, ...); {} when foreign."""
        return dict(self._layout(collection).meta)

    def collections(self) -> list[CollectionInfo]:
        """Return every collection with its point count, embedder and vectors, sorted by name."""
        infos = []
        for name in self._names():
            layout = self._layout(name)
            with self._guard(f"counting points of '{name}'"):
                points = self.client.count(name, count_filter=models.Filter(must_not=[NOT_REGISTRY, IS_CHILD]),
                                           exact=True).count
            size = layout.vectors.get(layout.vector, 0)
            infos.append(
                CollectionInfo(name, points, layout.embedder, size, layout.vectors, layout.foreign, bool(layout.sparse),
                               layout.prompts, layout.chunk_headers, layout.child_size, self.children(name, layout))
            )
        return infos

    def delete_collection(self, name: str) -> None:
        """Delete a collection and all its points (CollectionNotFoundError if it does not exist)."""
        self._layout(name)
        with self._guard(f"deleting collection '{name}'"):
            self.client.delete_collection(name)

    def has_keywords(self, collection: str) -> bool:
        """Return whether collection has RAG Lab keyword (sparse) vectors for sparse and hybrid search."""
        return bool(self._layout(collection).sparse)

    def points_with_vectors(self, collection: str, ids: list[Any], vector: str, fields: list[str]) -> list[Any]:
        """Return the points of ids with the payload fields and their vectors (every vector when vector == "")."""
        found: list[Any] = []
        for i in range(0, len(ids), 256):
            with self._guard(f"reading vectors of '{collection}'"):
                found += self.client.retrieve(collection, ids[i : i + 256], with_vectors=[vector] if vector else True,
                                              with_payload=models.PayloadSelectorInclude(include=fields))
        return found

    def chunk_headers(self, collection: str, asked: bool | None = None) -> bool:
        """Return whether chunks written to collection are indexed with headers: its record, else asked or default."""
        if self.has_collection(collection):
            return self._layout(collection).chunk_headers
        return headers.DEFAULT_CHUNK_HEADERS if asked is None else asked

    def child_size(self, collection: str, asked: int | None = None) -> int:
        """Return the tokens per child of chunks written to collection: its record, else asked or the default."""
        if self.has_collection(collection):
            return self._layout(collection).child_size
        return children.DEFAULT_CHILD_SIZE if asked is None else children.check_child_size(asked)

    def check_writable(self, name: str, embedder: Embedder, language: str | None = None,
                       chunk_headers: bool | None = None, child_size: int | None = None) -> None:
        """Return None if embedder may write to collection name (new, or made by it); the error saying why not.

        Checked before anything is embedded, so a mismatch costs no embedding time. language and
        chunk_headers and child_size (when given) must be the collection's: a collection keeps the indexing it
        was made with.
        """
        if language is not None:
            keywords.check_language(language)
        if child_size is not None:
            children.check_child_size(child_size)
        if not self.has_collection(name):
            return
        layout = self._layout(name)
        if layout.foreign:
            raise StoreError(
                f"Collection '{name}' was not made by RAG Lab (vectors: {describe_vectors(layout.vectors)}); "
                "it can be searched but not written to. Ingest into another collection name."
            )
        if layout.embedder != embedder.model_id or layout.vectors[layout.vector] != embedder.dimension:
            raise mismatch_error(layout, embedder.model_id, embedder.dimension)
        if layout.prompts != (embedder.query_prompt, embedder.document_prompt):
            query, document = layout.prompts
            raise EmbedderMismatchError(
                f"Collection '{name}' was built with the query prompt '{query}' and the document prompt "
                f"'{document}', not '{embedder.query_prompt}' / '{embedder.document_prompt}'. Use the collection's "
                "prompts (leave --query-prompt/--document-prompt out), or ingest into a new collection."
            )
        recorded = layout.meta.get("language") if layout.meta.get("analyzer") == keywords.ANALYZER else None
        if language is not None and recorded != language:
            raise InvalidSettingsError(
                f"Collection '{name}' analyses keywords {'as ' + repr(recorded) if recorded else 'without stemming'}; "
                f"it cannot switch to '{language}'. Leave --language out, or ingest into a new collection."
            )
        if chunk_headers is not None and chunk_headers != layout.chunk_headers:
            raise InvalidSettingsError(
                f"Collection '{name}' was built with chunk headers {'on' if layout.chunk_headers else 'off'}; it "
                "cannot switch. Leave --chunk-headers out, or ingest into a new collection."
            )
        if child_size is not None and child_size != layout.child_size:
            raise InvalidSettingsError(
                f"Collection '{name}' was built with child size {layout.child_size} (0 = no children); it cannot "
                f"switch to {child_size}. Leave --child-size out, or ingest into a new collection."
            )

    def _ensure_collection(self, name: str, embedder: Embedder, language: str | None = None,
                           chunk_headers: bool | None = None, child_size: int | None = None) -> Layout:
        """Return the layout to write with; create the collection if needed, refuse mismatches.

        language: the keyword language of a new collection (rag.store.keywords; None = "auto"); an existing
        collection keeps its own, and asking for another one is an error.
        """
        vname = vector_name(embedder.model_id)
        created = not self.has_collection(name) and self._create_collection(name, embedder, vname, language,
                                                                             chunk_headers, child_size)
        layout = self._layout(name)
        if layout.foreign and created:
            raise StoreError(
                f"Qdrant at {self.location} did not keep the metadata of the new collection '{name}'; "
                "RAG Lab needs Qdrant server 1.16 or newer."
            )
        self.check_writable(name, embedder, None if created else language, None if created else chunk_headers,
                            None if created else child_size)
        return layout

    def _create_collection(self, name: str, embedder: Embedder, vname: str, language: str | None = None,
                           chunk_headers: bool | None = None, child_size: int | None = None) -> bool:
        """Return True once the collection exists, False if another process created it first."""
        meta = {"embedder": embedder.model_id, "dimension": embedder.dimension, "vector": vname,
                "query_prompt": embedder.query_prompt, "document_prompt": embedder.document_prompt}
        meta |= {"sparse": SPARSE_VECTOR, "analyzer": keywords.ANALYZER,
                 "language": keywords.check_language(language or keywords.DEFAULT_LANGUAGE)}
        meta[headers.META_KEY] = headers.DEFAULT_CHUNK_HEADERS if chunk_headers is None else bool(chunk_headers)
        size = children.DEFAULT_CHILD_SIZE if child_size is None else children.check_child_size(child_size)
        if size:  # a collection without children records nothing: it is the collection of before
            meta[children.META_KEY] = size
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
        if not self.local or isinstance(self.client, EdgeClient):  # qdrant-client's local mode ignores them (and warns)
            for field in ("document_id", "document_title", "generation", "flags"):
                with self._guard(f"indexing {field} in '{name}'"):
                    self.client.create_payload_index(name, field, models.PayloadSchemaType.KEYWORD)
        return True


def invalid_reply(error: BaseException) -> pydantic.ValidationError | None:
    """Return the pydantic error inside a client error when the server's reply did not have Qdrant's shape."""
    if isinstance(error, pydantic.ValidationError):
        return error
    source = getattr(error, "source", None)  # qdrant-client's ResponseHandlingException wraps what went wrong
    return source if isinstance(source, pydantic.ValidationError) else None


def not_qdrant(location: str, action: str, error: pydantic.ValidationError) -> str:
    """Return one line saying that a server's reply was not Qdrant's, and where it first differed."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"] if part != "obj") or "the reply"
    return (f"The server at {location} sent a reply that is not Qdrant's while {action} ({where}: "
            f"{first['msg'][:80]}). Check that the URL points to a Qdrant server (version 1.16 or newer).")


def _identity(folder: str) -> tuple[int, int] | None:
    """Return (device, inode) of a folder, None when it does not exist."""
    try:
        found = os.stat(folder)
    except OSError:
        return None
    return found.st_dev, found.st_ino


# what the embedded engine (qdrant_client.local) raises, as ValueError or RuntimeError, for a user's cause
_REFUSALS = re.compile(r"not found|already exists|does not exist|cannot (be|contain)|at most \d+ characters|NaN|"
                       r"is invalid|Wrong input|Invalid path|instance is closed|already accessed")


def engine_refusal(error: BaseException) -> bool:
    """Return whether the engine raised error (the last frame is qdrant-client's code, or the embedded engine's
    client in rag.store.edge, which refuses as qdrant-client does) for a cause a user can fix (a missing or
    existing collection, a bad name, a NaN vector...). Anything else is a bug and stays one."""
    if isinstance(error, EdgeError):
        return True  # the embedded engine's own refusal or failure, in its words
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    module = frame.tb_frame.f_globals.get("__name__", "") if frame is not None else ""
    return module.startswith(("qdrant_client", "rag.store.edge")) and bool(_REFUSALS.search(str(error)))
