"""EdgeClient: the part of qdrant-client's QdrantClient that RAG Lab uses, on Qdrant Edge shards in a folder.

Layout of an embedded store folder:

    <folder>/.lock                       held (flock) while a process has the folder open; qdrant-client's
                                         local mode locks the same file, so the two never share a folder
    <folder>/edge/<name>/collection.json the collection's name, vectors and metadata (written atomically)
    <folder>/edge/<name>/shard/          the Qdrant Edge shard: segments and write-ahead log
    <folder>/edge/<name>/shard.replaced/ the shard an index build replaces, while the new one is moved in
    <folder>/edge/.index-*/              an index build's copy; its build.lock is held while its child lives

What else a killed process leaves (temporary files, the engine's half-built segments, a killed move's staging
folder) is removed at the next open, under the lock: rag.store.edge.leftovers.

A collection appears by one rename of a finished folder and disappears by one rename before it is removed,
so a kill -9 never leaves half a collection; points are written through the shard's WAL, replayed on the next
open. Methods take and return qdrant-client models, so rag.store.client.Store works on both clients.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import threading
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from qdrant_client import models
from qdrant_client.http import models as rest

from rag.files import write_atomic
from rag.store.edge import api, leftovers, space, ties
from rag.store.edge import child as build_child
from rag.store.edge.index import trusted
from rag.store.edge.leftovers import CONFIG_FILE, EDGE_DIR, SHARD_DIR

OLD_SHARD_DIR = "shard.replaced"  # the shard an index build replaces, until the new one is in place


class FolderInUseError(RuntimeError):
    """Another client (this process or another) has the folder open."""


@dataclass
class _Params:
    vectors: Any  # VectorParams (one unnamed vector) or {name: VectorParams}
    sparse_vectors: dict[str, models.SparseVectorParams] = field(default_factory=dict)


@dataclass
class _Config:
    params: _Params
    metadata: dict | None = None


@dataclass
class CollectionView:
    """What get_collection returns: the fields of qdrant-client's CollectionInfo that RAG Lab reads."""

    config: _Config


