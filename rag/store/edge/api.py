"""The one module that talks to qdrant-edge-py (Qdrant's engine in-process, a beta API pinned at 0.9.0).

Everything else speaks qdrant-client's models (`qdrant_client.models`): this module turns the requests RAG Lab
sends (filters, dense/sparse queries, prefetch + fusion, payload selectors) into qdrant-edge objects, runs them
on a shard, and turns the answers back into qdrant-client models, so an upgrade of qdrant-edge-py is this file
and its tests (tests/store/test_edge_api.py) only. Anything RAG Lab does not use raises ValueError here rather
than being half translated.

Engine errors (qdrant-edge raises plain Exception) become EdgeError (a RuntimeError), or OSError(ENOSPC) when
the disk is full, which rag.store.client turns into its one-line StoreErrors.
"""

from __future__ import annotations

import errno
import functools
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import qdrant_edge as qe
from qdrant_client import models

VERSION = "0.9.0"  # the qdrant-edge-py this wrapper is written and tested against (requirements.txt pins it)
_DISTANCES = {"Cosine": qe.Distance.Cosine, "Dot": qe.Distance.Dot, "Euclid": qe.Distance.Euclid,
              "Manhattan": qe.Distance.Manhattan}
_NO_SPACE = ("No space left", "os error 28", "disk is full")


class EdgeError(RuntimeError):
    """The embedded engine refused or failed an operation."""


@contextmanager
def engine_errors() -> Iterator[None]:
    """Turn qdrant-edge's plain Exceptions into EdgeError (OSError with ENOSPC when the disk is full)."""
    try:
        yield
    except (EdgeError, ValueError, TypeError, OSError):
        raise
    except Exception as e:  # qdrant-edge raises Exception for every engine error
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if any(marker in text for marker in _NO_SPACE):
            raise OSError(errno.ENOSPC, f"disk is full ({text})") from e
        raise EdgeError(text) from e


# ---- shards ----------------------------------------------------------------------------------------------------

NO_INDEX = 0  # indexing_threshold of a new shard: no HNSW (exact search, and a vacuum stays cheap)
# indexing_threshold of an index build (rag.store.edge.index): every segment gets its HNSW graph. The shard keeps it
# in its stored config; the app's process never runs the optimizers of an indexed shard (a delete leaves its vacuum
# to the next build): rebuilding a graph there would hold the GIL for seconds to minutes.
INDEX_KB = 1
# Qdrant's BM25 IDF counts deleted points until their segment is vacuumed: a re-ingested or deleted document would
# change every keyword score of the collection (the same chunks scored 8.22 fresh and 8.71 after a re-ingest).
# These make optimize() vacuum any segment with a deleted point; vacuum() runs it after every delete.
_VACUUM = {"deleted_threshold": 1e-9, "vacuum_min_vector_number": 1}


# The HNSW graph: Qdrant's m, a wider ef_construct than its 100, with which a wider search ef alone reached recall@10
# 0.98 on real e5 vectors only at 1024 (docs/benchmarks.md, "Real embeddings are harder for HNSW"); below
# FULL_SCAN_KB of vectors in a segment the engine compares them all (Qdrant's default).
HNSW_M, HNSW_EF_CONSTRUCT, FULL_SCAN_KB = 16, 256, 10_000


# Threads of a shard's search pool (default: one per CPU), each segment's search handed to one: on a busy CPU every
# handoff waits (indexed: 1.5 ms with one, 4-5 ms with 2; docs/benchmarks.md, "Search latency under a busy CPU")
SEARCH_THREADS = 1


def _vector_params(vectors: dict[str, models.VectorParams], sparse: dict[str, models.SparseVectorParams]) -> dict:
    dense = {name: qe.EdgeVectorParams(size=p.size, distance=_DISTANCES[_name(p.distance)])
             for name, p in vectors.items()}
    idf = {name for name, p in sparse.items() if p and p.modifier == models.Modifier.IDF}
    keyword = {name: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if name in idf else None) for name in sparse}
    return {"vectors": dense, "sparse_vectors": keyword, "max_search_threads": SEARCH_THREADS}


def shard_config(vectors: dict[str, models.VectorParams], sparse: dict[str, models.SparseVectorParams],
                 indexing_threshold_kb: int = NO_INDEX) -> Any:
    """Return the EdgeConfig of a collection's vectors (dense: size and distance; sparse: IDF modifier or not), its
    deleted points vacuumed by optimize() and HNSW built only above indexing_threshold_kb (0: never)."""
    optimizers = qe.EdgeOptimizersConfig(indexing_threshold=indexing_threshold_kb, **_VACUUM)
    graph = qe.HnswIndexConfig(m=HNSW_M, ef_construct=HNSW_EF_CONSTRUCT, full_scan_threshold=FULL_SCAN_KB)
    return qe.EdgeConfig(**_vector_params(vectors, sparse), optimizers=optimizers, hnsw_config=graph)


