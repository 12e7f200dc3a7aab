"""Similarity search over a collection: one query or a batch, with filter, threshold and top_k."""

from __future__ import annotations

from typing import Any

import numpy as np
from qdrant_client import models

from rag.embeddings.base import Embedder
from rag.records import Hit, Layout, hit_from_point, mismatch_error


class SearchMixin:
    """The search half of Store (it needs Store's _layout, _document_filter, _guard and client)."""

    # ---- search ------------------------------------------------------------------------------

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