class EdgeClient:
    """Collections of an embedded folder on Qdrant Edge, with QdrantClient's method names and models."""

    def __init__(self, path: str, temporary: bool = False):
        """Open (create) the folder at path and lock it; temporary: remove the folder on close and at exit."""
        self.path = path
        self._remove = weakref.finalize(self, shutil.rmtree, path, True) if temporary else None
        os.makedirs(os.path.join(path, EDGE_DIR), exist_ok=True)
        self._lock_file = open(os.path.join(path, ".lock"), "a+")  # noqa: SIM115 - held until close()
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            raise FolderInUseError(f"Storage folder {path} is already accessed by another instance") from None
        self._shards: dict[str, Any] = {}
        self._configs: dict[str, dict] = {}
        self._mutex = threading.RLock()
        self.exact = False  # True: every search scans all vectors, even where an HNSW index exists
        self._writes: dict[str, int] = {}  # writes per collection in this process (replace_shard compares them)
        # counts answered since a collection's last write: (its write count, {filter: count}). The folder's lock
        # makes this process its only writer, so a count stays true until this client writes (see count)
        self._counts: dict[str, tuple[int, dict[str, int]]] = {}
        # What a killed process left while it made, removed or indexed a collection: the folder lock says no process
        # is at it now; an index copy's own lock says whether the build child of a killed process still lives (it
        # ends with its parent, rag.store.edge.child: the next open removes the copy)
        for leftover in os.listdir(os.path.join(path, EDGE_DIR)):
            folder = os.path.join(path, EDGE_DIR, leftover)
            if leftover.startswith(".") and not build_child.in_use(folder):
                shutil.rmtree(folder, ignore_errors=True)
            elif not leftover.startswith("."):
                _finish_swap(folder)
        leftovers.sweep(path)  # temporary files and staging folders of killed writers (rag.store.edge.leftovers)

    def close(self) -> None:
        with self._mutex:
            for shard in self._shards.values():
                api.close_shard(shard)
            self._shards.clear()
            if not self._lock_file.closed:
                fcntl.flock(self._lock_file, fcntl.LOCK_UN)
                self._lock_file.close()
            if self._remove is not None:
                self._remove()

    # ---- collections -------------------------------------------------------------------------------------------

    def _folder(self, name: str) -> str:
        return os.path.join(self.path, EDGE_DIR, quote(name, safe=""))

    def collection_exists(self, name: str) -> bool:
        return os.path.isfile(os.path.join(self._folder(name), CONFIG_FILE))

    def collection_names(self) -> list[str]:
        root = os.path.join(self.path, EDGE_DIR)
        names = []
        for entry in sorted(os.listdir(root)):
            if not entry.startswith(".") and os.path.isfile(os.path.join(root, entry, CONFIG_FILE)):
                names.append(self._read_config(os.path.join(root, entry))["name"])
        return names

    def get_collections(self) -> models.CollectionsResponse:
        return models.CollectionsResponse(collections=[models.CollectionDescription(name=n)
                                                       for n in self.collection_names()])

    def _config(self, name: str) -> dict:
        if name not in self._configs:
            if not self.collection_exists(name):
                raise ValueError(f"Collection {name} not found")
            self._configs[name] = self._read_config(self._folder(name))
        return self._configs[name]

    @staticmethod
    def _read_config(folder: str) -> dict:
        with open(os.path.join(folder, CONFIG_FILE), encoding="utf-8") as f:
            return json.load(f)

    def get_collection(self, name: str) -> CollectionView:
        return collection_view(self._config(name))

    def create_collection(self, collection_name: str, vectors_config: Any = None,
                          sparse_vectors_config: dict | None = None, metadata: dict | None = None, **_: Any) -> bool:
        """Create a collection: a shard made in a hidden folder, then renamed into place (all or nothing)."""
        name = collection_name
        with self._mutex:
            if self.collection_exists(name):
                raise ValueError(f"Collection `{name}` already exists!")
            unnamed = isinstance(vectors_config, models.VectorParams)
            dense = {"": vectors_config} if unnamed else dict(vectors_config or {})
            sparse = dict(sparse_vectors_config or {})
            config = {"name": name, "unnamed": unnamed, "metadata": metadata, "engine": f"qdrant-edge {api.VERSION}",
                      "vectors": {k: {"size": v.size, "distance": api._name(v.distance)} for k, v in dense.items()},
                      "sparse": {k: {"modifier": "idf" if v and v.modifier == models.Modifier.IDF else None}
                                 for k, v in sparse.items()}}
            space.check(self.path, 0)
            staging = os.path.join(self.path, EDGE_DIR, f".new-{uuid.uuid4().hex}")
            try:
                api.close_shard(api.create_shard(os.path.join(staging, SHARD_DIR), api.shard_config(dense, sparse)))
                _write_json(os.path.join(staging, CONFIG_FILE), config)
                os.rename(staging, self._folder(name))
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            self._configs[name] = config
        return True

    def update_collection(self, collection_name: str, metadata: dict | None = None, **_: Any) -> bool:
        with self._mutex:
            config = dict(self._config(collection_name))
            if metadata is not None:
                config["metadata"] = {**(config.get("metadata") or {}), **metadata}
            _write_json(os.path.join(self._folder(collection_name), CONFIG_FILE), config)
            self._configs[collection_name] = config
        return True

    def delete_collection(self, collection_name: str, **_: Any) -> bool:
        with self._mutex:
            if not self.collection_exists(collection_name):
                return False
            self._counts.pop(collection_name, None)
            shard = self._shards.pop(collection_name, None)
            if shard is not None:
                api.close_shard(shard)
            self._configs.pop(collection_name, None)
            doomed = os.path.join(self.path, EDGE_DIR, f".deleted-{uuid.uuid4().hex}")
            os.rename(self._folder(collection_name), doomed)
            shutil.rmtree(doomed, ignore_errors=True)
        return True

    def create_payload_index(self, collection_name: str, field_name: str, field_schema: Any = None, **_: Any) -> None:
        space.check(self.path, 0)
        with self._writing(collection_name) as shard:
            api.index_keyword(shard, field_name)

    def _shard(self, name: str) -> Any:
        with self._mutex:
            if name not in self._shards:
                self._config(name)
                self._shards[name] = api.load_shard(os.path.join(self._folder(name), SHARD_DIR),
                                                    api.open_config(self._config(name)))
            return self._shards[name]

    @contextmanager
    def _writing(self, name: str) -> Iterator[Any]:
        """Hold the lock for one write to a collection and count it (an index build started before is void)."""
        with self._mutex:
            self._writes[name] = self._writes.get(name, 0) + 1
            yield self._shard(name)

    def _unnamed(self, name: str) -> bool:
        return bool(self._config(name).get("unnamed"))

    # ---- points ------------------------------------------------------------------------------------------------

    def upsert(self, collection_name: str, points: list[models.PointStruct], wait: bool = True, **_: Any) -> None:
        space.check(self.path, sum(space.point_size(p) for p in points))
        with self._writing(collection_name) as shard:
            api.upsert(shard, list(points), self._unnamed(collection_name))

    def retrieve(self, collection_name: str, ids: list[Any], with_payload: Any = True, with_vectors: Any = False,
                 **_: Any) -> list[models.Record]:
        return api.retrieve(self._shard(collection_name), list(ids), with_payload, with_vectors,
                            self._unnamed(collection_name))

    def scroll(self, collection_name: str, scroll_filter: models.Filter | None = None, limit: int = 10,
               offset: Any = None, with_payload: Any = True, with_vectors: Any = False, **_: Any
               ) -> tuple[list[models.Record], Any]:
        return api.scroll(self._shard(collection_name), scroll_filter, limit, offset, with_payload, with_vectors,
                          self._unnamed(collection_name))

    def count(self, collection_name: str, count_filter: models.Filter | None = None, exact: bool = True,
              **_: Any) -> models.CountResult:
        """Count the points matching count_filter; a count asked again before the next write is remembered: every
        search asks one (Store.search_filter's table-of-contents check), and each engine call waits for the
        engine's search thread, which on a busy CPU waits for a time slice (0.1 ms quiet, 4 ms at load 4)."""
        key = "" if count_filter is None else count_filter.model_dump_json(exclude_unset=True)
        with self._mutex:
            writes = self._writes.get(collection_name, 0)
            known, counts = self._counts.get(collection_name, (writes, {}))
            if known != writes:
                counts = {}
            if key not in counts:
                counts[key] = api.count(self._shard(collection_name), count_filter)
            self._counts[collection_name] = (writes, counts)
            return models.CountResult(count=counts[key])

    def delete(self, collection_name: str, points_selector: Any, wait: bool = True, **_: Any) -> None:
        if isinstance(points_selector, models.FilterSelector):
            points_selector = points_selector.filter
        with self._writing(collection_name) as shard:
            if isinstance(points_selector, models.Filter):
                api.delete_where(shard, points_selector)
            else:
                ids = points_selector.points if isinstance(points_selector, models.PointIdsList) else points_selector
                api.delete_ids(shard, list(ids))
            if self._config(collection_name).get("index"):
                self._set_index(collection_name, vacuum_pending=True)  # the next build vacuums, in a child process
            else:
                api.vacuum(shard)  # keyword scores (IDF) must not count what was deleted

    def set_payload(self, collection_name: str, payload: dict, points: list[Any], wait: bool = True,
                    **_: Any) -> None:
        space.check(self.path, len(json.dumps(payload, default=str)) * len(_ids(points)), space.SMALL_FREE)
        with self._writing(collection_name) as shard:
            api.set_payload(shard, _ids(points), payload)

    def delete_payload(self, collection_name: str, keys: list[str], points: list[Any], wait: bool = True,
                       **_: Any) -> None:
        with self._writing(collection_name) as shard:
            api.delete_payload(shard, _ids(points), keys)

    def query_batch_points(self, collection_name: str, requests: list[models.QueryRequest], **_: Any
                           ) -> list[rest.QueryResponse]:
        unnamed, exact = self._unnamed(collection_name), self.exact or not self._trusted(collection_name)
        ef = (self._config(collection_name).get("index") or {}).get("hnsw_ef")
        with self._mutex:  # not during replace_shard
            shard = self._shard(collection_name)
            answers = ties.stable_batch(lambda asked: api.query_batch(shard, asked, unnamed, exact, ef),
                                        list(requests))
        return [rest.QueryResponse.model_construct(points=points) for points in answers]  # api.EdgePoint, as they are

    def query_points(self, collection_name: str, query: Any = None, using: str | None = None,
                     prefetch: Any = None, query_filter: models.Filter | None = None, limit: int = 10,
                     with_payload: Any = True, with_vectors: Any = False, score_threshold: float | None = None,
                     **_: Any) -> rest.QueryResponse:
        request = models.QueryRequest(query=query, using=using, prefetch=prefetch, filter=query_filter, limit=limit,
                                      with_payload=with_payload, with_vector=with_vectors,
                                      score_threshold=score_threshold)
        return self.query_batch_points(collection_name, [request])[0]

    # ---- index (rag.store.edge.index) ----------------------------------------------------------------------

    def collection_config(self, name: str) -> dict:
        """Return what collection.json says of a collection: name, vectors, sparse, metadata, index."""
        return dict(self._config(name))

    def index_state(self, collection_name: str) -> dict[str, Any]:
        """Return {"points", "indexed_vectors", "segments", "vectors": {name: points holding it}} of a collection."""
        config = self._config(collection_name)
        with self._mutex:
            shard = self._shard(collection_name)
            counts = api.vector_counts(shard, [*config["vectors"], *config["sparse"]])
            return {**api.shard_info(shard), "vectors": counts}

    def copy_shard(self, name: str, target: str) -> int:
        """Copy a collection's shard and collection.json into the new folder target (flushed first, under the
        lock: no write half in it); return the collection's write count, which replace_shard compares."""
        with self._mutex:
            shard = self._shard(name)
            size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(self._folder(name))
                       for f in files)
            space.check(self.path, 2 * size)  # the copy, and the graph the build adds to it
            api.flush(shard)
            shutil.copytree(os.path.join(self._folder(name), SHARD_DIR), os.path.join(target, SHARD_DIR))
            _write_json(os.path.join(target, CONFIG_FILE), self._config(name))
            return self._writes.get(name, 0)

    def replace_shard(self, name: str, source: str, writes: int, record: dict) -> bool:
        """Put the shard in source in place of the collection's, and record its index in collection.json, unless
        the collection was written to since copy_shard returned writes (then False, nothing changed)."""
        with self._mutex:
            if self._writes.get(name, 0) != writes or not self.collection_exists(name):
                return False
            folder = self._folder(name)
            old = os.path.join(folder, OLD_SHARD_DIR)  # beside the shard: an open puts it back after a kill
            shutil.rmtree(old, ignore_errors=True)
            api.close_shard(self._shards.pop(name))
            self._counts.pop(name, None)
            os.rename(os.path.join(folder, SHARD_DIR), old)
            os.rename(os.path.join(source, SHARD_DIR), os.path.join(folder, SHARD_DIR))
            config = {**self._config(name), "index": record}
            _write_json(os.path.join(folder, CONFIG_FILE), config)
            self._configs[name] = config
            self._shards[name] = api.load_shard(os.path.join(folder, SHARD_DIR), api.open_config(config))
            shutil.rmtree(old, ignore_errors=True)
        return True

    def _set_index(self, name: str, **record: Any) -> None:
        """Update the index record in a collection's collection.json."""
        config = self._config(name)
        config = {**config, "index": {**(config.get("index") or {}), **record}}
        _write_json(os.path.join(self._folder(name), CONFIG_FILE), config)
        self._configs[name] = config

    def _trusted(self, name: str) -> bool:
        """Return whether searches of a collection may go through its HNSW graph: its measured recall is good enough
        (rag.store.edge.index.trusted)."""
        return trusted(self._config(name).get("index") or {})


