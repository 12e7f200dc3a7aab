"""Search over a collection in three modes, one query or a batch, with filter, threshold and top_k.

- "dense": nearest neighbours of the query vector (Hit.score is Qdrant's cosine, score_kind "cosine").
- "sparse": keyword search, the query text's terms against the chunks' BM25 vectors (rag.store.keywords;
  Hit.score is the BM25 score, score_kind "bm25"). Needs no query vector; a query without terms (only
  stop words or punctuation) finds nothing.
- "hybrid": the dense and the keyword candidate lists, each `candidate_limit(top_k)` long, fused here with
  RRF (Qdrant's formula: score = sum of 1 / (k + position), position from 0, k = 2; optionally weighted) or a
  convex combination, or by the engine (one query with the two lists as prefetches) with DBSF (each list's
  scores normalised by mean ± 3 standard deviations, then summed); rag.retrieval.fusion. Hit.score is that fused
  score, not a cosine (score_kind "rrf" / "dbsf" / "convex").

Explanation: every hit carries its dense and sparse score and rank (see rag.retrieval.records.Hit). For hybrid
search the two candidate lists are the ones fused (for DBSF they are queried next to the fused query, in the
same round trip and with the same vector, filter and limit as the prefetches), so ranks and scores are the
ones the fusion saw. In dense or sparse mode only that mode's fields are filled.

A control cuts, never reorders: the candidate depth is CANDIDATES (50) for every top_k up to 50, so the fused
scores and their order are the same for top_k 1 and 50, and top_k only says how many of them to return.
score_threshold applies to the mode's own score: cosine, BM25, or the fused score, after the fusion (the
candidate lists are not cut), so it too only cuts. A document filter is a smaller collection: the candidate
lists are that collection's. All requests of one call go to Qdrant in one query_batch_points round trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from qdrant_client import models

from rag.embeddings import Embedder
from rag.errors import QueryError
from rag.retrieval.folding import KEYS as CHILD_FIELDS
from rag.retrieval.folding import parents as fold
from rag.retrieval.fusion import DEFAULT_FUSION, METHODS, Fusion, parse_fusion
from rag.retrieval.records import Hit, Layout, hit_from_point, mismatch_error, payload_int, sparse_missing_error
from rag.retrieval.request import DEFAULT_REQUEST, MODES, SearchRequest

# what a search asks the engine for: the fields that order equal scores; the whole payload of the points kept is read
# once afterwards (Search._payloads)
KEYS = models.PayloadSelectorInclude(include=["document_id", "chunk_index"])
CHILD_KEYS = models.PayloadSelectorInclude(include=CHILD_FIELDS)
FUSIONS = METHODS  # the fusion methods; a fusion is given as a spec, e.g. "convex:w=0.6" (rag.retrieval.fusion)
CANDIDATES = 50  # the depth every measured figure of docs/benchmarks.md used (top_k <= 10 then gave 50)


class QueryAnalyzer(Protocol):
    """What a keyword search needs of a collection's analyzer (the store's is rag.store.keywords.Analyzer)."""

    def query_vector(self, text: str) -> tuple[list[int], list[float]]: ...


def candidate_limit(top_k: int) -> int:
    """Return how many chunks each hybrid prefetch (dense, sparse) hands to the fusion: CANDIDATES, or top_k
    when it is larger, so that top_k up to CANDIDATES only cuts one fused ranking (its scores depend on depth)."""
    return max(int(top_k), CANDIDATES)


def check_mode(mode: str, fusion: str | Fusion = DEFAULT_FUSION) -> Fusion:
    """Return the fusion if mode and fusion are known; RagError (InvalidSettingsError) listing the valid ones."""
    if mode not in MODES:
        raise QueryError(f"Unknown search mode '{mode}'. Use one of: {', '.join(MODES)}.")
    return parse_fusion(fusion)


@dataclass
class _Need:
    """One candidate list a request needs of one query: its kind ("dense" or "sparse"), filter, length and
    threshold. Lists of one kind and filter without a threshold are fetched once, as deep as the deepest need, and
    each need takes its first `limit` (HNSW and BM25 rank the same points first at any depth)."""

    kind: str
    query: Any  # the query's vector (a list of floats) or its keyword vector
    filter: models.Filter | None
    limit: int
    threshold: float | None = None

    @property
    def shared(self) -> tuple[str, str] | None:
        """Return the key of the list this need can share, None when it needs its own (a threshold)."""
        if self.threshold is not None:
            return None
        return self.kind, "" if self.filter is None else self.filter.model_dump_json()


@dataclass
class _Asked:
    """What one request needs of one query: its result list, or its candidate lists and the fused request."""

    request: SearchRequest
    mode: str
    fusion: Fusion
    limit: int  # points kept (top_k times the fan-out of children)
    dense: _Need | None = None
    sparse: _Need | None = None
    final: models.QueryRequest | None = None  # the engine fuses (dbsf)
    nothing: bool = False  # a keyword query without terms: nothing can match


class SearchMixin:
    """The search half of Store (it needs Store's _layout, search_filter, _guard and client)."""

    def _using(self, layout: Layout, dimension: int, embedder: Embedder | None, name: str | None) -> str | None:
        """Return the vector to search (None = unnamed); EmbedderMismatchError when none fits."""
        model_id = embedder.model_id if embedder else None
        if not layout.foreign and model_id not in (None, layout.embedder):
            raise mismatch_error(layout, model_id, dimension)
        if name is None and layout.foreign and len(layout.vectors) > 1:
            fits = [n for n, size in layout.vectors.items() if size == dimension]
            name = fits[0] if len(fits) == 1 else None
            if name is None:
                raise mismatch_error(layout, model_id, dimension)
        name = layout.vector if name is None else name
        if name not in layout.vectors or layout.vectors[name] != dimension:
            raise mismatch_error(layout, model_id, dimension, name)
        return name or None

    def search(
        self,
        collection: str,
        vector: np.ndarray | None = None,
        embedder: Embedder | None = None,
        request: SearchRequest = DEFAULT_REQUEST,
        *,
        query_text: str | None = None,
        vector_name: str | None = None,
    ) -> list[Hit]:
        """Return the request's top_k chunks for one query, best first, each with its score explained.

        dense needs vector, sparse needs query_text, hybrid needs both (see the module docstring).
        """
        vectors = None if vector is None else np.asarray(vector, dtype=np.float32).reshape(1, -1)
        texts = None if query_text is None else [query_text]
        rows = self.search_batch(collection, vectors, embedder, request, query_texts=texts, vector_name=vector_name)
        return rows[0] if rows else []

    def search_batch(
        self,
        collection: str,
        vectors: np.ndarray | None = None,
        embedder: Embedder | None = None,
        request: SearchRequest = DEFAULT_REQUEST,
        *,
        query_texts: Sequence[str] | None = None,
        vector_name: str | None = None,
    ) -> list[list[Hit]]:
        """Return the hits of each query (rows of vectors and/or query_texts, same order), in one round trip.

        Chunks flagged as a table of contents are left out unless the request includes them.
        """
        return self.search_many(collection, [request], vectors, embedder, query_texts=query_texts,
                                vector_name=vector_name)[0]

    def search_many(
        self,
        collection: str,
        requests: Sequence[SearchRequest],
        vectors: np.ndarray | None,
        embedder: Embedder | None,
        *,
        query_texts: Sequence[str] | None = None,
        vector_name: str | None = None,
    ) -> list[list[list[Hit]]]:
        """Return, per request, the hits of each query: what search_batch gives for each, from one round trip in
        which the requests share their candidate lists.

        A hybrid search already fetches each query's dense and keyword candidates (candidate_limit(top_k) long);
        a dense or sparse request without a threshold takes its top_k from those lists, rrf and convex fusion fuse
        them, and only dbsf adds a request (the engine fuses). An evaluation of several modes thus scans the
        collection once per list, not once per mode; one request is a list of one.
        """
        fusions = [check_mode(r.searched_mode, r.searched_fusion) for r in requests]
        modes = [r.searched_mode for r in requests]
        matrix = self._query_matrix(vectors, "sparse" if all(m == "sparse" for m in modes) else
                                    next(m for m in modes if m != "sparse"))
        texts = self._query_texts(query_texts, "dense" if all(m == "dense" for m in modes) else
                                  next(m for m in modes if m != "dense"), matrix)
        count = len(texts) if matrix is None else len(matrix)
        if not requests or count == 0:
            return [[] for _ in requests]
        layout = self._layout(collection)
        using = None if matrix is None else self._using(layout, matrix.shape[1], embedder, vector_name)
        if any(m != "dense" for m in modes) and not layout.sparse:
            raise sparse_missing_error(layout, next(m for m in modes if m != "dense"))
        analyzer = self._analyzer(layout) if any(m != "dense" for m in modes) else None
        kinds = [fusion.method if mode == "hybrid" else "bm25" if mode == "sparse" else
                 layout.distances.get(using or "") or "cosine" for mode, fusion in zip(modes, fusions, strict=True)]

        def once() -> list[list[list[Hit]]]:  # unfinished writes never show (rag.store.versions: stable_read)
            fanout = self.fanout(collection) if layout.child_size else 1  # children: top_k parents need more of them
            filters = [self.search_filter(layout, r.documents, r.include_toc) for r in requests]
            asked = [[self._ask(r, layout, using, None if matrix is None else matrix[q], texts and texts[q], f,
                                analyzer, fanout) for r, f in zip(requests, filters, strict=True)]
                     for q in range(count)]
            return self._execute(collection, layout, asked, using, kinds)

        return self.stable_read(collection, once)

    @staticmethod
    def _query_matrix(vectors: np.ndarray | None, mode: str) -> np.ndarray | None:
        if mode == "sparse":
            return None
        if vectors is None:
            raise QueryError(f"{mode.capitalize()} search needs the query's vector; embed the query first.")
        matrix = np.asarray(vectors, dtype=np.float32)
        return matrix.reshape(len(matrix), -1) if matrix.size else matrix.reshape(0, 0)

    @staticmethod
    def _query_texts(texts: Sequence[str] | None, mode: str, matrix: np.ndarray | None) -> list[str] | None:
        if mode == "dense":
            return None
        if texts is None:
            raise QueryError(f"{mode.capitalize()} search needs the query text (query_text / query_texts).")
        texts = list(texts)
        if matrix is not None and len(texts) != len(matrix):
            raise QueryError(
                f"Got {len(matrix)} query vectors but {len(texts)} query texts; give one of each per query.")
        return texts

    @staticmethod
    def _ask(request: SearchRequest, layout: Layout, using: str | None, vector: Any, text: str | None,
             where: models.Filter | None, analyzer: QueryAnalyzer | None, fanout: int) -> _Asked:
        """Return what one request needs of one query (see _Asked)."""
        mode, fusion = request.searched_mode, parse_fusion(request.searched_fusion)
        limit = max(int(request.top_k), 1) * fanout
        asked = _Asked(request, mode, fusion, limit)
        threshold = request.score_threshold
        if mode == "dense":
            asked.dense = _Need("dense", vector.tolist(), where, limit, threshold)
            return asked
        indices, values = analyzer.query_vector(text or "")
        keyword = models.SparseVector(indices=indices, values=values) if indices else None
        if mode == "sparse":
            asked.sparse = _Need("sparse", keyword, where, limit, threshold) if keyword is not None else None
            asked.nothing = keyword is None
            return asked
        depth = (candidate_limit(request.top_k) if request.depth is None else max(int(request.depth), 1)) * fanout
        asked.dense = _Need("dense", vector.tolist(), where, depth)
        asked.sparse = _Need("sparse", keyword, where, depth) if keyword is not None else None
        if not fusion.fused_here:  # dbsf: the engine fuses the two lists, queried as prefetches
            prefetch = [models.Prefetch(query=vector.tolist(), using=using, filter=where, limit=depth)]
            if keyword is not None:
                prefetch.append(models.Prefetch(query=keyword, using=layout.sparse, filter=where, limit=depth))
            asked.final = models.QueryRequest(prefetch=prefetch, query=fusion.query(), filter=where, limit=limit,
                                              score_threshold=threshold, with_payload=_keys(layout))
        return asked

    def _execute(self, collection: str, layout: Layout, asked: list[list[_Asked]], using: str | None,
                 kinds: list[str]) -> list[list[list[Hit]]]:
        """Return the explained hits of every request of every query (asked[query][request]), sending every list
        and fused request in one batch; children folded into their parents (rag.store.children)."""
        requests: list[models.QueryRequest] = []
        shared: dict[tuple, int] = {}  # (query, kind, filter) -> index of the list fetched for all who share it
        own: dict[int, int] = {}  # id(need) -> index of its own list
        finals: dict[int, int] = {}  # id(asked) -> index of its fused request
        for q, row in enumerate(asked):  # the deepest need of each shareable list decides its depth
            deepest: dict[tuple, _Need] = {}
            for a in row:
                for need in (a.dense, a.sparse):
                    if need is not None and need.shared is not None:
                        key = (q, *need.shared)
                        if key not in deepest or need.limit > deepest[key].limit:
                            deepest[key] = need
            for key, need in deepest.items():
                shared[key] = len(requests)
                requests.append(_list(layout, using, need))
            for a in row:
                for need in (a.dense, a.sparse):
                    if need is not None and need.shared is None:
                        own[id(need)] = len(requests)
                        requests.append(_list(layout, using, need))
                if a.final is not None:
                    finals[id(a)] = len(requests)
                    requests.append(a.final)
        responses = []
        if requests:
            with self._guard(f"searching '{collection}'"):
                responses = [r.points for r in self.client.query_batch_points(collection, requests)]

        def points_of(q: int, need: _Need | None) -> list[Any]:
            if need is None:
                return []
            at = own.get(id(need)) if need.shared is None else shared[(q, *need.shared)]
            return responses[at][:need.limit]

        found: list[list[tuple]] = [[] for _ in kinds]
        for q, row in enumerate(asked):
            for i, a in enumerate(row):
                dense_points, keyword_points = points_of(q, a.dense), points_of(q, a.sparse)
                parents = max(int(a.request.top_k), 1) if layout.child_size else None
                if a.nothing:
                    points = []
                elif a.mode == "dense":
                    points, dense_points = dense_points, []
                elif a.mode == "sparse":
                    points, keyword_points = keyword_points, []
                elif a.fusion.fused_here:
                    points = _fuse_here(dense_points, keyword_points, a.fusion, a.limit, a.request.score_threshold)
                else:
                    points = responses[finals[id(a)]]
                found[i].append(_folded(points, _ranks(dense_points), _ranks(keyword_points), parents))
        payloads = self._payloads(collection, [p for rows in found for row in rows for p in row[0]])
        return [[[_explained(p, rank, asked[0][i].mode, kinds[i], dense, keyword, payloads, kids)
                  for rank, p in enumerate(_kept(points, payloads), 1)] for points, dense, keyword, kids in found[i]]
                for i in range(len(kinds))]

    def _payloads(self, collection: str, points: list[Any]) -> dict[str, dict]:
        """Return the whole payload of each point (by id) in one read: the searches asked only for the fields that
        rank them (a payload costs the engine more than finding the point: 0.4 s of 1.0 s for 632 lists of 51)."""
        ids = list(dict.fromkeys(p.id for p in points))
        if not ids:
            return {}
        with self._guard(f"reading the chunks found in '{collection}'"):
            records = self.client.retrieve(collection, ids, with_payload=True, with_vectors=False)
        return {str(r.id): r.payload or {} for r in records}


def _list(layout: Layout, using: str | None, need: _Need) -> models.QueryRequest:
    """Return the engine request of one candidate list."""
    return models.QueryRequest(query=need.query, using=using if need.kind == "dense" else layout.sparse,
                               filter=need.filter, limit=need.limit, score_threshold=need.threshold,
                               with_payload=_keys(layout))


def _keys(layout: Layout) -> models.PayloadSelectorInclude:
    """Return the payload fields a search reads (children: their parent and span too)."""
    return CHILD_KEYS if layout.child_size else KEYS


def _fuse_here(dense: list[Any], keyword: list[Any], fusion: Fusion, limit: int, threshold: float | None
               ) -> list[Any]:
    """Return the top points of the rrf or convex fusion of the two candidate lists, each with its fused score."""
    by_id = {str(p.id): p for p in (*keyword, *dense)}
    order = {i: (str((p.payload or {}).get("document_id", "")), payload_int((p.payload or {}).get("chunk_index")) or 0)
             for i, p in by_id.items()}  # ties by document and chunk, not by the ids each ingest draws anew
    fused = fusion.fuse([(str(p.id), p.score) for p in dense], [(str(p.id), p.score) for p in keyword], order)
    kept = [(i, score) for i, score in fused if threshold is None or score >= threshold][:limit]
    return [by_id[i].model_copy(update={"score": score}) for i, score in kept]


def _ranks(points: list[Any]) -> dict[str, tuple[int, float]]:
    """Return point id -> (rank from 1, score) of a candidate list (chunks, and children where the collection has
    them, each a point of its own: the lists the engine fused)."""
    return {str(p.id): (rank, p.score) for rank, p in enumerate(points, 1)}


def _folded(points: list[Any], dense: dict, keyword: dict, parents: int | None) -> tuple[list[Any], dict, dict, dict]:
    """Return (points, dense ranks, keyword ranks, child per parent id); children folded into parents when asked.

    A folded chunk's dense and keyword ranks are those of the point that placed it (itself or its matched child) in
    each list: the ranks the engine fused into that point's score, so RRF's 1/(rank + 1) terms add up to it.
    """
    if parents is None:
        return points, dense, keyword, {}
    placing: dict[str, str] = {}  # parent id -> the id of its first point in the ranking
    for point in points:
        placing.setdefault(str((point.payload or {}).get("parent_id") or point.id), str(point.id))
    points, kids = fold(points, parents)
    return (points, {c: dense[i] for c, i in placing.items() if i in dense},
            {c: keyword[i] for c, i in placing.items() if i in keyword}, kids)


def _kept(points: list[Any], payloads: dict[str, dict]) -> list[Any]:
    """Return the points whose payload was read (one deleted between the search and the read is left out)."""
    return [p for p in points if str(p.id) in payloads]


def _explained(point: Any, rank: int, mode: str, kind: str, dense: dict, keyword: dict, payloads: dict[str, dict],
               kids: dict | None = None) -> Hit:
    """Return the Hit of a result point, with its whole payload, its per-mode scores and ranks."""
    point = point.model_copy(update={"payload": payloads[str(point.id)]})
    if mode == "dense":
        dense = {str(point.id): (rank, point.score)}
    elif mode == "sparse":
        keyword = {str(point.id): (rank, point.score)}
    dense_rank, dense_score = dense.get(str(point.id), (None, None))
    sparse_rank, sparse_score = keyword.get(str(point.id), (None, None))
    return hit_from_point(
        point, point.score, score_kind=kind, dense_score=dense_score, sparse_score=sparse_score,
        dense_rank=dense_rank, sparse_rank=sparse_rank, child=(kids or {}).get(str(point.id)),
    )  # fmt: skip