def _models_of(collection: dict) -> tuple[dict[str, models.VectorParams], dict[str, models.SparseVectorParams]]:
    dense = {k: models.VectorParams(size=v["size"], distance=models.Distance(v["distance"]))
             for k, v in collection["vectors"].items()}
    sparse = {k: models.SparseVectorParams(modifier=models.Modifier.IDF if v["modifier"] else None)
              for k, v in collection["sparse"].items()}
    return dense, sparse


def config_of(collection: dict, indexing_threshold_kb: int) -> Any:
    """Return the EdgeConfig of a collection as its collection.json describes it (rag.store.edge.client)."""
    return shard_config(*_models_of(collection), indexing_threshold_kb)


def open_config(collection: dict) -> Any:
    """Return the EdgeConfig of an open: the vectors (checked) and SEARCH_THREADS; the rest as the shard keeps it."""
    return qe.EdgeConfig(**_vector_params(*_models_of(collection)))


def create_shard(path: str, config: Any) -> Any:
    with engine_errors():
        return qe.EdgeShard.create(path, config)


def load_shard(path: str, config: Any = None) -> Any:
    """Open a shard folder (replaying its write-ahead log), with config instead of its own if given; EdgeError if
    another process holds it."""
    with engine_errors():
        return qe.EdgeShard.load(path, config)


def close_shard(shard: Any) -> None:
    with engine_errors():
        shard.close()


def flush(shard: Any) -> None:
    """Write the shard's in-memory state to its files (the log already holds every update)."""
    with engine_errors():
        shard.flush()


def vacuum(shard: Any) -> None:
    """Rewrite the segments that hold deleted points, so keyword IDF counts only the points there are."""
    with engine_errors():
        shard.optimize()


def build_index(shard: Any) -> bool:
    """Run the shard's optimizers (HNSW above its indexing threshold), blocking; True if anything changed."""
    with engine_errors():
        return shard.optimize()


def shard_info(shard: Any) -> dict[str, int]:
    with engine_errors():
        info = shard.info()
    return {"points": info.points_count, "indexed_vectors": info.indexed_vectors_count,
            "segments": info.segments_count}


def upsert(shard: Any, points: list[models.PointStruct], unnamed: bool) -> None:
    converted = [qe.Point(_point_id(p.id), _vector_in(p.vector, unnamed), p.payload or {}) for p in points]
    _update(shard, qe.UpdateOperation.upsert_points(converted))


def delete_ids(shard: Any, ids: list[Any]) -> None:
    _update(shard, qe.UpdateOperation.delete_points([_point_id(i) for i in ids]))


def delete_where(shard: Any, flt: models.Filter) -> None:
    _update(shard, qe.UpdateOperation.delete_points_by_filter(filter_in(flt)))


def set_payload(shard: Any, ids: list[Any], payload: dict) -> None:
    _update(shard, qe.UpdateOperation.set_payload([_point_id(i) for i in ids], payload))


def delete_payload(shard: Any, ids: list[Any], keys: list[str]) -> None:
    _update(shard, qe.UpdateOperation.delete_payload([_point_id(i) for i in ids], list(keys)))


def index_keyword(shard: Any, field: str) -> None:
    _update(shard, qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))


def _update(shard: Any, operation: Any) -> None:
    """Apply one update (written to the shard's write-ahead log before it returns)."""
    with engine_errors():
        shard.update(operation)


def retrieve(shard: Any, ids: list[Any], with_payload: Any, with_vectors: Any, unnamed: bool) -> list[EdgePoint]:
    with engine_errors():
        found = shard.retrieve([_point_id(i) for i in ids], _payload_in(with_payload), _vectors_in(with_vectors))
    return [_record(r, unnamed) for r in found]


def scroll(shard: Any, flt: models.Filter | None, limit: int, offset: Any, with_payload: Any, with_vectors: Any,
           unnamed: bool) -> tuple[list[models.Record], Any]:
    request = qe.ScrollRequest(offset=None if offset is None else _point_id(offset), limit=limit,
                               filter=filter_in(flt), with_payload=_payload_in(with_payload),
                               with_vector=_vectors_in(with_vectors))
    with engine_errors():
        found, following = shard.scroll(request)
    return [_record(r, unnamed) for r in found], _id_out(following) if following is not None else None


