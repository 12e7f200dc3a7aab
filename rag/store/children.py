"""Parent–child retrieval, the store half: child points beside their parents, and the fanout searches read.

Children live in the parent's collection, as points of their own (rag.chunking.children cuts them): the
same dense vector (embedded with the document prompt) and BM25 keyword vector as a chunk, and a payload
with the flag "child", the parent's point id (`parent_id`), document_id, chunk_index and generation, the
child's index and its span in the parent's content. Sharing the collection is what makes them safe: a
child is written in its parent's generation (rag.store.versions), so it becomes searchable in the same
registry update as its parent, is hidden and deleted with it (replace, delete, an ingest killed with
kill -9), and no orphan child is ever searchable. Listings, counts and chunk reads leave children out.

A collection with children (metadata "child_size" > 0) is searched over its chunks and their children
together (WITH_PARENTS); rag.retrieval.folding folds the ranking back into parents. To find
top_k chunks the engine is asked for top_k x fanout points, fanout being 1 + the most children any chunk of
the collection has (recorded at ingest, before the write is committed).
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
from qdrant_client import models

from rag.chunking import Child, Chunk, headers
from rag.documents import Document
from rag.embeddings import Embedder
from rag.errors import EmbedderMismatchError
from rag.retrieval import Layout
from rag.store.keywords import Analyzer
from rag.store.versions import REGISTRY_ID

CHILD = "child"  # the flag of a child point (payload "flags")
FANOUT_KEY = "child_fanout"  # registry: the most children one parent has
IS_CHILD = models.FieldCondition(key="flags", match=models.MatchAny(any=[CHILD]))
WITH_PARENTS = True  # a chunk competes with its children (measured: docs/benchmarks.md "Parent–child retrieval")
_NAMESPACE = uuid.UUID("0b8e2f64-3c1d-5a7e-8f90-1d2c3b4a5e6f")


def child_point_id(parent_id: str, child_index: int) -> str:
    """Return the point id of a parent's child (derived from the parent's, which is per generation)."""
    return str(uuid.uuid5(_NAMESPACE, f"{parent_id}|{child_index}"))


def child_point(child: Child, parent: models.PointStruct, vectors: dict[str, Any]) -> models.PointStruct:
    """Return the point of a child: its vectors, its parent's id, document, generation and flags, its span."""
    p = parent.payload or {}
    payload = {key: p.get(key) for key in ("document_id", "document_title", "chunk_index", "generation", "language")
               if p.get(key) is not None}
    payload |= {"parent_id": str(parent.id), "child_index": child.child_index, "child_start": child.start,
                "child_end": child.end, "flags": [*p.get("flags", []), CHILD]}
    return models.PointStruct(id=child_point_id(str(parent.id), child.child_index), vector=vectors, payload=payload)


def add_child_boxes(parents: list[models.PointStruct], chunks: list[Chunk], kids: list[list[Child]],
                    document: Document) -> None:
    """Give each parent point of a PDF read with boxes the boxes of its children, by child_index ("child_boxes"),
    so that a hit's matched child (Hit.child.index) can be shown without reading the file again."""
    if not document.has_boxes:
        return
    for parent, chunk, children in zip(parents, chunks, kids, strict=True):
        if children and parent.payload is not None:
            spans = [(chunk.start + child.start, chunk.start + child.end) for child in children]
            parent.payload["child_boxes"] = [[box.as_dict() for box in boxes] for boxes in document.span_boxes(spans)]


class ChildrenMixin:
    """The children half of Store: child points, their count, and the fanout searches read (needs _registry_payload,
    _mark, _layout, _guard)."""

    def _kid_points(self, parents: list[models.PointStruct], kids: list[list[Child]], vectors: np.ndarray,
                    document: Document, layout: Layout, analyzer: Analyzer, language: str | None
                    ) -> list[list[models.PointStruct]]:
        """Return the child points of each parent point (same order as kids, vectors in that order)."""
        found, row = [], 0
        for parent, children in zip(parents, kids, strict=True):
            points: list[models.PointStruct] = []
            found.append(points)
            path = (parent.payload or {}).get("heading_path", [])
            for child in children:
                named: dict[str, Any] = {layout.vector: np.asarray(vectors[row]).tolist()}
                if layout.sparse:
                    text = headers.indexed_text(child.text, document.title, path, layout.chunk_headers)
                    indices, values = analyzer.document_vector(text, language or "none")
                    named[layout.sparse] = models.SparseVector(indices=indices, values=values)
                points.append(child_point(child, parent, named))
                row += 1
        return found

    def _raise_fanout(self, collection: str, fanout: int) -> None:
        known = self._registry_payload(collection).get(FANOUT_KEY)
        if not isinstance(known, int) or fanout > known:
            self._mark(collection, {})  # creates the registry point if needed
            with self._guard(f"updating the registry of '{collection}'"):
                self.client.set_payload(collection, {FANOUT_KEY: fanout}, points=[REGISTRY_ID], wait=True)

    def children(self, collection: str, layout: Layout | None = None) -> int:
        """Return how many child points collection holds beside its chunks (0 without children)."""
        if not (layout or self._layout(collection)).child_size:
            return 0
        with self._guard(f"counting the children of '{collection}'"):
            return self.client.count(collection, count_filter=models.Filter(must=[IS_CHILD]), exact=True).count

    def fanout(self, collection: str) -> int:
        """Return how many points one chunk of collection can take in a ranking: itself and its children (1 when
        it has none)."""
        known = self._registry_payload(collection).get(FANOUT_KEY)
        return max(known, 0) + 1 if isinstance(known, int) else 1


def check_kids(layout: Layout, document: Document, chunks: list[Chunk], kids: list[list[Child]] | None,
                vectors: np.ndarray | None, embedder: Embedder) -> list[list[Child]] | None:
    """Return kids when they fit the collection and the chunks (a child collection needs a child list per chunk,
    empty for a chunk that fits in one child, and one vector per child), else raise."""
    if not layout.child_size:
        return None
    count = sum(map(len, kids or []))
    shape = np.shape(vectors) if vectors is not None else ()
    if kids is None or len(kids) != len(chunks) or shape != (count, embedder.dimension):
        raise EmbedderMismatchError(
            f"Collection '{layout.name}' searches children of {layout.child_size} tokens, but the chunks of "
            f"'{document.title}' came without a child list per chunk and one vector per child; cut them with "
            "rag.chunking.children.children_of and embed them.")
    return kids
