"""One client for the `/rerank` request of three servers, the dialect chosen by the spec (on rag.http's edge).

    tei:<url>        Hugging Face text-embeddings-inference serving a reranker, e.g. tei:http://localhost:8080
                     POST <url>/rerank {"query", "texts", "truncate": true} -> [{"index", "score"}, ...]
    cohere:<model>   Cohere's rerank API (COHERE_BASE_URL, default https://api.cohere.com/v2; COHERE_API_KEY)
                     POST <base>/rerank {"model", "query", "documents", "top_n"} -> {"results": [{"index",
                     "relevance_score"}, ...]}
    jina:<model>     Jina's rerank API (JINA_BASE_URL, default https://api.jina.ai/v1; JINA_API_KEY), Cohere's shape

Keys follow their URL (rag.settings.configured_key): COHERE_API_KEY goes only to COHERE_BASE_URL (or Cohere's
own API when unset), JINA_API_KEY only to JINA_BASE_URL (or Jina's), TEI_API_KEY only to the URL in TEI_URL;
a key is sent as "Authorization: Bearer <key>" and never shown. RAG_RERANK_TIMEOUT (default 30 s) is how
long the server may stay silent. An answer must give one finite score for every text sent, each index once.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import httpx

from rag.errors import RerankerAuthError, RerankError, RerankerUnavailableError
from rag.http import Edge, Errors, RetryPolicy
from rag.settings import Service, check_url, configured_key, display_url, timeout
from rag.words import shorten

ERRORS = Errors(RerankError, RerankerUnavailableError, RerankerAuthError)
COHERE = Service("Cohere", "COHERE_BASE_URL", "COHERE_API_KEY", "https://api.cohere.com/v2")
JINA = Service("Jina", "JINA_BASE_URL", "JINA_API_KEY", "https://api.jina.ai/v1")
TEI = Service("Text Embeddings Inference", "TEI_URL", "TEI_API_KEY")
TEI_BATCH = 32  # texts per TEI request: its default --max-client-batch-size
SERVICES = {"tei": TEI, "cohere": COHERE, "jina": JINA}
SCALES = {  # how each dialect's score is named: the reranker's own scale, never comparable to cosine or BM25
    "tei": "TEI rerank score (0 to 1 unless the server returns raw scores)",
    "cohere": "Cohere relevance_score (0 to 1)",
    "jina": "Jina relevance_score",
}


class ApiReranker:
    """Scores (query, text) pairs with a /rerank server; `score(query, texts)` returns one score per text."""

    def __init__(self, dialect: str, argument: str, *, client: httpx.Client | None = None,
                 retry: RetryPolicy | None = None, seconds: float | None = None, api_key: str | None = None,
                 base_url: str | None = None, source: Mapping[str, str] | None = None):
        """source: where the base URL and the key are configured (default: the environment; the app passes its
        settings, secrets.toml included)."""
        service, source = SERVICES[dialect], os.environ if source is None else source
        self.dialect = dialect
        if dialect == "tei":
            self.model, url = "", check_url(base_url or argument, "The TEI URL in tei:<url>", default_scheme=True,
                                            example="http://localhost:8080")
        else:
            configured = base_url if base_url is not None else source.get(service.url_variable)
            url = check_url(configured.strip(), service.url_variable, default_scheme=True,
                            example=service.default_url or "") if (configured or "").strip() else service.default_url
            self.model = argument
        assert url
        self.base_url = url
        self.spec = f"{dialect}:{argument if dialect != 'tei' else display_url(url)}"
        self.scale = SCALES[dialect]
        key = api_key if api_key is not None else configured_key(url, service, source)
        hint = f"Is the server running? Check {'the URL after tei:' if dialect == 'tei' else service.url_variable}."
        self.edge = Edge(service.name, url, ERRORS, timeout=seconds or timeout("RAG_RERANK_TIMEOUT"),
                         timeout_setting="RAG_RERANK_TIMEOUT", hint=hint, key=key, client=client, retry=retry,
                         slow="The reranker may still be loading or the texts are long")

    def __repr__(self) -> str:
        key = "set" if self.edge.key else "not set"
        return f"ApiReranker(spec={self.spec!r}, base_url={display_url(self.base_url)!r}, api_key={key})"

    def close(self) -> None:
        self.edge.close()

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Return the reranker's score of each text for query, in the order of texts (one request)."""
        if self.dialect == "tei":  # TEI refuses more than --max-client-batch-size texts (32 by default)
            return [s for at in range(0, len(texts), TEI_BATCH) for s in self._batch(query, texts[at:at + TEI_BATCH])]
        return self._batch(query, texts) if texts else []

    def _batch(self, query: str, texts: Sequence[str]) -> list[float]:
        if self.dialect == "tei":
            payload: dict[str, Any] = {"query": query, "texts": list(texts), "truncate": True}
        else:
            payload = {"model": self.model, "query": query, "documents": list(texts), "top_n": len(texts)}
        body = self.edge.post_json(f"{self.base_url}/rerank", payload, self._refuse)
        items = body if self.dialect == "tei" else (body.get("results") if isinstance(body, dict) else None)
        return self._scores(items, len(texts), body)

    def _scores(self, items: Any, count: int, body: Any) -> list[float]:
        """Return the scores by index; RerankError quoting the answer when it is not one score per text."""
        key = "score" if self.dialect == "tei" else "relevance_score"
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise self._malformed(f"no list of results with 'index' and '{key}'", body)
        if len(items) != count:
            raise self._malformed(f"{len(items)} results for {count} texts", body)
        scores: list[float | None] = [None] * count
        for item in items:
            index, value = item.get("index"), item.get(key)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count \
                    or scores[index] is not None:
                raise self._malformed(f"the indexes are not each of 0..{count - 1} once", body)
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
                raise self._malformed(f"a '{key}' that is not a finite number", body)
            scores[index] = float(value)
        return [float(s) for s in scores if s is not None]

    def _malformed(self, problem: str, body: Any) -> RerankError:
        received = self.edge.redact(shorten(str(body), 160))
        return RerankError(f"{self.edge.where()} sent a malformed rerank answer ({problem}): {received}. Check that "
                           f"it serves a reranker ({self.spec}).")

    def _refuse(self, response: httpx.Response) -> NoReturn:
        status, detail = response.status_code, self.edge.detail(response)
        service = SERVICES[self.dialect]
        if status in (401, 403):
            sent = "the API key (it is not shown here)" if self.edge.key else "no API key"
            home = "TEI_URL" if self.dialect == "tei" else service.url_variable
            raise RerankerAuthError(f"{self.edge.where()} refused the request (HTTP {status}: {detail}); RAG Lab sent "
                                    f"{sent}. Set {service.key_variable}; it goes only to the URL in {home}.")
        if status == 404:
            raise RerankError(f"{self.edge.where()} has no /rerank for '{self.model or self.spec}' (HTTP 404: "
                              f"{detail}). Check the model name and the URL.")
        self.edge.refusal(response, f"rerank with '{self.spec}'")
