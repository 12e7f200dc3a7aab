"""Embeddings cached by (model id and prompt, sha256 of the text), so an identical chunk or query is embedded once.

Every path shares one cache per store (store_cache): ingest, re-ingest, "Use this configuration", sweeps and
evaluations; a sweep over a collection's documents first takes the collection's stored vectors into it.

In memory (tests, the page without a folder) or in a SQLite file `embeddings.sqlite` in a folder, by
default next to the embedded Qdrant folder: `<RAG_QDRANT_PATH>/../embedding-cache/` (RAG_EMBEDDING_CACHE
overrides it). SQLite lets several processes share the file; each call opens its own connection, so
threads (Streamlit sessions) can share one cache object.

The cache only saves time, so it is never trusted: a file that is not a database, is damaged (truncated,
overwritten) or holds another table of that name is renamed to `embeddings.sqlite.damaged-<time>` and a new one is
built, said in one line (logged, and in `notices` for the caller: an ingest shows it as a note); a cached vector
of the wrong length, with NaN or infinity, or all zeros is a miss, embedded again and overwritten. A vector an
embedder returns like that is refused (EmbeddingError naming the model and the text), never stored.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import time
import weakref
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rag import settings
from rag.embeddings.base import Embedder
from rag.errors import EmbeddingCacheError, EmbeddingError

logger = logging.getLogger(__name__)


class StoreLocation(Protocol):
    """What the cache needs of a Store: where it keeps its data (the store stage sits above this one)."""

    local: bool  # an embedded folder (or memory), not a server
    location: str  # the folder, "memory", or the server's URL


EMBED_BATCH = 64  # texts per embed call: the unit of progress reports
_LOOKUP_BATCH = 500  # keys per SELECT (SQLite limits the number of parameters)
_SCHEMA = """CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL, digest BLOB NOT NULL, dimension INTEGER NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (model, digest)) WITHOUT ROWID"""
_COLUMNS = ["model", "digest", "dimension", "vector"]
_DAMAGED = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB: the file is damaged or no database (extended codes: & 0xFF)


class _Damaged(Exception):
    """The cache file is no usable cache: not SQLite, damaged, or its table is another one."""


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
        self.notices: list[str] = []  # what the cache did on its own (a damaged file set aside): take_notices()
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise EmbeddingCacheError(
                    f"The embedding cache {self.path} cannot be opened ({error}). Set RAG_EMBEDDING_CACHE to a "
                    "writable folder."
                ) from error
            self._run("opening", lambda db: None)  # creates the table, or sets a damaged file aside

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
        found = self._lookup(model, set(digests), embedder.dimension) if texts else {}
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
            _check_fresh(vectors, [t for _, t in batch], embedder, query)
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
        pairs = [(t, np.asarray(v, dtype=np.float32)) for t, v in zip(texts, vectors, strict=True)]
        self._save(model, {text_digest(t): v for t, v in pairs if usable(v, v.size)})

    def take_notices(self) -> list[str]:
        """Return (and forget) the one-line notices of what the cache did on its own since the last call."""
        taken, self.notices[:] = list(self.notices), []
        return taken

    def _lookup(self, model: str, digests: set[bytes], dimension: int) -> dict[bytes, np.ndarray]:
        """Return the usable cached vectors of digests (see usable): an unusable one is a miss, overwritten later."""
        if self.path is None:
            found = {d: self._memory[(model, d)] for d in digests if (model, d) in self._memory}
        else:
            keys = list(digests)

            def read(db: sqlite3.Connection) -> dict[bytes, np.ndarray]:
                rows: dict[bytes, np.ndarray] = {}
                for i in range(0, len(keys), _LOOKUP_BATCH):
                    part = keys[i : i + _LOOKUP_BATCH]
                    marks = ",".join("?" * len(part))
                    selected = db.execute(f"SELECT digest, vector FROM vectors WHERE model = ? AND digest IN ({marks})",
                                          [model, *part])
                    rows.update((bytes(d), np.frombuffer(v, dtype=np.float32)) for d, v in selected)
                return rows

            found = self._run("reading", read, default={})
        return {d: v for d, v in found.items() if usable(v, dimension)}

    def _known(self, model: str, digests: set[bytes]) -> set[bytes]:
        """Return the digests among digests the cache holds a vector of under model (the vectors are not read)."""
        if self.path is None:
            return {d for d in digests if (model, d) in self._memory}
        keys = list(digests)

        def read(db: sqlite3.Connection) -> set[bytes]:
            known: set[bytes] = set()
            for i in range(0, len(keys), _LOOKUP_BATCH):
                part = keys[i : i + _LOOKUP_BATCH]
                rows = db.execute(
                    f"SELECT digest FROM vectors WHERE model = ? AND digest IN ({','.join('?' * len(part))})",
                    [model, *part],
                )
                known.update(bytes(d) for (d,) in rows)
            return known

        return self._run("reading", read, default=set())  # a damaged file is set aside: nothing is known

    def _save(self, model: str, vectors: dict[bytes, np.ndarray]) -> None:
        if self.path is None:
            self._memory.update(((model, d), v.copy()) for d, v in vectors.items())
            return
        rows = [(model, d, len(v), np.ascontiguousarray(v, dtype=np.float32).tobytes()) for d, v in vectors.items()]
        self._run("writing", lambda db: db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows))

    def _run(self, action: str, work: Callable[[sqlite3.Connection], Any], default: Any = None) -> Any:
        """Return work(connection), committed; a damaged file is set aside and work runs again on a new one (a
        read then finds nothing: default). Other SQLite errors (locked, disk full) become EmbeddingCacheError."""
        for attempt in (1, 2):
            identity = _identity(self.path)
            try:
                with closing(self._connect()) as db, db:
                    _check_schema(db)
                    return work(db)
            except (sqlite3.DatabaseError, _Damaged) as error:
                if attempt == 2 or not _damaged(error):
                    raise EmbeddingCacheError(
                        f"The embedding cache {self.path} failed while {action} ({error}). It only saves time: "
                        "delete the file, or set RAG_EMBEDDING_CACHE to a writable folder, and run again."
                    ) from error
                self._set_aside(identity, error)
                if default is not None:  # a read: the new file holds nothing yet
                    return default
        return default

    def _set_aside(self, identity: tuple[int, int] | None, error: Exception) -> None:
        """Rename the damaged file (unless another process did already) and say so in one line."""
        assert self.path is not None
        aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        if identity is not None and _identity(self.path) == identity:
            try:
                os.replace(self.path, aside)
                for suffix in ("-journal", "-wal", "-shm"):  # a damaged file's journal must not meet the new one
                    if os.path.exists(f"{self.path}{suffix}"):
                        os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
            except OSError as failure:
                raise EmbeddingCacheError(f"The embedding cache {self.path} is damaged ({error}) and cannot be set "
                                          f"aside ({failure}). Delete that file and run again.") from failure
        notice = (f"The embedding cache {self.path} was damaged ({error}); it was set aside as {aside.name} and a "
                  "new one is built (it only saves time: nothing else is affected).")
        logger.warning(notice)
        self.notices.append(notice)


def usable(vector: np.ndarray, dimension: int) -> bool:
    """Return whether a vector can stand for a text: dimension numbers, all finite, not all zero."""
    return vector.ndim == 1 and vector.size == dimension and bool(np.isfinite(vector).all()) and bool(vector.any())


def _check_fresh(vectors: np.ndarray, texts: Sequence[str], embedder: Embedder, query: bool) -> None:
    """Refuse what an embedder returned unless every vector is usable: EmbeddingError naming the model and text."""
    for i, text in enumerate(texts):
        vector = vectors[i] if vectors.ndim == 2 and i < len(vectors) else np.zeros(0, dtype=np.float32)
        if usable(vector, embedder.dimension):
            continue
        if vector.size == 0:
            what = "an empty vector"
        elif vector.size != embedder.dimension:
            what = f"a vector of {vector.size} numbers ({embedder.dimension} expected)"
        else:
            what = "a vector with NaN or infinity" if not np.isfinite(vector).all() else "an all-zero vector"
        shown = " ".join(text.split())
        shown = shown if len(shown) <= 60 else shown[:59] + "…"
        raise EmbeddingError(
            f"The embedding model '{embedder.model_id}' returned {what} for the {'query' if query else 'chunk'} "
            f"{shown!r}; nothing of it was stored. Check the model or its server (e.g. its memory or "
            "quantisation), or choose another embedder."
        )


def _check_schema(db: sqlite3.Connection) -> None:
    """Create the table if missing; _Damaged if a table of that name has other columns (another program's file)."""
    db.execute(_SCHEMA)
    columns = [row[1] for row in db.execute("PRAGMA table_info(vectors)")]
    if columns != _COLUMNS:
        raise _Damaged(f"its table 'vectors' has the columns {', '.join(columns)}")


def _damaged(error: Exception) -> bool:
    return isinstance(error, _Damaged) or (getattr(error, "sqlite_errorcode", 0) & 0xFF) in _DAMAGED


def _identity(path: Path | None) -> tuple[int, int] | None:
    """Return (device, inode) of the file at path, None if there is none: the same file is still there."""
    try:
        status = os.stat(path) if path is not None else None
    except OSError:
        return None
    return (status.st_dev, status.st_ino) if status is not None else None


_MEMORY_CACHES: weakref.WeakKeyDictionary[StoreLocation, EmbeddingCache] = weakref.WeakKeyDictionary()
