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

MODES = ("dense", "sparse", "hybrid")
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
class _Plan:
    """The requests of one query: the candidate lists to explain with, and the request giving the hits."""

    dense: models.QueryRequest | None = None
    sparse: models.QueryRequest | None = None
    final: models.QueryRequest | None = None  # None: nothing can match (a sparse query without terms)


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
        *,
        vector_name: str | None = None,
        top_k: int = 5,
        score_threshold: float | None = None,
        document_ids: list[str] | None = None,
        mode: str = "dense",
        fusion: str = DEFAULT_FUSION,
        query_text: str | None = None,
        include_toc: bool = False,
        depth: int | None = None,
    ) -> list[Hit]:
        """Return the top_k chunks for one query, best first, each with its score explained.

        dense needs vector, sparse needs query_text, hybrid needs both (see the module docstring). depth: how
        many candidates of each list hybrid search fuses (default candidate_limit(top_k)).
        """
        vectors = None if vector is None else np.asarray(vector, dtype=np.float32).reshape(1, -1)
        texts = None if query_text is None else [query_text]
        rows = self.search_batch(
            collection, vectors, embedder, top_k, vector_name=vector_name, score_threshold=score_threshold,
            document_ids=document_ids, mode=mode, fusion=fusion, query_texts=texts, include_toc=include_toc,
            depth=depth,
        )  # fmt: skip
        return rows[0] if rows else []

    def search_batch(
        self,
        collection: str,
        vectors: np.ndarray | None = None,
        embedder: Embedder | None = None,
        top_k: int = 5,
        *,
        vector_name: str | None = None,
        score_threshold: float | None = None,
        document_ids: list[str] | None = None,
        mode: str = "dense",
        fusion: str = DEFAULT_FUSION,
        query_texts: Sequence[str] | None = None,
        include_toc: bool = False,
        depth: int | None = None,
    ) -> list[list[Hit]]:
        """Return the hits of each query (rows of vectors and/or query_texts, same order), in one round trip.

        Chunks flagged as a table of contents are left out unless include_toc. depth: as in search.
        """
        fusion = check_mode(mode, fusion)
        matrix = self._query_matrix(vectors, mode)
        texts = self._query_texts(query_texts, mode, matrix)
        count = len(texts) if matrix is None else len(matrix)
        if count == 0:
            return []
        layout = self._layout(collection)
        using = None if mode == "sparse" else self._using(layout, matrix.shape[1], embedder, vector_name)
        if mode != "dense" and not layout.sparse:
            raise sparse_missing_error(layout, mode)
        analyzer = self._analyzer(layout) if mode != "dense" else None
        kind = fusion.method if mode == "hybrid" else "bm25" if mode == "sparse" else layout.distances.get(using or "")
        parents = max(int(top_k), 1) if layout.child_size else None

        def once() -> list[list[Hit]]:  # unfinished writes never show (rag.store.versions: stable_read)
            fanout = self.fanout(collection) if layout.child_size else 1  # children: top_k parents need more of them
            shared = {"filter": self.search_filter(layout, document_ids, include_toc),
                      "limit": max(int(top_k), 1) * fanout, "score_threshold": score_threshold}
            deep = (candidate_limit(top_k) if depth is None else max(int(depth), 1)) * fanout
            plans = [self._plan(mode, fusion, layout, using, None if matrix is None else matrix[i],
                                texts and texts[i], shared, analyzer, deep) for i in range(count)]
            return self._run(collection, plans, mode, kind or "cosine", fusion, shared, parents)

        return self.stable_read(collection, once)

    def search_batch_modes(
        self,
        collection: str,
        modes: Sequence[tuple[str, str]],
        vectors: np.ndarray | None,
        embedder: Embedder | None,
        top_k: int,
        *,
        query_texts: Sequence[str] | None = None,
    ) -> list[list[list[Hit]]]:
        """Return, per (mode, fusion) of modes, the hits of each query: what search_batch gives for each, from one
        round trip in which the modes share their candidate lists.

        A hybrid search already fetches each query's dense and keyword candidates (candidate_limit(top_k) long);
        dense and sparse mode take their top_k from those lists, rrf and convex fusion fuse them, and only dbsf
        adds a request (the engine fuses). An evaluation of several modes thus scans the collection once
        per list, not once per mode. Without a hybrid mode, this is search_batch per mode.
        """
        fusions = [check_mode(mode, fusion) for mode, fusion in modes]
        if not any(mode == "hybrid" for mode, _ in modes):
            return [self.search_batch(collection, vectors, embedder, top_k, mode=mode, fusion=fusion,
                                      query_texts=query_texts) for mode, fusion in modes]
        matrix = self._query_matrix(vectors, "hybrid")
        texts = self._query_texts(query_texts, "hybrid", matrix)
        if len(matrix) == 0:
            return [[] for _ in modes]
        layout = self._layout(collection)
        if not layout.sparse:
            raise sparse_missing_error(layout, "hybrid")
        return self.stable_read(collection, lambda: self._modes_once(collection, layout, modes, fusions, matrix, texts,
                                                                     embedder, top_k))

    def _modes_once(self, collection: str, layout: Layout, modes: Sequence[tuple[str, str]], fusions: list[Fusion],
                    matrix: np.ndarray, texts: list[str] | None, embedder: Embedder | None, top_k: int
                    ) -> list[list[list[Hit]]]:
        """Return search_batch_modes' hits from one read of the collection."""
        fanout = self.fanout(collection) if layout.child_size else 1  # children: top_k parents need more of them
        shared = {"filter": self.search_filter(layout, None, False), "limit": max(int(top_k), 1) * fanout,
                  "score_threshold": None}
        using = self._using(layout, matrix.shape[1], embedder, None)
        analyzer, depth = self._analyzer(layout), candidate_limit(top_k) * fanout
        engine = [(i, f) for i, ((mode, _), f) in enumerate(zip(modes, fusions, strict=True))
                  if mode == "hybrid" and not f.fused_here]
        requests, keyword_of = [], []
        for vector, text in zip(matrix, texts, strict=True):
            lists = self._plan("hybrid", Fusion("convex"), layout, using, vector, text, shared, analyzer, depth)
            requests.append(lists.dense)
            keyword_of.append(lists.sparse is not None)
            requests.extend([lists.sparse] if lists.sparse is not None else [])
            for _, fusion in engine:
                final = self._plan("hybrid", fusion, layout, using, vector, text, shared, analyzer, depth).final
                requests.append(final)
        with self._guard(f"searching '{collection}'"):
            responses = iter(self.client.query_batch_points(collection, requests))
        found: list[list[tuple]] = [[] for _ in modes]
        kinds = [fusion.method if mode == "hybrid" else "bm25" if mode == "sparse" else
                 layout.distances.get(using or "") or "cosine" for (mode, _), fusion in zip(modes, fusions,
                                                                                            strict=True)]
        for has_keywords in keyword_of:
            dense_points = next(responses).points
            keyword_points = next(responses).points if has_keywords else []
            fused = {i: next(responses).points for i, _ in engine}
            dense, keyword = _ranks(dense_points), _ranks(keyword_points)
            for i, ((mode, _), fusion) in enumerate(zip(modes, fusions, strict=True)):
                if mode == "dense":
                    points = dense_points[:shared["limit"]]
                elif mode == "sparse":
                    points = keyword_points[:shared["limit"]]
                elif fusion.fused_here:
                    points = _fuse_here(dense_points, keyword_points, fusion, shared["limit"], None)
                else:
                    points = fused[i]
                seen = (dense, keyword) if mode == "hybrid" else ({}, {})  # dense, sparse: their own fields only
                found[i].append(_folded(points, *seen, top_k if layout.child_size else None))
        payloads = self._payloads(collection, [p for rows in found for row in rows for p in row[0]])
        return [[[_explained(p, rank, mode, kinds[i], dense, keyword, payloads, kids)
                  for rank, p in enumerate(_kept(points, payloads), 1)] for points, dense, keyword, kids in found[i]]
                for i, (mode, _) in enumerate(modes)]

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
    def _plan(
        mode: str, fusion: Fusion, layout: Layout, using: str | None, vector: Any, text: str | None, shared: dict,
        analyzer: QueryAnalyzer | None = None, depth: int = CANDIDATES,
    ) -> _Plan:
        """Return the requests for one query (dense/sparse lists for the explanation, final for the hits)."""
        plan = _Plan()
        keys = CHILD_KEYS if layout.child_size else KEYS  # children: their parent and span too
        if mode == "dense":
            plan.final = models.QueryRequest(query=vector.tolist(), using=using, with_payload=keys, **shared)
            return plan
        indices, values = analyzer.query_vector(text or "")
        keyword = models.SparseVector(indices=indices, values=values) if indices else None
        if mode == "sparse":
            if keyword is not None:
                plan.final = models.QueryRequest(query=keyword, using=layout.sparse, with_payload=keys, **shared)
            return plan
        candidates = {"filter": shared["filter"], "limit": depth}
        here = fusion.fused_here  # rrf, convex: the candidate lists carry the payloads, the fusion is done in _run
        prefetch = [models.Prefetch(query=vector.tolist(), using=using, **candidates)]
        plan.dense = models.QueryRequest(query=vector.tolist(), using=using, with_payload=keys if here or
                                         layout.child_size else False,
                                         **candidates)
        if keyword is not None:
            prefetch.append(models.Prefetch(query=keyword, using=layout.sparse, **candidates))
            plan.sparse = models.QueryRequest(query=keyword, using=layout.sparse, with_payload=keys if here or
                                              layout.child_size else False,
                                              **candidates)
        if not here:
            plan.final = models.QueryRequest(prefetch=prefetch, query=fusion.query(), with_payload=keys, **shared)
        return plan

    def _run(self, collection: str, plans: list[_Plan], mode: str, kind: str, fusion: Fusion, shared: dict,
             parents: int | None = None) -> list[list[Hit]]:
        """Return the explained hits of each plan, sending every request of every plan in one batch; parents: the
        points are children, folded into that many parents (rag.store.children)."""
        requests = [r for p in plans for r in (p.dense, p.sparse, p.final) if r is not None]
        if requests:
            with self._guard(f"searching '{collection}'"):
                responses = iter(self.client.query_batch_points(collection, requests))
        found = []
        for plan in plans:
            dense_points = next(responses).points if plan.dense is not None else []
            keyword_points = next(responses).points if plan.sparse is not None else []
            if mode == "hybrid" and fusion.fused_here:
                points = _fuse_here(dense_points, keyword_points, fusion, shared["limit"], shared["score_threshold"])
            else:
                points = next(responses).points if plan.final is not None else []
            found.append(_folded(points, _ranks(dense_points), _ranks(keyword_points), parents))
        payloads = self._payloads(collection, [p for row in found for p in row[0]])
        return [[_explained(p, i, mode, kind, dense, keyword, payloads, kids)
                 for i, p in enumerate(_kept(points, payloads), 1)] for points, dense, keyword, kids in found]

    def _payloads(self, collection: str, points: list[Any]) -> dict[str, dict]:
        """Return the whole payload of each point (by id) in one read: the searches asked only for the fields that
        rank them (a payload costs the engine more than finding the point: 0.4 s of 1.0 s for 632 lists of 51)."""
        ids = list(dict.fromkeys(p.id for p in points))
        if not ids:
            return {}
        with self._guard(f"reading the chunks found in '{collection}'"):
            records = self.client.retrieve(collection, ids, with_payload=True, with_vectors=False)
        return {str(r.id): r.payload or {} for r in records}


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
