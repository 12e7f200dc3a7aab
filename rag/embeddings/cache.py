"""Embeddings cached by (model id and prompt, sha256 of the text), so an identical chunk or query is embedded once.

Every path shares one cache per store (store_cache): ingest, re-ingest, "Use this configuration", sweeps and
evaluations; a sweep over a collection's documents first takes the collection's stored vectors into it.

In memory (tests, the page without a folder) or in a SQLite file `embeddings.sqlite` in a folder, by
default next to the embedded Qdrant folder: `<RAG_QDRANT_PATH>/../embedding-cache/` (RAG_EMBEDDING_CACHE
overrides it). SQLite lets several processes share the file; each call opens its own connection, so
threads (Streamlit sessions) can share one cache object.
"""

from __future__ import annotations

import hashlib
import sqlite3
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np

from rag import settings
from rag.embeddings.base import Embedder
from rag.errors import EmbeddingCacheError


class StoreLocation(Protocol):
    """What the cache needs of a Store: where it keeps its data (the store stage sits above this one)."""

    local: bool  # an embedded folder (or memory), not a server
    location: str  # the folder, "memory", or the server's URL


EMBED_BATCH = 64  # texts per embed call: the unit of progress reports
_LOOKUP_BATCH = 500  # keys per SELECT (SQLite limits the number of parameters)
_SCHEMA = """CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL, digest BLOB NOT NULL, dimension INTEGER NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (model, digest)) WITHOUT ROWID"""


def text_digest(text: str) -> bytes:
    """Return the sha256 of a text's UTF-8 bytes: the cache key next to the model id."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def cache_model(embedder: Embedder, query: bool) -> str:
    """Return the cache's model key: the model id with the prompt the texts are embedded after."""
    return model_key(embedder.model_id, embedder.query_prompt if query else embedder.document_prompt, query)


def model_key(model_id: str, prompt: str, query: bool = False) -> str:
    """Return the cache's model key of a model id and the query or document prompt (cache_model of an embedder)."""
    return f"{model_id}|{'query' if query else 'document'}:{prompt}"


def default_cache_dir(store: StoreLocation | None = None) -> Path:
    """Return RAG_EMBEDDING_CACHE, else `embedding-cache` next to the store's embedded folder (or RAG_QDRANT_PATH)."""
    folder = store.location if store is not None and store.local and store.location != "memory" else None
    return settings.embedding_cache_folder(folder)


def store_cache(store: StoreLocation) -> EmbeddingCache:
    """Return the cache every path of a store shares by default (ingest, re-ingest, apply, sweeps, evaluations).

    The file in default_cache_dir(store) for a folder or a server; a store in memory gets one cache in memory
    for its life, so nothing of a throwaway store is written to disk.
    """
    if store.local and store.location == "memory":
        cache = _MEMORY_CACHES.get(store)
        if cache is None:
            cache = _MEMORY_CACHES[store] = EmbeddingCache()
        return cache
    return EmbeddingCache(default_cache_dir(store))


