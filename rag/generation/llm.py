"""Chat models over HTTP, streamed: `ollama:<model>` (POST /api/chat on OLLAMA_HOST) and `openai:<model>`
(POST /v1/chat/completions on OPENAI_BASE_URL, any OpenAI-compatible server).

On the HTTP edge (rag.http), as the embedders: a request is retried (429, 5xx, connection refused) only before
any text of its answer arrived (after that a retry would repeat the text, so the error says how much came);
OPENAI_API_KEY goes only to the URL configured beside it and never appears in a message; URLs are shown without
user:password; every failure is one LLMError leaf whose message says what to do, and a server's "prompt too
long" (context length) reply is a ContextWindowError. RAG_LLM_TIMEOUT (default 60 s) is how long the server
may stay silent: before its first word or between two pieces. An answer must be a stream of the provider's
shape that ends properly (`done` / `[DONE]` or a finish_reason) and holds some text; a web page, plain text,
pieces of the wrong shape, an empty answer or a cut-off stream are errors, never an empty or shortened answer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any, NoReturn

import httpx

from rag.errors import (
    ContextWindowError,
    LLMAuthError,
    LLMError,
    LLMModelNotFoundError,
    LLMUnavailableError,
    UnknownLLMError,
)
from rag.http import Edge, Errors, RetryPolicy, says_context_too_long
from rag.providers import Registry
from rag.settings import (
    OPENAI,
    configured_key,
    display_url,
    load,
    ollama_base_url,
    openai_base_url,
    openai_key_hint,
    timeout,
)
from rag.words import shorten

ERRORS = Errors(LLMError, LLMUnavailableError, LLMAuthError)
_SSE_FIELDS = ("event", "id", "retry")


class ChatModel:
    """Base of the providers: send messages, yield the answer's text as it streams in."""

    service = "The chat server"
    hint = "Check that the server is running and its URL is right."
    url_setting = ""  # the variable that names the server's URL, for hints
    api = "the chat API"  # what that URL must point at, for hints

    def __init__(self, model: str, base_url: str, endpoint: str, *, client: httpx.Client | None = None,
                 retry: RetryPolicy | None = None, read_timeout: float | None = None, key: str = ""):
        self.model, self.base_url, self.endpoint = model, base_url, endpoint
        seconds = read_timeout if read_timeout is not None else timeout("RAG_LLM_TIMEOUT")
        self.edge = Edge(self.service, base_url, ERRORS, timeout=seconds, timeout_setting="RAG_LLM_TIMEOUT",
                         hint=self.hint, key=key, client=client, retry=retry)

    model_id = property(lambda self: f"{self.provider}:{self.model}")
    provider = ""

    def stream(self, messages: list[dict[str, str]]) -> Iterator[str]:
        """Yield the pieces of the answer to messages; raise an LLMError leaf when the server fails."""
        received = 0
        for piece in self.edge.exchange(self.endpoint, self._payload(messages), self._refuse, self._pieces):
            received += len(piece)
            yield piece
        if not received:
            raise LLMError(f"{self._where()} sent an empty answer (no text) with model '{self.model}'. "
                           "Try again, or another model.")

    def complete(self, messages: list[dict[str, str]]) -> str:
        return "".join(self.stream(messages))

    def _where(self) -> str:
        return self.edge.where()

    def _malformed(self, what: str, line: str) -> LLMError:
        return LLMError(f"{self._where()} sent {what}: {self.edge.redact(shorten(line))}. Check that "
                        f"{self.url_setting} points at {self.api}.")

    def _payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        raise NotImplementedError

    def _pieces(self, response: httpx.Response) -> Iterator[str]:
        raise NotImplementedError

    def _refuse(self, response: httpx.Response) -> NoReturn:
        status, detail = response.status_code, self.edge.detail(response)
        lowered = detail.lower()
        if says_context_too_long(detail) or status == 413:
            raise ContextWindowError(f"{self._where()} says the prompt is too long for '{self.model}' ({detail}). "
                                     "Lower the context's token budget or top_k.")
        if status == 404 or ("model" in lowered and ("not found" in lowered or "does not exist" in lowered)):
            raise LLMModelNotFoundError(f"{self._where()} has no model '{self.model}' ({detail}). "
                                        f"{self._model_hint()}")
        self.edge.refusal(response, f"answer with model '{self.model}'", self._key_hint())

    def _key_hint(self) -> str:
        return "It needs credentials."

    def _model_hint(self) -> str:
        return "Check the model name."

    def _line_json(self, line: str) -> dict[str, Any]:
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise self._malformed("a line that is not JSON (a web page or plain text?)", line) from exc
        if not isinstance(data, dict):
            raise self._malformed("a malformed answer", line)
        if data.get("error"):
            message = data["error"].get("message") if isinstance(data["error"], dict) else data["error"]
            raise LLMError(f"{self._where()} stopped with an error: {self.edge.redact(shorten(str(message)))}")
        return data


