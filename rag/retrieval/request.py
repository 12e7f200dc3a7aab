"""One search as a value: what to search for and how deep, the same from the page to the engine.

A SearchRequest travels unchanged through rag.search / rag.retrieve, Store.search and Store.search_batch, the
evaluation's funnel and sweeps, the score report and the pages; a control that changes one field makes a new
value with `replace`. The query itself (its text, its vector) and the models (embedder, reranker) travel beside
it: they are not settings of the search but its input and its machinery.

mode and fusion None mean "the collection's default" (rag.pipeline.search_defaults); a Store searches None as
dense with DEFAULT_FUSION.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from rag.errors import QueryError
from rag.retrieval.fusion import DEFAULT_FUSION, parse_fusion

MODES = ("dense", "sparse", "hybrid")
RERANK_DEPTH = 30  # candidates a reranker reads per query: a cross-encoder pass costs about one embedding each


@dataclass(frozen=True)
class SearchRequest:
    """How to search: mode, fusion, top_k, score threshold, document filter, TOC, candidate depth, rerank depth."""

    mode: str | None = None  # "dense" | "sparse" | "hybrid"; None: the collection's default
    fusion: str | None = None  # how hybrid fuses its lists, a spec of rag.retrieval.fusion; None: the default
    top_k: int = 5  # how many hits to return
    score_threshold: float | None = None  # on the mode's own score (cosine, BM25 or fused); it only cuts
    document_ids: tuple[str, ...] | None = None  # search only these documents (None: all)
    include_toc: bool = False  # tables of contents are left out unless asked for
    depth: int | None = None  # candidates of each list hybrid search fuses (None: candidate_limit(top_k))
    rerank_depth: int = RERANK_DEPTH  # with a reranker: how many hits it reorders before the top_k are cut

    def __post_init__(self) -> None:
        if self.mode is not None and self.mode not in MODES:
            raise QueryError(f"Unknown search mode '{self.mode}'. Use one of: {', '.join(MODES)}.")
        if self.fusion is not None:
            parse_fusion(self.fusion)  # an unknown fusion says so now, not at the engine
        if self.document_ids is not None:  # a tuple, so the value hashes; none chosen is every document
            object.__setattr__(self, "document_ids", tuple(self.document_ids) or None)

    def replace(self, **changes: object) -> SearchRequest:
        """Return this request with the given fields changed (a new value; this one stays as it is)."""
        return dataclasses.replace(self, **changes)

    @property
    def searched_mode(self) -> str:
        """Return the mode a Store searches: mode, dense when None."""
        return self.mode or "dense"

    @property
    def searched_fusion(self) -> str:
        """Return the fusion a Store uses: fusion, DEFAULT_FUSION when None."""
        return self.fusion or DEFAULT_FUSION

    def as_searched(self) -> SearchRequest:
        """Return this request with the mode and fusion a Store searches it in (None: dense, DEFAULT_FUSION)."""
        return self.replace(mode=self.searched_mode, fusion=self.searched_fusion)

    @property
    def documents(self) -> list[str] | None:
        """Return the document filter as a list (what the engine's filter takes), None for all documents."""
        return None if self.document_ids is None else list(self.document_ids)


def requests_for(modes: Sequence[tuple[str, str]], top_k: int) -> list[SearchRequest]:
    """Return one request per (mode, fusion) at top_k: the modes an evaluation compares in one round trip."""
    return [SearchRequest(mode=mode, fusion=fusion, top_k=top_k) for mode, fusion in modes]


DEFAULT_REQUEST = SearchRequest()  # the collection's mode and fusion, top 5, every document, no threshold