def vector_counts(shard: Any, names: list[str]) -> dict[str, int]:
    """Return how many points hold each named vector ("" for an unnamed one)."""
    with engine_errors():
        return {name: shard.count(qe.CountRequest(exact=True, filter=qe.Filter(must=[qe.HasVectorCondition(name)])))
                for name in names}


def count(shard: Any, flt: models.Filter | None) -> int:
    with engine_errors():
        return shard.count(qe.CountRequest(exact=True, filter=filter_in(flt)))


def query_batch(shard: Any, requests: list[models.QueryRequest], unnamed: bool, exact: bool,
                hnsw_ef: int | None = None) -> list[list[models.ScoredPoint]]:
    """Run query requests as one planned batch; exact=True scans every vector (no HNSW), else an HNSW graph is
    searched with hnsw_ef candidates (None: the engine's default) unless a request gives its own."""
    converted = [_request_in(r, exact, hnsw_ef) for r in requests]
    with engine_errors():
        answers = shard.query_batch(qe.QueryBatchRequest(converted))
    return [[_scored(p, unnamed) for p in points] for points in answers]


@functools.lru_cache(maxsize=4)
def bm25(language: str, k: float, b: float, avg_len: float) -> Any:
    """Return Qdrant's BM25 model for "german"/"english", or for "none": words unstemmed, no stop words."""
    if language == "none":
        config = qe.Bm25Config(k=k, b=b, avg_len=avg_len, language="english", stemmer=qe.DisabledStemmer(),
                               stopwords=qe.StopwordsSet(languages=set(), custom=set()))
    else:
        config = qe.Bm25Config(k=k, b=b, avg_len=avg_len, language=language)
    return qe.Bm25(config)


# ---- qdrant-client models -> qdrant-edge ------------------------------------------------------------------------

def filter_in(flt: models.Filter | None) -> Any:
    if flt is None:
        return None
    min_should = None
    if flt.min_should is not None:
        min_should = qe.MinShould(_conditions(flt.min_should.conditions), flt.min_should.min_count)
    return qe.Filter(must=_conditions(flt.must), should=_conditions(flt.should), must_not=_conditions(flt.must_not),
                     min_should=min_should)


def _conditions(items: Any) -> list | None:
    if items is None:
        return None
    return [_condition(c) for c in (items if isinstance(items, list) else [items])]


def _condition(c: Any) -> Any:
    if isinstance(c, models.Filter):
        return filter_in(c)
    if isinstance(c, models.HasIdCondition):
        return qe.HasIdCondition({_point_id(i) for i in c.has_id})
    if isinstance(c, models.IsEmptyCondition):
        return qe.IsEmptyCondition(c.is_empty.key)
    if isinstance(c, models.IsNullCondition):
        return qe.IsNullCondition(c.is_null.key)
    if isinstance(c, models.FieldCondition) and c.match is not None and c.range is None:
        return qe.FieldCondition(key=c.key, match=_match(c.match))
    if isinstance(c, models.FieldCondition) and c.range is not None and c.match is None:
        r = c.range
        return qe.FieldCondition(key=c.key, range=qe.RangeFloat(gt=r.gt, gte=r.gte, lt=r.lt, lte=r.lte))
    raise ValueError(f"The embedded engine does not support the filter condition {type(c).__name__} as given.")


def _match(m: Any) -> Any:
    if isinstance(m, models.MatchValue):
        return qe.MatchValue(m.value)
    if isinstance(m, models.MatchAny):
        return qe.MatchAny(list(m.any))
    if isinstance(m, models.MatchExcept):
        return qe.MatchExcept(list(m.except_))
    raise ValueError(f"The embedded engine does not support the match {type(m).__name__}.")


def _request_in(r: models.QueryRequest | models.Prefetch, exact: bool, ef: int | None = None, top: bool = True
                ) -> Any:
    prefetch = r.prefetch if isinstance(r.prefetch, list) else [r.prefetch] if r.prefetch is not None else []
    limit = r.limit if r.limit is not None else 10
    params = _params(r.params, exact, ef)
    shared = {"query": _query(r.query, r.using), "filter": filter_in(r.filter), "params": params,
              "score_threshold": r.score_threshold, "prefetches": [_request_in(p, exact, ef, False) for p in prefetch]}
    if not top:
        return qe.Prefetch(limit=limit, **shared)
    return qe.QueryRequest(limit=limit, offset=r.offset, with_payload=_payload_in(r.with_payload),
                           with_vector=_vectors_in(r.with_vector), **shared)


def _params(params: models.SearchParams | None, exact: bool, ef: int | None) -> Any:
    ef = params.hnsw_ef if params is not None and params.hnsw_ef else ef
    exact = exact or bool(params and params.exact)
    if not exact and ef is None:
        return None
    return qe.SearchParams(hnsw_ef=ef, exact=exact)