def collection_view(config: dict) -> CollectionView:
    """Return what get_collection gives for a collection.json (also read through another process: rag.store.reads)."""
    vectors: Any = {k: models.VectorParams(**v) for k, v in config["vectors"].items()}
    if config.get("unnamed"):
        vectors = vectors[""]
    sparse = {k: models.SparseVectorParams(modifier=models.Modifier.IDF if v.get("modifier") == "idf" else None)
              for k, v in config["sparse"].items()}
    return CollectionView(_Config(_Params(vectors, sparse), config.get("metadata")))


def _finish_swap(folder: str) -> None:
    """Finish what a process killed inside replace_shard left: between its two renames the collection has no shard
    but the old one beside it (put back: collection.json still describes it); after them, only the old one to remove."""
    old = os.path.join(folder, OLD_SHARD_DIR)
    if not os.path.isdir(old):
        return
    if os.path.isdir(os.path.join(folder, SHARD_DIR)):
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(old, os.path.join(folder, SHARD_DIR))


def _ids(points: Any) -> list[Any]:
    if isinstance(points, models.PointIdsList):
        return list(points.points)
    if isinstance(points, models.Filter | models.FilterSelector):
        raise ValueError("The embedded engine sets payloads by point ids, not by filter.")
    return list(points)


def _write_json(path: str, data: dict) -> None:
    """Write a JSON file whole (rag.files.write_atomic)."""
    write_atomic(path, json.dumps(data, ensure_ascii=False))
