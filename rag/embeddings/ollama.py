"""Ollama embeddings over its HTTP API: `POST /api/embed` with {"model", "input": [...]}.

The server is OLLAMA_HOST (default http://localhost:11434), read when the embedder is made. As in Ollama's
own client, a host without a scheme gets http:// and, without a port, 11434 ("localhost" ->
http://localhost:11434); a URL with a scheme keeps its port (or the scheme's default). A malformed host
raises InvalidSettingsError before anything is sent (rag.settings.ollama_base_url).

Token counts are estimates: Ollama offers no tokenizer endpoint, so count_tokens is the cl100k count from
rag.chunking.tokens (`tokens_exact = False`). BERT-style models such as mxbai-embed-large usually need somewhat more
of their own tokens than cl100k for the same German text.
"""

from __future__ import annotations

import os
from typing import Any, NoReturn

import httpx

from rag.embeddings.base import known_prompts
from rag.embeddings.http import DEFAULT_BATCH_SIZE, HttpEmbedder, RetryPolicy
from rag.errors import EmbeddingError, ModelNotFoundError
from rag.settings import OLLAMA_PORT, display_url, ollama_base_url

DEFAULT_HOST = "http://localhost:11434"
DEFAULT_PORT = OLLAMA_PORT
DEFAULT_MAX_INPUT_TOKENS = 512

# base model name -> (dimension, input limit in the model's own tokens)
KNOWN_MODELS: dict[str, tuple[int, int]] = {
    "mxbai-embed-large": (1024, 512),
    "nomic-embed-text": (768, 8192),
    "bge-m3": (1024, 8192),
    "all-minilm": (384, 256),
}


def base_model_name(model: str) -> str:
    """Return the model name without tag or namespace: "library/bge-m3:567m" -> "bge-m3"."""
    return model.split(":", 1)[0].rsplit("/", 1)[-1].lower()


class OllamaEmbedder(HttpEmbedder):
    """Embeds with a model served by Ollama; model_id is "ollama:<model>"."""

    service = "Ollama"
    unreachable_hint = "Is Ollama running? Start it with `ollama serve` or set OLLAMA_HOST."

    def __init__(
        self,
        model: str,
        host: str | None = None,
        *,
        client: httpx.Client | None = None,
        timeout: float | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        retry: RetryPolicy | None = None,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
    ):
        base_url = ollama_base_url(host if host is not None else os.environ.get("OLLAMA_HOST"))
        known = KNOWN_MODELS.get(base_model_name(model))
        super().__init__(
            model,
            base_url,
            f"{base_url}/api/embed",
            client=client,
            timeout=timeout,
            batch_size=batch_size,
            retry=retry,
            prompts=known_prompts(base_model_name(model)),
            query_prompt=query_prompt,
            document_prompt=document_prompt,
            dimension=known[0] if known else None,
            max_input_tokens=known[1] if known else DEFAULT_MAX_INPUT_TOKENS,
        )
        self.model_id = f"ollama:{model}"
        limit = (
            f"Input limit {self.max_input_tokens} tokens."
            if known
            else f"Input limit of '{model}' unknown here: assuming {DEFAULT_MAX_INPUT_TOKENS} tokens."
        )
        self.token_note = f"Token counts are cl100k estimates; Ollama has no tokenizer endpoint. {limit}"

    def __repr__(self) -> str:
        return f"OllamaEmbedder(model={self.model!r}, base_url={display_url(self.base_url)!r})"

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts}

    def _parse(self, body: Any) -> Any:
        if not isinstance(body, dict) or "embeddings" not in body:
            raise self._malformed("no 'embeddings'", body)
        return body["embeddings"]

    def _refuse(self, response: httpx.Response) -> NoReturn:
        status = response.status_code
        detail = self.edge.detail(response)
        if status == 404 and "model" in detail.lower():
            raise ModelNotFoundError(
                f"{self._where()} has no model '{self.model}'. Run `ollama pull {self.model}`."
            )
        if status == 404:
            raise EmbeddingError(
                f"{self._where()} has no /api/embed ({detail}). It needs Ollama 0.3 or later; "
                "is OLLAMA_HOST pointing at Ollama?"
            )
        if status == 400 and "support" in detail.lower():
            raise EmbeddingError(
                f"Ollama model '{self.model}' cannot make embeddings ({detail}). Use an embedding model "
                "such as mxbai-embed-large or nomic-embed-text."
            )
        super()._refuse(response)
