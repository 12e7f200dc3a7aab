"""The embedding providers' part of the HTTP edge: batching, the dimension probe and checks on every answer.

Timeouts, retries, server messages, the key header and redaction are rag.http's (one Edge per embedder); the
timeout is RAG_EMBED_TIMEOUT (seconds the server may stay silent, rag.settings) and its message names it.
Subclasses (Ollama, OpenAI-compatible) say how one batch is sent and read: `_payload`, `_parse`, and
`_refuse` for the error statuses that are not retried.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NoReturn

import httpx
import numpy as np

from rag.chunking import tokens
from rag.embeddings.base import PromptedEmbedder, Prompts, embed_in_batches
from rag.errors import EmbedderAuthError, EmbedderUnavailableError, EmbeddingError, InvalidSettingsError
from rag.http import Edge, Errors, RetryPolicy
from rag.settings import TIMEOUTS
from rag.settings import timeout as configured_timeout
from rag.words import shorten

__all__ = ["DEFAULT_BATCH_SIZE", "HttpEmbedder", "RetryPolicy"]  # RetryPolicy: rag.http's, for older imports

DEFAULT_TIMEOUT = TIMEOUTS["RAG_EMBED_TIMEOUT"]  # when RAG_EMBED_TIMEOUT is unset
DEFAULT_BATCH_SIZE = 64
PROBE_TEXT = "dimension probe"
ERRORS = Errors(EmbeddingError, EmbedderUnavailableError, EmbedderAuthError)


class HttpEmbedder(PromptedEmbedder):
    """Base of the HTTP providers: batches, retries, the dimension probe and checks on every answer."""

    service = "The embedding server"  # how messages name the server, e.g. "Ollama"
    unreachable_hint = "Check that the server is running and its URL is right."
    tokens_exact = False

    def __init__(
        self,
        model: str,
        base_url: str,
        endpoint: str,
        *,
        client: httpx.Client | None = None,
        timeout: float | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        retry: RetryPolicy | None = None,
        dimension: int | None = None,
        max_input_tokens: int = 512,
        prompts: Prompts = Prompts(),  # noqa: B008 (frozen dataclass)
        query_prompt: str | None = None,
        document_prompt: str | None = None,
        key: str = "",
    ):
        if batch_size < 1:
            raise InvalidSettingsError(f"batch_size must be at least 1, not {batch_size}")
        self.model = model
        self.base_url = base_url
        self.endpoint = endpoint
        seconds = timeout if timeout is not None else configured_timeout("RAG_EMBED_TIMEOUT")
        self.edge = Edge(self.service, base_url, ERRORS, timeout=seconds, timeout_setting="RAG_EMBED_TIMEOUT",
                         hint=self.unreachable_hint, key=key, client=client, retry=retry,
                         slow="The model may still be loading or the batch is large")
        self.batch_size = batch_size
        self._dimension = dimension
        self._expected_from = "the model's known size" if dimension else ""
        self._max_input_tokens = max_input_tokens
        self.set_prompts(prompts, query_prompt, document_prompt)

    @property
    def dimension(self) -> int:
        """Return the vector length: known from a table, or probed once with a short text and cached."""
        if self._dimension is None:
            self._embed_batch([PROBE_TEXT])
        assert self._dimension is not None
        return self._dimension

    @property
    def max_input_tokens(self) -> int:
        """Return the model's input limit in its own tokens (a table value or a cautious default)."""
        return self._max_input_tokens

    def count_tokens(self, text: str) -> int:
        """Return an estimate of a chunk's length in the model's tokens (its prompt included): the cl100k count."""
        return tokens.count(self.document_prompt + text)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one float32 row per text, sending at most batch_size texts per request, in order.

        An empty list makes no embedding request; its shape is (0, dimension), which probes the
        server only when the dimension is not known yet.
        """
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return embed_in_batches(texts, self._embed_batch, self.batch_size, self._dimension)

    def close(self) -> None:
        """Close the HTTP client if this embedder made it (a client passed in is left open)."""
        self.edge.close()

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Return the checked float32 vectors of one batch, from one request (with retries)."""
        body = self.edge.post_json(self.endpoint, self._payload(list(texts)), self._refuse)
        return self._matrix(self._parse(body), len(texts), body)

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def _parse(self, body: Any) -> Any:
        """Return the list of vectors in a successful response body (subclasses check its shape)."""
        raise NotImplementedError

    def _where(self) -> str:
        return self.edge.where()

    def _refuse(self, response: httpx.Response) -> NoReturn:
        """Raise the error for a status that is not retried; subclasses handle theirs first."""
        self.edge.refusal(response, f"embed with model '{self.model}'")

    def _malformed(self, problem: str, body: Any) -> EmbeddingError:
        """Return the error for an answer of the wrong shape, quoting what was received (shortened)."""
        received = self.edge.redact(shorten(json.dumps(body, default=str)))
        return EmbeddingError(f"{self._where()} sent a malformed answer ({problem}): {received}")

    def _matrix(self, rows: Any, count: int, body: Any) -> np.ndarray:
        """Return rows as a float32 matrix after checking count, shape, numbers and dimension."""
        if not isinstance(rows, list) or len(rows) != count:
            got = len(rows) if isinstance(rows, list) else "no list of"
            raise self._malformed(f"{got} vectors for {count} texts", body)
        if any(not isinstance(row, list) or not row for row in rows) or len({len(r) for r in rows}) != 1:
            raise self._malformed("vectors are not lists of one common length", body)
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise self._malformed("vectors hold something other than numbers", body) from exc
        if not np.isfinite(matrix).all():
            raise self._malformed("vectors contain NaN or infinity", body)
        found = matrix.shape[1]
        if self._dimension is None:
            self._dimension = found
            self._expected_from = "the first answer"
        elif found != self._dimension:
            raise EmbeddingError(
                f"{self._where()} returned vectors of {found} numbers for model '{self.model}', but "
                f"{self._dimension} were expected (from {self._expected_from}). Is another model "
                "answering under this name?"
            )
        return matrix