class OllamaChat(ChatModel):
    service = "Ollama"
    provider = "ollama"
    hint = "Start it with `ollama serve`, or set OLLAMA_HOST."
    url_setting = "OLLAMA_HOST"
    api = "Ollama itself (e.g. http://localhost:11434), not a web page or proxy login"

    def __init__(self, model: str, host: str | None = None, **options: Any):
        url = ollama_base_url(host if host is not None else os.environ.get("OLLAMA_HOST"))
        super().__init__(model, url, f"{url}/api/chat", **options)

    def _payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {"model": self.model, "messages": messages, "stream": True}

    def _pieces(self, response: httpx.Response) -> Iterator[str]:
        texted = False
        for line in response.iter_lines():
            if not line.strip():
                continue
            data = self._line_json(line)
            message = data.get("message")
            piece = message.get("content") if isinstance(message, dict) else None
            if not isinstance(message, dict | None) or not isinstance(piece, str | None):
                raise self._malformed("a piece of the wrong shape", line)
            if piece:
                texted = True
                yield piece
            if data.get("done"):
                return
        if texted:  # no text at all is said by stream() as an empty answer
            raise LLMUnavailableError(f"{self._where()} ended its answer without 'done': it may be cut off. Ask again.")

    def _model_hint(self) -> str:
        return f"Pull it with `ollama pull {self.model}`, or check the name after 'ollama:'."


class OpenAIChat(ChatModel):
    service = "The OpenAI-compatible server"
    provider = "openai"
    hint = "Is the server running? Check OPENAI_BASE_URL."
    url_setting = "OPENAI_BASE_URL"
    api = "an OpenAI-compatible API (its /v1 URL), not a web page or proxy login"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, **options: Any):
        url = openai_base_url(base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL"))
        key = api_key if api_key is not None else configured_key(url, OPENAI)
        super().__init__(model, url, f"{url}/chat/completions", key=key, **options)

    def __repr__(self) -> str:
        key = "set" if self.edge.key else "not set"
        return f"OpenAIChat(model={self.model!r}, base_url={display_url(self.base_url)!r}, api_key={key})"

    def _payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {"model": self.model, "messages": messages, "stream": True}

    def _pieces(self, response: httpx.Response) -> Iterator[str]:
        """Yield the text of each server-sent event; a line that is no event field means it is no event stream."""
        finished = texted = False
        for line in response.iter_lines():
            line = line.strip()
            if not line or line.startswith(":") or line.partition(":")[0].strip() in _SSE_FIELDS:
                continue
            if not line.startswith("data:"):
                raise self._malformed("no event stream (a web page or plain text?)", line)
            data = line[5:].strip()
            if data == "[DONE]":
                return
            piece, done = self._choice(self._line_json(data), data)
            finished, texted = finished or done, texted or bool(piece)
            if piece:
                yield piece
        if texted and not finished:  # no text at all is said by stream() as an empty answer
            raise LLMUnavailableError(f"{self._where()} ended its answer without [DONE]: it may be cut off. "
                                      "Ask again.")

    def _choice(self, event: dict[str, Any], line: str) -> tuple[str, bool]:
        """Return (text, finished) of an event's first choice; an event without choices (usage) has none."""
        choices = event.get("choices")
        if choices is None or choices == []:
            return "", False
        first = choices[0] if isinstance(choices, list) else None
        delta = first.get("delta") if isinstance(first, dict) else None
        piece = delta.get("content") if isinstance(delta, dict) else None
        if not isinstance(first, dict) or not isinstance(delta, dict | None) or not isinstance(piece, str | None):
            raise self._malformed("an event of the wrong shape", line)
        return piece or "", bool(first.get("finish_reason"))

    def _key_hint(self) -> str:
        return openai_key_hint(self.edge.key)

    def _model_hint(self) -> str:
        return f"Check the name after 'openai:'; {display_url(self.base_url)}/models lists the server's models."


def _ollama(model: str, client: httpx.Client | None = None, host: str | None = None, **_: Any) -> ChatModel:
    return OllamaChat(model, host=host, client=client)


def _openai(model: str, client: httpx.Client | None = None, base_url: str | None = None, api_key: str | None = None,
            **_: Any) -> ChatModel:
    return OpenAIChat(model, base_url=base_url, api_key=api_key, client=client)


LLMS: Registry[ChatModel] = Registry("LLM", UnknownLLMError, "ollama:llama3.1")  # the one rule: rag.providers
LLMS.register("ollama", _ollama, ("ollama:<model>",), "a model name", "ollama:llama3.1")
LLMS.register("openai", _openai, ("openai:<model>",), "a model name", "openai:gpt-4o-mini")


def get_llm(spec: str | None, *, client: httpx.Client | None = None, host: str | None = None,
            base_url: str | None = None, api_key: str | None = None) -> ChatModel:
    """Return the chat model for a spec (default $RAG_LLM): "ollama:<model>" or "openai:<model>"."""
    spec = (spec or load().llm).strip()
    if not spec:
        raise UnknownLLMError("No LLM is configured. Give --llm ollama:<model> or openai:<model> (or set RAG_LLM), "
                              "e.g. ollama:llama3.1 with OLLAMA_HOST, or openai:gpt-4o-mini with OPENAI_API_KEY.")
    return LLMS.make(spec, client=client, host=host, base_url=base_url, api_key=api_key)


LLM_SPECS = tuple(form for provider in LLMS.providers.values() for form in provider.forms)
