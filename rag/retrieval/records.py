"""What the store hands out: hits, collection and document summaries, and deterministic point ids.

A Hit explains its score: `score` is the score of the search mode that ranked it, and `score_kind` says
which scale that is ("cosine" (or the foreign vector's "dot", "euclid", "manhattan"), "bm25", or the
fused "rrf" / "dbsf" of a hybrid search; None for chunks that were listed, not searched). `dense_score`,
`dense_rank`, `sparse_score` and `sparse_rank` (ranks from 1) say where the chunk stood in the dense and
the keyword candidate lists; None when it was not in that list (or that list was not searched).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from rag.chunking import ChunkSettings, headers
from rag.errors import EmbedderMismatchError, SparseVectorsMissingError

_POINT_NAMESPACE = uuid.UUID("6f1d9c2e-6a0b-5c1e-9d4f-2b7a8e3c5d10")


@dataclass(frozen=True)
class ChildMatch:
    """The child that ranked a parent: its index in the parent, its span in the parent's content, score, rank."""

    index: int | None  # None: the chunk itself scored above its children (the span is all of it)
    start: int
    end: int
    score: float | None
    rank: int  # 1 = the first point of the search's ranking of chunks and children

    def to_json(self) -> dict:
        return {"index": self.index, "span": [self.start, self.end], "score": self.score, "rank": self.rank}


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
    score_kind: str | None = None  # "cosine" | "bm25" | "rrf" | "dbsf" (or "dot", ...), "rerank" (rag.rerank)
    dense_score: float | None = None  # Qdrant's score in the dense candidate list
    sparse_score: float | None = None  # BM25 score in the keyword candidate list
    dense_rank: int | None = None  # 1 = first in the dense candidate list
    sparse_rank: int | None = None  # 1 = first in the keyword candidate list
    retrieved_rank: int | None = None  # after reranking (rag.rerank): 1 = first in the list the reranker read
    retrieved_score: float | None = None  # after reranking: the score the search gave (its mode's scale)
    child: ChildMatch | None = None  # parent–child search (rag.store.children): the child that ranked this chunk


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    points: int
    embedder: str | None  # model id; None for a foreign collection
    dimension: int
    vectors: dict[str, int]  # vector name -> size; "" is the unnamed vector
    foreign: bool
    sparse: bool = False  # has RAG Lab's keyword (BM25) vectors: sparse and hybrid search work
    prompts: tuple[str, str] = ("", "")  # (query, document) prompts the collection was built with
    chunk_headers: bool = False  # chunks embedded and keyword-indexed with their title and heading path
    child_size: int = 0  # tokens per child (rag.store.children); 0: the chunks themselves are searched
    children: int = 0  # child points beside the chunks (points counts the chunks only)


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
    complete: bool = True  # False: a write of this document did not finish (interrupted, or still running)
    generation: str | None = None  # the write the listed chunks come from (rag.store.versions)
    interrupted: int = 0  # chunks left by an unfinished write next to a complete version
    unfinished_settings: tuple[int, int, str] | None = None  # chunk_size, overlap, strategy of the unfinished write
    missing: int = 0  # chunks absent from the listed version (gaps in chunk_index): a delete was cut short


def vector_name(model_id: str) -> str:
    """Return the Qdrant vector name for an embedder's model id (unsafe characters -> '-')."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", model_id).strip("-") or "vector"


def point_id(document_id: str, settings: ChunkSettings, chunk_index: int, generation: str = "") -> str:
    """Return the point id of one chunk of a document under given chunk settings, in one write (generation)."""
    key = f"{document_id}|{settings.chunk_size}|{settings.overlap}|{settings.strategy}|{chunk_index}"
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{key}|{generation}" if generation else key))


def payload_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def hit_from_point(point: Any, score: float | None, **explanation: Any) -> Hit:
    """Return a Hit from a Qdrant point; fields the payload lacks become None or ''.

    explanation: score_kind, dense_score, sparse_score, dense_rank, sparse_rank (see Hit).
    """
    p = dict(point.payload or {})
    title = str(p.get("document_title") or "")
    heading = p.get("heading_path")
    return Hit(
        score=score,
        content=str(p.get("content") or ""),
        document_id=str(p.get("document_id") or title),
        document_title=title,
        chunk_id=str(point.id if p.get("chunk_id") is None else p["chunk_id"]),
        chunk_index=payload_int(p.get("chunk_index")),
        heading_path=tuple(str(h) for h in heading) if isinstance(heading, list | tuple) else (),
        page_start=payload_int(p.get("page_start")),
        page_end=payload_int(p.get("page_end")),
        start=payload_int(p.get("start")),
        end=payload_int(p.get("end")),
        payload=p,
        **explanation,
    )


@dataclass(frozen=True)
class Layout:
    name: str
    vectors: dict[str, int]  # "" for the unnamed vector
    embedder: str | None  # model id from our metadata; None when foreign
    vector: str  # the vector our embedder fills ("" when foreign)
    sparse: str | None = None  # our keyword (BM25) sparse vector; None for older and foreign collections
    distances: dict[str, str] = field(default_factory=dict)  # dense vector name -> "cosine", "dot", ...
    meta: dict = field(default_factory=dict)  # our metadata: embedder, prompts, analyzer, fusion ...

    @property
    def prompts(self) -> tuple[str, str]:
        """Return (query prompt, document prompt) the collection was built with ("" when none was recorded)."""
        return str(self.meta.get("query_prompt") or ""), str(self.meta.get("document_prompt") or "")

    @property
    def chunk_headers(self) -> bool:
        """Return whether chunks are indexed with title and heading path (rag.chunking.headers); off if unrecorded."""
        return bool(self.meta.get(headers.META_KEY, False))

    @property
    def child_size(self) -> int:
        """Return the tokens per child of a parent–child collection (rag.store.children); 0 when it has none."""
        return payload_int(self.meta.get("child_size")) or 0

    @property
    def foreign(self) -> bool:
        return self.embedder is None


def describe_vectors(vectors: dict[str, int]) -> str:
    return ", ".join(f"{name or 'unnamed'}: {size} dimensions" for name, size in vectors.items())


def mismatch_error(
    layout: Layout, model_id: str | None, dimension: int, name: str | None = None
) -> EmbedderMismatchError:
    """Return the error that says which embedder made the collection and what to do."""
    asked = f"{model_id or 'the query vector'} ({dimension} dimensions)"
    if name is not None and name not in layout.vectors:
        asked += f", vector '{name}'"
    if layout.foreign:
        made = f"was not made by RAG Lab (vectors: {describe_vectors(layout.vectors)})"
        todo = "Pick an embedder with the same dimension as the one that filled it, or use another collection."
    else:
        made = f"was made by {layout.embedder} ({layout.vectors[layout.vector]} dimensions)"
        todo = f"Pick {layout.embedder} as the embedder, or use another collection."
    return EmbedderMismatchError(f"Collection '{layout.name}' {made}; cannot use {asked}. {todo}")


def sparse_missing_error(layout: Layout, mode: str) -> SparseVectorsMissingError:
    """Return the error that says why a collection cannot do keyword search, and what to do."""
    if layout.foreign:
        return SparseVectorsMissingError(
            f"Collection '{layout.name}' was not made by RAG Lab, so it has no RAG Lab keyword (sparse) vectors "
            f"for {mode} search; use dense search, or ingest its documents into a RAG Lab collection."
        )
    return SparseVectorsMissingError(
        f"Collection '{layout.name}' was made before keyword (sparse) vectors existed; re-ingest its documents "
        "into a new collection to use sparse or hybrid search."
    )
