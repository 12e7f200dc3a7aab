"""Embeddings from any OpenAI-compatible `/v1/embeddings`: OpenAI, vLLM, LM Studio, llama.cpp, TEI.

The server is OPENAI_BASE_URL (default https://api.openai.com/v1), read when the embedder is made.
The rule for the URL: a URL with no path gets /v1 appended ("http://localhost:8000" ->
"http://localhost:8000/v1"); a URL with a path is used as given ("http://host/v1", "http://host/api/v1");
a host without a scheme gets http://. Requests go to <base URL>/embeddings.

OPENAI_API_KEY is sent as "Authorization: Bearer <key>" only to the URL configured beside it (OPENAI_BASE_URL,
or OpenAI's API when that is unset): an embedder made for another base_url gets a key only when one is
passed with it (rag.settings.configured_key). Local servers need none. The key never appears in a message
or repr: server messages are redacted before they are shown.

Token counts come from rag.chunking.tokens (cl100k_base): exact for OpenAI's own embedding models, which use
cl100k (`tokens_exact = True`), an estimate for any other model.
"""

from __future__ import annotations

import os
from typing import Any, NoReturn

import httpx

from rag.embeddings.base import NONE, known_prompts
from rag.embeddings.http import DEFAULT_BATCH_SIZE, HttpEmbedder, RetryPolicy
from rag.errors import EmbeddingError, ModelNotFoundError
from rag.settings import OPENAI, configured_key, display_url, openai_base_url, openai_key_hint

DEFAULT_BASE_URL = OPENAI.default_url
OPENAI_MAX_INPUT_TOKENS = 8191
DEFAULT_MAX_INPUT_TOKENS = 512
KNOWN_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder(HttpEmbedder):
    """Embeds with an OpenAI-compatible server; model_id is "openai:<model>"."""

    service = "The OpenAI-compatible server"
    unreachable_hint = "Is the server running? Check OPENAI_BASE_URL."

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        client: httpx.Client | None = None,
        timeout: float | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        retry: RetryPolicy | None = None,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
    ):
        url = openai_base_url(base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL"))
        known = model in KNOWN_DIMENSIONS
        super().__init__(
            model,
            url,
            f"{url}/embeddings",
            client=client,
            timeout=timeout,
            batch_size=batch_size,
            retry=retry,
            prompts=NONE if known else known_prompts(model),  # OpenAI's own models want no prompt
            query_prompt=query_prompt,
            document_prompt=document_prompt,
            dimension=KNOWN_DIMENSIONS.get(model),
            max_input_tokens=OPENAI_MAX_INPUT_TOKENS if known else DEFAULT_MAX_INPUT_TOKENS,
            key=api_key if api_key is not None else configured_key(url, OPENAI),
        )
        self.model_id = f"openai:{model}"
        self.tokens_exact = known
        self.token_note = (
            f"Exact: {model} uses cl100k. Input limit {OPENAI_MAX_INPUT_TOKENS} tokens."
            if known
            else f"Token counts are cl100k estimates. Input limit of '{model}' unknown here: "
            f"assuming {DEFAULT_MAX_INPUT_TOKENS} tokens."
        )

    def __repr__(self) -> str:
        key = "set" if self.edge.key else "not set"
        return f"OpenAIEmbedder(model={self.model!r}, base_url={display_url(self.base_url)!r}, api_key={key})"

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts}

    def _parse(self, body: Any) -> Any:
        """Return the vectors ordered by each item's `index` (servers may answer out of order)."""
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise self._malformed("no 'data' list", body)
        if all("index" in item for item in data):
            indexes = [item["index"] for item in data]
            if not all(isinstance(i, int) for i in indexes) or sorted(indexes) != list(range(len(data))):
                raise self._malformed(f"indexes {indexes} are not 0..{len(data) - 1}", body)
            data = sorted(data, key=lambda item: item["index"])
        return [item.get("embedding") for item in data]

    def _refuse(self, response: httpx.Response) -> NoReturn:
        status = response.status_code
        detail = self.edge.detail(response)
        if status in (400, 404) and _is_missing_model(response, detail):
            raise ModelNotFoundError(
                f"{self._where()} has no embedding model '{self.model}' ({detail}). Check the name after "
                f"'openai:'; {display_url(self.base_url)}/models lists the server's models."
            )
        if status == 404:
            raise EmbeddingError(
                f"{self._where()} has no /embeddings endpoint (HTTP 404: {detail}). Check OPENAI_BASE_URL: "
                "the server's root URL or its /v1 URL."
            )
        self.edge.refusal(response, f"embed with model '{self.model}'", openai_key_hint(self.edge.key))


def _is_missing_model(response: httpx.Response, detail: str) -> bool:
    """Return True when an error answer says the model does not exist (OpenAI, vLLM, LM Studio wordings)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("code") == "model_not_found":
        return True
    lowered = detail.lower()
    return "model" in lowered and ("not found" in lowered or "does not exist" in lowered)
