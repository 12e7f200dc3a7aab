"""Search modes as a dimension of evaluations, sweeps and comparisons: "dense", "sparse", "hybrid-rrf", ...

A SearchMode is the pair Store.search takes as `mode` and `fusion`. Written as text (CLI, JSON, tables):

    dense         embeddings (cosine)
    sparse        BM25 keywords
    hybrid        both lists fused, with the default fusion (rag.retrieval.fusion.DEFAULT_FUSION unless the caller
                  says otherwise)
    hybrid-rrf    hybrid with reciprocal rank fusion
    hybrid-dbsf   hybrid with distribution-based score fusion
    <mode>+rerank that mode's candidates reordered by a reranker (rag.rerank), e.g. hybrid-rrf+rerank

Modes are query-time only: one collection serves every mode, provided it has RAG Lab's keyword (sparse)
vectors (collections made before keyword search existed, and foreign ones, have not: dense only).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rag.errors import InvalidSettingsError, RagError, SparseVectorsMissingError
from rag.rerank import Reranker, rerank_all
from rag.retrieval import DEFAULT_FUSION, FUSIONS, MODES, RERANK_DEPTH, CollectionInfo, Hit, SearchRequest, check_mode
from rag.store import Store


@dataclass(frozen=True)
class SearchMode:
    mode: str = "dense"  # one of rag.retrieval.search.MODES
    fusion: str = DEFAULT_FUSION  # a fusion spec (rag.retrieval.fusion), e.g. "convex:w=0.6"; not used by dense, sparse
    rerank: bool = False  # the mode's candidates reordered by the run's reranker (rag.rerank)

    def __post_init__(self) -> None:
        fusion = check_mode(self.mode, self.fusion)
        # normalised, so SearchMode("dense", "dbsf") == SearchMode("dense") and "convex:w=0.50" == "convex"
        object.__setattr__(self, "fusion", fusion.spec if self.mode == "hybrid" else DEFAULT_FUSION)

    @property
    def label(self) -> str:
        """Return the mode as text: "dense", "sparse", "hybrid-rrf", "hybrid-convex:w=0.6", "dense+rerank" ..."""
        return (f"hybrid-{self.fusion}" if self.mode == "hybrid" else self.mode) + ("+rerank" if self.rerank else "")

    @property
    def fusion_used(self) -> str | None:
        """Return the fusion if the mode fuses (hybrid), else None (what JSON rows carry)."""
        return self.fusion if self.mode == "hybrid" else None

    def request(self, top_k: int, rerank_depth: int = RERANK_DEPTH) -> SearchRequest:
        """Return the search of this mode at top_k (its rerank is the caller's: the reranker travels beside)."""
        return SearchRequest(mode=self.mode, fusion=self.fusion, top_k=top_k, rerank_depth=rerank_depth)

    @property
    def needs_vectors(self) -> bool:
        """Return whether queries must be embedded (every mode but sparse)."""
        return self.mode != "sparse"

    @property
    def needs_keywords(self) -> bool:
        """Return whether the collection needs keyword (sparse) vectors (every mode but dense)."""
        return self.mode != "dense"


MODE_NAMES = ("dense", "sparse", "hybrid", *(f"hybrid-{f}" for f in FUSIONS))  # and hybrid-<fusion spec>


def parse_mode(text: str | SearchMode, fusion: str = DEFAULT_FUSION) -> SearchMode:
    """Return the SearchMode of "dense", "sparse", "hybrid" (with fusion) or "hybrid-<fusion spec>"
    ("hybrid-dbsf", "hybrid-convex:w=0.6"); ValueError if unknown."""
    if isinstance(text, SearchMode):
        return text
    name = text.strip().lower()
    if name.endswith("+rerank"):
        return replace(parse_mode(name.removesuffix("+rerank"), fusion), rerank=True)
    if name.startswith("hybrid-"):
        name, fusion = "hybrid", name.removeprefix("hybrid-")
    if name not in MODES:
        raise InvalidSettingsError(f"unknown search mode {text.strip()!r}; use one of {', '.join(MODE_NAMES)}")
    try:
        return SearchMode(name, fusion)
    except RagError as error:
        raise InvalidSettingsError(str(error).rstrip(".")) from None


def parse_modes(text: str | Iterable[str | SearchMode], fusion: str = DEFAULT_FUSION) -> list[SearchMode]:
    """Return the distinct modes of "dense,hybrid" (or of a list), in the order given; ValueError if none or unknown."""
    items = text.split(",") if isinstance(text, str) else list(text)
    modes = list(dict.fromkeys(parse_mode(item, fusion) for item in items if str(item).strip()))
    if not modes:
        raise InvalidSettingsError(f"give at least one search mode, e.g. dense,hybrid ({', '.join(MODE_NAMES)})")
    return modes


def collection_info(store: Store, collection: str) -> CollectionInfo:
    """Return the CollectionInfo of one collection; CollectionNotFoundError (listing the others) if missing."""
    infos = {c.name: c for c in store.collections()}
    if collection not in infos:
        store.collection_embedder(collection)  # raises the store's CollectionNotFoundError
    return infos[collection]


def require_keywords(store: Store, collection: str, modes: Iterable[SearchMode]) -> None:
    """Return None when collection can run every mode; SparseVectorsMissingError saying what to do otherwise."""
    keyword = [m.label for m in modes if m.needs_keywords]
    if not keyword:
        return
    if store.has_keywords(collection):
        return
    foreign = store.collection_embedder(collection)[0] is None
    why = "was not made by RAG Lab" if foreign else "was made before keyword search existed"
    raise SparseVectorsMissingError(
        f"Collection '{collection}' has no keyword (sparse) vectors ({why}), so it cannot be searched "
        f"{' or '.join(keyword)}. Re-ingest its documents into a new collection "
        "(python -m rag ingest FILES --collection NEW), or use the dense mode."
    )


def search_in_modes(store: Store, collection: str, modes: Sequence[SearchMode], vectors: np.ndarray | None,
                    embedder: Any, top_k: int, texts: Sequence[str], reranker: Reranker | None = None,
                    depth: int = 0) -> list[list[list[Hit]]]:
    """Return, per mode, the top_k hits of each query text. Modes without rerank share one round trip
    (Store.search_many); a +rerank mode searches max(top_k, depth) and has the reranker reorder its
    first `depth` hits (rag.rerank.rerank_all). vectors may be None when no mode needs them."""
    plain, reranked = [m for m in modes if not m.rerank], [m for m in modes if m.rerank]
    if reranked and reranker is None:
        raise InvalidSettingsError(f"The modes {', '.join(m.label for m in reranked)} need a reranker: give --rerank "
                                   "SPEC (e.g. tei:http://localhost:8080).")
    found: dict[SearchMode, list[list[Hit]]] = {}
    if plain:
        found |= zip(plain, store.search_many(collection, [m.request(top_k) for m in plain], vectors, embedder,
                                              query_texts=texts), strict=True)
    if reranked and reranker is not None:
        wide = store.search_many(collection, [m.request(max(top_k, depth)) for m in reranked], vectors, embedder,
                                 query_texts=texts)
        found |= {m: rerank_all(texts, hits, reranker, depth, top_k) for m, hits in zip(reranked, wide, strict=True)}
    return [found[m] for m in modes]