def _query(query: Any, using: str | None) -> Any:
    if query is None:
        return None
    if isinstance(query, models.NearestQuery):
        query = query.nearest
    if isinstance(query, models.SparseVector):
        return qe.Query.Nearest(qe.SparseVector(list(query.indices), list(query.values)), using=using)
    if isinstance(query, list):
        return qe.Query.Nearest([float(x) for x in query], using=using)
    if isinstance(query, models.FusionQuery):
        if query.fusion == models.Fusion.DBSF:
            return qe.Fusion.Dbsf()
        return qe.Fusion.Rrf(k=2)  # Qdrant's default ranking constant
    if isinstance(query, models.RrfQuery):
        return qe.Fusion.Rrf(k=query.rrf.k if query.rrf.k is not None else 2, weights=query.rrf.weights)
    raise ValueError(f"The embedded engine does not support the query {type(query).__name__}.")


def _payload_in(selector: Any) -> Any:
    if selector is None or isinstance(selector, bool):
        return bool(selector)
    if isinstance(selector, models.PayloadSelectorInclude):
        return qe.PayloadSelector.Include(list(selector.include))
    if isinstance(selector, models.PayloadSelectorExclude):
        return qe.PayloadSelector.Exclude(list(selector.exclude))
    return list(selector)


def _vectors_in(selector: Any) -> Any:
    return bool(selector) if selector is None or isinstance(selector, bool) else list(selector)


def _vector_in(vector: Any, unnamed: bool) -> Any:
    if isinstance(vector, list):
        return {"": [float(x) for x in vector]} if unnamed else [float(x) for x in vector]
    out = {}
    for name, value in (vector or {}).items():
        if isinstance(value, models.SparseVector):
            if value.indices:  # an empty one matches nothing; left out, the engine counts it as not there
                out[name] = qe.SparseVector(list(value.indices), list(value.values))
        else:
            out[name] = [float(x) for x in value]
    return out


def _point_id(point_id: Any) -> Any:
    """Return an id as qdrant-edge takes it: int, or a UUID (qdrant-client sends UUIDs as strings)."""
    if isinstance(point_id, int | uuid.UUID):
        return point_id
    return uuid.UUID(str(point_id))


# ---- qdrant-edge -> qdrant-client models ------------------------------------------------------------------------

def _id_out(point_id: Any) -> int | str:
    return point_id if isinstance(point_id, int) else str(point_id)


def _vector_out(vector: Any, unnamed: bool) -> Any:
    if not vector:
        return None
    out = {name: models.SparseVector(indices=list(v.indices), values=list(v.values)) if hasattr(v, "indices")
           else list(v) for name, v in vector.items()} if isinstance(vector, dict) else vector
    if unnamed and isinstance(out, dict) and set(out) == {""}:
        return out[""]
    return out


class EdgePoint:
    """A point the engine answered with: the fields of qdrant-client's ScoredPoint and Record that RAG Lab reads (id,
    version, score, payload, vector) and their model_copy. The engine's answers are well-formed by construction, and
    the pydantic models cost a sweep most of its searching time (15 us a point to construct, 58,000 points a
    configuration of the XQuAD sweep)."""

    __slots__ = ("id", "version", "score", "payload", "vector")

    def __init__(self, id: Any, version: int, score: float | None, payload: dict | None, vector: Any):  # noqa: A002
        self.id, self.version, self.score, self.payload, self.vector = id, version, score, payload, vector

    def model_copy(self, update: dict | None = None) -> EdgePoint:
        copy = EdgePoint(self.id, self.version, self.score, self.payload, self.vector)
        for name, value in (update or {}).items():
            setattr(copy, name, value)
        return copy

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EdgePoint) and all(getattr(self, f) == getattr(other, f) for f in self.__slots__)

    def __repr__(self) -> str:
        return f"EdgePoint(id={self.id!r}, score={self.score!r})"


def _record(r: Any, unnamed: bool) -> EdgePoint:
    return EdgePoint(_id_out(r.id), 0, None, r.payload, _vector_out(r.vector, unnamed))


def _scored(p: Any, unnamed: bool) -> EdgePoint:
    point_id, vector = p.id, p.vector  # each read of an attribute makes a new Python object (a UUID, a dict)
    return EdgePoint(point_id if isinstance(point_id, int) else str(point_id), p.version, p.score, p.payload,
                     _vector_out(vector, unnamed) if vector else None)


def _name(distance: Any) -> str:
    value = str(getattr(distance, "value", distance))
    return {"cosine": "Cosine", "dot": "Dot", "euclid": "Euclid", "manhattan": "Manhattan"}[value.lower()]
