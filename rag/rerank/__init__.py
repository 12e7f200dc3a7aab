"""Reranking: an optional stage after retrieval that reorders the top candidates with a reranker's own scores.

A spec names the reranker (`--rerank SPEC` on the CLI, a text field in the app; empty means off):

    tei:<url>        a text-embeddings-inference server with a reranker model, e.g. tei:http://localhost:8080
    cohere:<model>   Cohere's /rerank (COHERE_BASE_URL, COHERE_API_KEY), e.g. cohere:rerank-v3.5
    jina:<model>     Jina's /rerank (JINA_BASE_URL, JINA_API_KEY), e.g. jina:jina-reranker-v2-base-multilingual
    local:<path>     a sentence-transformers CrossEncoder folder on this machine (the optional extra: `make extras`)

The three servers share one client (rag.rerank.api, on rag.http's edge). No reranker model ships with RAG Lab.
`rerank(query, hits, reranker, depth)` sends the first `depth` hits to the reranker and returns them reordered
by its score (ties keep the retrieval order), each hit's `score` now the reranker's (score_kind "rerank", its
scale named by `reranker.scale`) and its place and score before reranking in `retrieved_rank` and
`retrieved_score`; hits below the depth follow in retrieval order, unscored (score None).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import httpx

from rag.errors import InvalidSettingsError, UnknownRerankerError
from rag.providers import Registry
from rag.rerank import local
from rag.rerank.api import SERVICES, TEI, ApiReranker
from rag.retrieval import RERANK_DEPTH, Hit
from rag.settings import folder_inside_data_root

__all__ = ["DEFAULT_DEPTH", "RERANK_SPECS", "Reranker", "SCORE_KIND", "SERVICES", "TEI", "check_depth", "describe",
           "get_reranker", "rerank", "rerank_all"]

DEFAULT_DEPTH = RERANK_DEPTH  # candidates a reranker reads per query (rag.retrieval.request)
MAX_DEPTH = 1000
SCORE_KIND = "rerank"


class Reranker(Protocol):
    spec: str  # as given, a URL shown without user:password
    scale: str  # the name of its score's scale, for tables and charts

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...

    def close(self) -> None: ...


def _local(argument: str, client: httpx.Client | None = None, root: Path | None = None, **_: Any) -> Reranker:
    folder = folder_inside_data_root(argument, root) if root is not None else Path(argument)
    return local.CrossEncoderReranker(local.folder(str(folder)))


def _server(dialect: str) -> Callable[..., Reranker]:
    def make(argument: str, client: httpx.Client | None = None, root: Path | None = None, **options: Any) -> Reranker:
        return ApiReranker(dialect, argument, client=client, **options)

    return make


RERANKERS: Registry[Reranker] = Registry("reranker", UnknownRerankerError, "tei:http://localhost:8080")
RERANKERS.register("tei", _server("tei"), ("tei:<url>",), "a server URL", "tei:http://localhost:8080")
RERANKERS.register("cohere", _server("cohere"), ("cohere:<model>",), "a model name", "cohere:rerank-v3.5")
RERANKERS.register("jina", _server("jina"), ("jina:<model>",), "a model name",
                   "jina:jina-reranker-v2-base-multilingual")
RERANKERS.register("local", _local, ("local:<path>",), "a folder", "local:data/models/my-cross-encoder")
RERANK_SPECS = RERANKERS.forms


def get_reranker(spec: str, *, client: httpx.Client | None = None, root: Path | None = None,
                 **options: Any) -> Reranker:
    """Return the reranker of a spec (see the module); UnknownRerankerError saying the valid forms.

    root: when given (the app passes its data root), a `local:<path>` folder must lie inside it, the rule for
    every model folder typed in the browser (rag.settings.folder_inside_data_root). client and options
    (retry, seconds, api_key, base_url) go to the server client; tests pass a client.
    """
    return RERANKERS.make(spec or "", client=client, root=root, **options)


def describe(reranker: Reranker | None, depth: int) -> dict | None:
    """Return what a run records and a JSON answer says of its reranker: spec, depth, the name of its scale."""
    return None if reranker is None else {"spec": reranker.spec, "depth": depth, "scale": reranker.scale}


def check_depth(depth: int) -> int:
    """Return depth if it is a usable rerank depth (1 to MAX_DEPTH); InvalidSettingsError saying what to do."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise InvalidSettingsError(f"The rerank depth must be a whole number from 1 to {MAX_DEPTH}, not {depth!r}; "
                                   f"e.g. {DEFAULT_DEPTH}.")
    return depth


def rerank(query: str, hits: Sequence[Hit], reranker: Reranker, depth: int = DEFAULT_DEPTH) -> list[Hit]:
    """Return hits with the first `depth` reordered by the reranker's score (see the module)."""
    top, rest = list(hits[:check_depth(depth)]), list(hits[depth:])
    scores = reranker.score(query, [hit.content for hit in top])
    order = sorted(range(len(top)), key=lambda i: (-scores[i], i))
    ranked = [replace(top[i], score=scores[i], score_kind=SCORE_KIND, retrieved_rank=i + 1,
                      retrieved_score=top[i].score) for i in order]
    below = [replace(hit, score=None, score_kind=SCORE_KIND, retrieved_rank=len(top) + n + 1,
                     retrieved_score=hit.score) for n, hit in enumerate(rest)]
    return ranked + below


def rerank_all(queries: Sequence[str], results: Sequence[Sequence[Hit]], reranker: Reranker, depth: int,
               top_k: int) -> list[list[Hit]]:
    """Return each query's hits reranked (rerank) and cut to top_k: what an evaluation scores."""
    return [rerank(query, hits, reranker, depth)[:top_k] for query, hits in zip(queries, results, strict=True)]
