"""The shared HTTP edge of the embedding providers: bounded retries, clear errors, batching, dimension checks.

Retries: a request is retried at most `RetryPolicy.retries` times on HTTP 429 or 5xx and on transport
errors (connection refused or reset, connect timeout), waiting `backoff * 2**attempt` seconds, or the
server's Retry-After (seconds or an HTTP date) when it sends one, never longer than `max_wait`.
A read or write timeout is not retried: the server has the work and is slow, and sending it again would
make the user wait several full timeouts before seeing the error. The timeout is RAG_EMBED_TIMEOUT (seconds
the server may stay silent, rag.settings), and its message names that setting.

Messages show the server's URL only through rag.settings.display_url (no user:password), and the text of
httpx's exceptions through rag.urls.redact_urls.

Subclasses (Ollama, OpenAI-compatible) say how one batch is sent and read: `_payload`, `_parse`, and
`_refuse` for the error statuses that are not retried.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import numpy as np

from rag.chunking import tokens
from rag.embeddings.base import PromptedEmbedder, Prompts, embed_in_batches
from rag.errors import EmbedderAuthError, EmbedderUnavailableError, EmbeddingError, InvalidSettingsError
from rag.settings import TIMEOUTS, display_url
from rag.settings import timeout as configured_timeout
from rag.urls import redact_urls

DEFAULT_TIMEOUT = TIMEOUTS["RAG_EMBED_TIMEOUT"]  # when RAG_EMBED_TIMEOUT is unset
DEFAULT_BATCH_SIZE = 64
PROBE_TEXT = "dimension probe"
_NOT_RETRIED_TIMEOUTS = (httpx.ReadTimeout, httpx.WriteTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a failed request; `sleep` is injectable so tests never wait."""

    retries: int = 3
    backoff: float = 0.5
    max_wait: float = 30.0
    sleep: Callable[[float], None] = time.sleep

    def wait(self, attempt: int, response: httpx.Response | None = None) -> float:
        """Return the seconds to wait after failed attempt number `attempt` (0-based), capped at max_wait."""
        retry_after = retry_after_seconds(response) if response is not None else None
        seconds = retry_after if retry_after is not None else self.backoff * 2**attempt
        return min(max(seconds, 0.0), self.max_wait)


def retry_after_seconds(response: httpx.Response) -> float | None:
    """Return the Retry-After header in seconds (number or HTTP date), or None when absent or unreadable."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def shorten(text: str, limit: int = 200) -> str:
    """Return text on one line, cut to at most `limit` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def server_message(response: httpx.Response) -> str:
    """Return the error text in a response body (Ollama, OpenAI, TEI and FastAPI shapes), shortened."""
    try:
        body = response.json()
    except ValueError:
        return shorten(response.text) or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error") or body.get("detail") or body.get("message")
        if isinstance(error, dict):
            error = error.get("message") or error
        if error:
            return shorten(error if isinstance(error, str) else json.dumps(error))
    return shorten(json.dumps(body))


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
    ):
        if batch_size < 1:
            raise InvalidSettingsError(f"batch_size must be at least 1, not {batch_size}")
        self.model = model
        self.base_url = base_url
        self.endpoint = endpoint
        self.timeout = timeout if timeout is not None else configured_timeout("RAG_EMBED_TIMEOUT")
        self.batch_size = batch_size
        self.retry = retry or RetryPolicy()
        self._owns_client = client is None
        self.client = client or httpx.Client(timeout=self.timeout)
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
        if self._owns_client:
            self.client.close()

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Return the checked float32 vectors of one batch, from one request (with retries)."""
        body = self._send(self._payload(list(texts)))
        return self._matrix(self._parse(body), len(texts), body)

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def _parse(self, body: Any) -> Any:
        """Return the list of vectors in a successful response body (subclasses check its shape)."""
        raise NotImplementedError

    def _headers(self) -> dict[str, str]:
        return {}

    def _redact(self, text: str) -> str:
        """Return text with secrets removed; subclasses that hold an API key override this."""
        return text

    def _where(self) -> str:
        return f"{self.service} at {display_url(self.base_url)}"

    def _send(self, payload: dict[str, Any]) -> Any:
        """Return the JSON body of a successful POST, retrying 429, 5xx and transport errors."""
        policy = self.retry
        attempts = policy.retries + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = self.client.post(self.endpoint, json=payload, headers=self._headers(), timeout=self.timeout)
            except _NOT_RETRIED_TIMEOUTS as exc:
                raise EmbedderUnavailableError(
                    f"{self._where()} did not answer within {self.timeout:g} s. The model may still be "
                    "loading or the batch is large: try again, or raise RAG_EMBED_TIMEOUT (seconds)."
                ) from exc
            except httpx.TransportError as exc:
                if last:
                    reason = shorten(redact_urls(str(exc) or type(exc).__name__), 120)
                    raise EmbedderUnavailableError(
                        f"Could not reach {self._where()} ({reason}; {attempts} attempts). {self.unreachable_hint}"
                    ) from exc
                policy.sleep(policy.wait(attempt))
                continue
            if response.status_code == 429 or response.status_code >= 500:
                if last:
                    raise EmbedderUnavailableError(self._kept_failing(response, attempts))
                policy.sleep(policy.wait(attempt, response))
                continue
            if response.is_success:
                return self._json(response)
            self._refuse(response)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _kept_failing(self, response: httpx.Response, attempts: int) -> str:
        status = response.status_code
        detail = self._redact(server_message(response))
        if status == 429:
            return (
                f"{self._where()} kept refusing with HTTP 429 (rate limited: {detail}) after {attempts} "
                "attempts. Wait a minute and try again, or use smaller batches."
            )
        return f"{self._where()} kept failing with HTTP {status} ({detail}) after {attempts} attempts."

    def _refuse(self, response: httpx.Response) -> None:
        """Raise the error for a status that is not retried; subclasses handle theirs first."""
        status = response.status_code
        detail = self._redact(server_message(response))
        if status in (401, 403):
            raise EmbedderAuthError(
                f"{self._where()} refused the request (HTTP {status}: {detail}). It needs credentials."
            )
        raise EmbeddingError(f"{self._where()} refused to embed with model '{self.model}' (HTTP {status}: {detail}).")

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            received = self._redact(shorten(response.text)) or "an empty body"
            raise EmbeddingError(f"{self._where()} sent an answer that is not JSON: {received}") from exc

    def _malformed(self, problem: str, body: Any) -> EmbeddingError:
        """Return the error for an answer of the wrong shape, quoting what was received (shortened)."""
        received = self._redact(shorten(json.dumps(body, default=str)))
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