class EmbeddingCache:
    """Vectors by (model id, text hash); `folder=None` keeps them in memory for the life of the object."""

    def __init__(self, folder: str | Path | None = None):
        self.path = Path(folder) / "embeddings.sqlite" if folder is not None else None
        self._memory: dict[tuple[str, bytes], np.ndarray] = {}
        self.hits = 0  # texts answered from the cache, over the life of the object
        self.misses = 0  # texts the embedder had to embed
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with closing(self._connect()) as db, db:
                    db.execute(_SCHEMA)
            except (OSError, sqlite3.Error) as error:
                raise EmbeddingCacheError(
                    f"The embedding cache {self.path} cannot be opened ({error}). Delete that file, or set "
                    "RAG_EMBEDDING_CACHE to a writable folder."
                ) from error

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.path) if self.path else 'memory'})"

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def embed(
        self, texts: Sequence[str], embedder: Embedder, progress: Callable[[int, int], None] | None = None,
        *, query: bool = False,
    ) -> np.ndarray:
        """Return the float32 vectors of texts (queries when query, else documents); only new ones are embedded.

        A vector is cached under the model and the prompt it was embedded with, so a query and the same text
        as a document, or two prompts, never share one. progress(done, total) counts the texts that need
        the embedder (0 of 0 when all were cached).
        """
        model = cache_model(embedder, query)
        digests = [text_digest(t) for t in texts]
        found = self._lookup(model, set(digests))
        todo = {d: t for d, t in zip(digests, texts, strict=True) if d not in found}
        self.hits += len(texts) - sum(d in todo for d in digests)
        self.misses += len(todo)
        if progress:
            progress(0, len(todo))
        pending = list(todo.items())
        for i in range(0, len(pending), EMBED_BATCH):
            batch = pending[i : i + EMBED_BATCH]
            embed = embedder.embed_query if query else embedder.embed_documents
            vectors = np.asarray(embed([t for _, t in batch]), dtype=np.float32)
            fresh = {d: v for (d, _), v in zip(batch, vectors, strict=True)}
            self._save(model, fresh)
            found.update(fresh)
            if progress:
                progress(min(i + EMBED_BATCH, len(pending)), len(pending))
        if not texts:
            return np.zeros((0, embedder.dimension), dtype=np.float32)
        return np.vstack([found[d] for d in digests]).astype(np.float32)

    def lacking(self, texts: Sequence[str], embedder: Embedder, *, query: bool = False) -> list[str]:
        """Return the distinct texts the cache holds no vector of (what embed would give the embedder), in order."""
        digests = {text_digest(t): t for t in texts}
        known = self._known(cache_model(embedder, query), set(digests))
        return [t for d, t in digests.items() if d not in known]

    def remember(self, model: str, texts: Sequence[str], vectors: Sequence[np.ndarray]) -> None:
        """Keep vectors an embedder made earlier (a collection's stored ones) under model (model_key) and texts."""
        pairs = zip(texts, vectors, strict=True)
        self._save(model, {text_digest(t): np.asarray(v, dtype=np.float32) for t, v in pairs})

    def _lookup(self, model: str, digests: set[bytes]) -> dict[bytes, np.ndarray]:
        if self.path is None:
            return {d: self._memory[(model, d)] for d in digests if (model, d) in self._memory}
        found: dict[bytes, np.ndarray] = {}
        keys = list(digests)
        with self._database("reading") as db:
            for i in range(0, len(keys), _LOOKUP_BATCH):
                part = keys[i : i + _LOOKUP_BATCH]
                rows = db.execute(
                    f"SELECT digest, vector FROM vectors WHERE model = ? AND digest IN ({','.join('?' * len(part))})",
                    [model, *part],
                )
                found.update((bytes(d), np.frombuffer(v, dtype=np.float32)) for d, v in rows)
        return found

    def _known(self, model: str, digests: set[bytes]) -> set[bytes]:
        """Return the digests among digests the cache holds a vector of under model (the vectors are not read)."""
        if self.path is None:
            return {d for d in digests if (model, d) in self._memory}
        known: set[bytes] = set()
        keys = list(digests)
        with self._database("reading") as db:
            for i in range(0, len(keys), _LOOKUP_BATCH):
                part = keys[i : i + _LOOKUP_BATCH]
                rows = db.execute(
                    f"SELECT digest FROM vectors WHERE model = ? AND digest IN ({','.join('?' * len(part))})",
                    [model, *part],
                )
                known.update(bytes(d) for (d,) in rows)
        return known

    def _save(self, model: str, vectors: dict[bytes, np.ndarray]) -> None:
        if self.path is None:
            self._memory.update(((model, d), v.copy()) for d, v in vectors.items())
            return
        rows = [(model, d, len(v), np.ascontiguousarray(v, dtype=np.float32).tobytes()) for d, v in vectors.items()]
        with self._database("writing") as db:
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)

    @contextmanager
    def _database(self, action: str) -> Iterator[sqlite3.Connection]:
        """Yield a connection for one read or write, committed on success; SQLite errors become ours."""
        try:
            with closing(self._connect()) as db, db:
                yield db
        except sqlite3.Error as error:
            raise EmbeddingCacheError(
                f"The embedding cache {self.path} failed while {action} ({error}). It only saves time: "
                "delete the file and run again."
            ) from error


_MEMORY_CACHES: weakref.WeakKeyDictionary[StoreLocation, EmbeddingCache] = weakref.WeakKeyDictionary()
