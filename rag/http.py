"""The HTTP edge of every server client (the embedders, the chat models, the rerankers): one place for each rule.

- Timeouts: seconds a server may stay silent (RAG_EMBED_TIMEOUT, RAG_LLM_TIMEOUT, RAG_RERANK_TIMEOUT, read by
  rag.settings.timeout); connecting may take at most `connect` seconds. A timeout's message names its variable.
- Retries (`RetryPolicy`): HTTP 429 and 5xx, and errors before the server took the request (connection refused
  or reset, connect timeout) are tried again, at most `retries` times, waiting `backoff * 2**attempt` seconds or
  the server's Retry-After, never longer than `max_wait`. A read or write timeout is not retried (the server has
  the work and is slow: sending it again would make the user wait several full timeouts), and nothing is tried
  again once streamed text has arrived (it would come twice); the message says how much came.
- Messages: one line, "<service> at <URL without user:password>", the server's own error text shortened
  (`server_message`; rag.words.shorten), a key never shown (`Edge.redact`, rag.settings.redact_key),
  exception texts with their URLs redacted (rag.urls.redact_urls).
- Keys: an Edge sends its key as "Authorization: Bearer <key>"; the client asks rag.settings.configured_key for
  it, so a key goes only to the URL configured beside it.

A client keeps one Edge and says the rest: its payload, how it reads an answer, `refuse` for the statuses that are
not retried (401, 404, ...), with `Edge.refusal` for what every server shares.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn, TypeVar

import httpx

from rag.errors import RagError
from rag.settings import display_url, redact_key
from rag.urls import redact_urls
from rag.words import counted, shorten

T = TypeVar("T")
NOT_RETRIED_TIMEOUTS = (httpx.ReadTimeout, httpx.WriteTimeout)
CONNECT_TIMEOUT = 10.0  # at most; less when the silence timeout is shorter
_CONTEXT_WORDS = ("context length", "context window", "context_length", "maximum context", "too many tokens",
                  "prompt is too long", "prompt too long", "input is too long", "exceeds the context")


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


def server_message(response: httpx.Response) -> str:
    """Return the error text in a response body (Ollama, OpenAI, TEI, Cohere, Jina, FastAPI shapes), shortened."""
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


def says_context_too_long(detail: str) -> bool:
    """Return whether a server's error text says the input does not fit the model's context window."""
    lowered = detail.lower()
    return any(words in lowered for words in _CONTEXT_WORDS)


def bearer(key: str) -> dict[str, str]:
    """Return the OpenAI-style key header ("Authorization: Bearer <key>"), or none without a key."""
    return {"Authorization": f"Bearer {key}"} if key else {}


@dataclass(frozen=True)
class Errors:
    """The error classes of one kind of client (embedder, chat model, reranker)."""

    base: type[RagError]
    unavailable: type[RagError]
    auth: type[RagError]


class Edge:
    """One server as a client sees it: its URL, key, timeouts and retries, and how messages name it."""

    def __init__(self, service: str, base_url: str, errors: Errors, *, timeout: float, timeout_setting: str,
                 hint: str, key: str = "", client: httpx.Client | None = None, retry: RetryPolicy | None = None,
                 slow: str = "The model may still be loading"):
        self.service, self.base_url, self.errors, self.key = service, base_url, errors, key.strip()
        self.timeout = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout))
        self.timeout_setting, self.hint, self.slow = timeout_setting, hint, slow
        self.retry = retry or RetryPolicy()
        self._owns_client = client is None
        self.client = client or httpx.Client(timeout=self.timeout)

    def where(self) -> str:
        return f"{self.service} at {display_url(self.base_url)}"

    def redact(self, text: str) -> str:
        """Return a server's text with the key sent (and anything shaped like an API key) masked."""
        return redact_key(text, self.key)

    def detail(self, response: httpx.Response) -> str:
        """Return the server's error text of response, shortened and redacted (safe to show)."""
        return self.redact(server_message(response))

    def close(self) -> None:
        """Close the HTTP client if this edge made it (a client passed in is left open)."""
        if self._owns_client:
            self.client.close()

    def post_json(self, url: str, payload: dict[str, Any], refuse: Callable[[httpx.Response], NoReturn]) -> Any:
        """Return the JSON body of a successful POST (with retries); `refuse` raises for a status not retried."""
        answers = self.exchange(url, payload, refuse, lambda response: iter([self.json(response)]))
        try:
            return next(answers)
        finally:
            answers.close()

    def exchange(self, url: str, payload: dict[str, Any], refuse: Callable[[httpx.Response], NoReturn],
                 read: Callable[[httpx.Response], Iterator[T]]) -> Iterator[T]:
        """Yield what `read` takes from a successful streamed POST; the one retry loop of RAG Lab.

        Text pieces (str) count as received: once any has arrived, a failure is not retried.
        """
        attempts = self.retry.retries + 1
        for attempt in range(attempts):
            last, received = attempt == attempts - 1, 0
            try:
                with self.client.stream("POST", url, json=payload, headers=bearer(self.key),
                                        timeout=self.timeout) as response:
                    status = response.status_code
                    if status == 429 or status >= 500:
                        response.read()
                        if last:
                            raise self.errors.unavailable(self._kept_failing(response, attempts))
                        self.retry.sleep(self.retry.wait(attempt, response))
                        continue
                    if not response.is_success:
                        response.read()
                        refuse(response)
                    for piece in read(response):
                        received += len(piece) if isinstance(piece, str) else 0
                        yield piece
                    return
            except NOT_RETRIED_TIMEOUTS as exc:
                raise self.errors.unavailable(self._silent(received)) from exc
            except httpx.TransportError as exc:
                reason = shorten(redact_urls(self.redact(str(exc) or type(exc).__name__)), 120)
                if received:
                    raise self.errors.unavailable(self._broke_off(received, reason)) from exc
                if last:
                    tries = counted(attempts, "attempt")
                    raise self.errors.unavailable(f"Could not reach {self.where()} ({reason}; {tries}). "
                                                  f"{self.hint}") from exc
                self.retry.sleep(self.retry.wait(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def json(self, response: httpx.Response) -> Any:
        """Return the JSON body of response; an answer that is no JSON is one error quoting what came."""
        response.read()
        try:
            return response.json()
        except ValueError as exc:
            received = self.redact(shorten(response.text)) or "an empty body"
            raise self.errors.base(f"{self.where()} sent an answer that is not JSON: {received}") from exc

    def refusal(self, response: httpx.Response, doing: str, key_hint: str = "It needs credentials.") -> NoReturn:
        """Raise what every server's refusal shares: 401/403 is an auth error, anything else says `doing`."""
        status, detail = response.status_code, self.detail(response)
        if status in (401, 403):
            raise self.errors.auth(f"{self.where()} refused the request (HTTP {status}: {detail}). {key_hint}")
        raise self.errors.base(f"{self.where()} refused to {doing} (HTTP {status}: {detail}).")

    def _kept_failing(self, response: httpx.Response, attempts: int) -> str:
        status, detail = response.status_code, self.detail(response)
        if status == 429:
            return (f"{self.where()} kept refusing with HTTP 429 (rate limited: {detail}) after {attempts} "
                    "attempts. Wait a minute and try again, or send less at once.")
        return f"{self.where()} kept failing with HTTP {status} ({detail}) after {attempts} attempts."

    def _silent(self, received: int) -> str:
        seconds = f"{self.timeout.read:g} s"
        if received:
            return (f"{self.where()} stopped sending for {seconds} after {received} characters of the answer; it "
                    f"is cut off there. Try again, or raise {self.timeout_setting} (seconds) if the model is only "
                    "slow.")
        return (f"{self.where()} did not answer within {seconds}. {self.slow}: try again, or raise "
                f"{self.timeout_setting} (seconds).")

    def _broke_off(self, received: int, reason: str) -> str:
        return (f"The answer from {self.where()} broke off after {received} characters ({reason}); it was not "
                "retried, so as not to repeat the text. Ask again.")
