"""Chat models over HTTP, streamed: `ollama:<model>` (POST /api/chat on OLLAMA_HOST) and `openai:<model>`
(POST /v1/chat/completions on OPENAI_BASE_URL, any OpenAI-compatible server).

As for the embedders (rag.embeddings.http): httpx with timeouts; a request is retried (429, 5xx, connection
refused) only before its answer began; OPENAI_API_KEY goes only to the URL configured beside it and never
appears in a message; every failure is one LLMError leaf whose message says what to do.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import httpx

from rag.embeddings.http import RetryPolicy, server_message, shorten
from rag.errors import LLMAuthError, LLMError, LLMModelNotFoundError, LLMUnavailableError, UnknownLLMError
from rag.settings import OPENAI, configured_key, ollama_base_url, openai_base_url, openai_key_hint, redact_key

LLM_SPECS = ("ollama:<model>", "openai:<model>")
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 300.0  # between two streamed pieces: a local model may think for minutes before its first word


class ChatModel:
    """Base of the providers: send messages, yield the answer's text as it streams in."""

    service = "The chat server"
    hint = "Check that the server is running and its URL is right."

    def __init__(self, model: str, base_url: str, endpoint: str, *, client: httpx.Client | None = None,
                 retry: RetryPolicy | None = None, read_timeout: float = READ_TIMEOUT):
        self.model, self.base_url, self.endpoint = model, base_url, endpoint
        self.timeout = httpx.Timeout(read_timeout, connect=CONNECT_TIMEOUT)
        self.retry = retry or RetryPolicy()
        self.client = client or httpx.Client(timeout=self.timeout)

    model_id = property(lambda self: f"{self.provider}:{self.model}")
    provider = ""

    def stream(self, messages: list[dict[str, str]]) -> Iterator[str]:
        """Yield the pieces of the answer to messages; raise an LLMError leaf when the server fails."""
        attempts = self.retry.retries + 1
        started = False  # once text has come, a failure is reported, never retried (it would repeat the text)
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                with self.client.stream("POST", self.endpoint, json=self._payload(messages), headers=self._headers(),
                                        timeout=self.timeout) as response:
                    if (response.status_code == 429 or response.status_code >= 500) and not last:
                        self.retry.sleep(self.retry.wait(attempt, response))
                        continue
                    if not response.is_success:
                        response.read()
                        self._refuse(response)
                    for piece in self._pieces(response):
                        started = True
                        yield piece
                    return
            except httpx.ReadTimeout as exc:
                raise LLMUnavailableError(f"{self._where()} sent nothing for {self.timeout.read:g} s. The model may "
                                          "still be loading: try again.") from exc
            except httpx.TransportError as exc:
                if last or started:
                    reason = shorten(str(exc) or type(exc).__name__, 120)
                    raise LLMUnavailableError(f"Could not reach {self._where()} ({reason}; {attempts} attempts). "
                                              f"{self.hint}") from exc
                self.retry.sleep(self.retry.wait(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def complete(self, messages: list[dict[str, str]]) -> str:
        return "".join(self.stream(messages))

    def _where(self) -> str:
        return f"{self.service} at {self.base_url}"

    def _headers(self) -> dict[str, str]:
        return {}

    def _redact(self, text: str) -> str:
        return text

    def _payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        raise NotImplementedError

    def _pieces(self, response: httpx.Response) -> Iterator[str]:
        raise NotImplementedError

    def _refuse(self, response: httpx.Response) -> None:
        status, detail = response.status_code, self._redact(server_message(response))
        lowered = detail.lower()
        if status in (401, 403):
            raise LLMAuthError(f"{self._where()} refused the request (HTTP {status}: {detail}). {self._key_hint()}")
        if status == 404 or ("model" in lowered and ("not found" in lowered or "does not exist" in lowered)):
            raise LLMModelNotFoundError(f"{self._where()} has no model '{self.model}' ({detail}). "
                                        f"{self._model_hint()}")
        if "context" in lowered and ("length" in lowered or "window" in lowered or "too long" in lowered):
            raise LLMError(f"{self._where()} says the prompt is too long for '{self.model}' ({detail}). Lower the "
                           "context's token budget or top_k.")
        if status == 429 or status >= 500:
            raise LLMUnavailableError(f"{self._where()} kept failing with HTTP {status} ({detail}).")
        raise LLMError(f"{self._where()} refused to answer with model '{self.model}' (HTTP {status}: {detail}).")

    def _key_hint(self) -> str:
        return "It needs credentials."

    def _model_hint(self) -> str:
        return "Check the model name."

    def _line_json(self, line: str) -> dict[str, Any]:
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise LLMError(f"{self._where()} sent a line that is not JSON: {self._redact(shorten(line))}") from exc
        if not isinstance(data, dict):
            raise LLMError(f"{self._where()} sent a malformed answer: {self._redact(shorten(line))}")
        if data.get("error"):
            message = data["error"].get("message") if isinstance(data["error"], dict) else data["error"]
            raise LLMError(f"{self._where()} stopped with an error: {self._redact(shorten(str(message)))}")
        return data


class OllamaChat(ChatModel):
    service = "Ollama"
    provider = "ollama"
    hint = "Start it with `ollama serve`, or set OLLAMA_HOST."

    def __init__(self, model: str, host: str | None = None, **options: Any):
        url = ollama_base_url(host if host is not None else os.environ.get("OLLAMA_HOST"))
        super().__init__(model, url, f"{url}/api/chat", **options)

    def _payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {"model": self.model, "messages": messages, "stream": True}

    def _pieces(self, response: httpx.Response) -> Iterator[str]:
        for line in response.iter_lines():
            if not line.strip():
                continue
            data = self._line_json(line)
            piece = (data.get("message") or {}).get("content")
            if piece:
                yield piece
            if data.get("done"):
                return

    def _model_hint(self) -> str:
        return f"Pull it with `ollama pull {self.model}`, or check the name after 'ollama:'."


class OpenAIChat(ChatModel):
    service = "The OpenAI-compatible server"
    provider = "openai"
    hint = "Is the server running? Check OPENAI_BASE_URL."

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, **options: Any):
        url = openai_base_url(base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL"))
        super().__init__(model, url, f"{url}/chat/completions", **options)
        self._api_key = (api_key if api_key is not None else configured_key(url, OPENAI)).strip()

    def __repr__(self) -> str:
        key = "set" if self._api_key else "not set"
        return f"OpenAIChat(model={self.model!r}, base_url={self.base_url!r}, api_key={key})"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _redact(self, text: str) -> str:
        return redact_key(text, self._api_key)

    def _payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {"model": self.model, "messages": messages, "stream": True}

    def _pieces(self, response: httpx.Response) -> Iterator[str]:
        for line in response.iter_lines():
            line = line.strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return
            choices = self._line_json(data).get("choices") or [{}]
            piece = (choices[0].get("delta") or {}).get("content")
            if piece:
                yield piece

    def _key_hint(self) -> str:
        return openai_key_hint(self._api_key)

    def _model_hint(self) -> str:
        return f"Check the name after 'openai:'; {self.base_url}/models lists the server's models."


def get_llm(spec: str | None, *, client: httpx.Client | None = None, host: str | None = None,
            base_url: str | None = None, api_key: str | None = None) -> ChatModel:
    """Return the chat model for a spec (default $RAG_LLM): "ollama:<model>" or "openai:<model>"."""
    spec = (spec or os.environ.get("RAG_LLM", "")).strip()
    provider, _, model = spec.partition(":")
    if not spec:
        raise UnknownLLMError("No LLM is configured. Give --llm ollama:<model> or openai:<model> (or set RAG_LLM), "
                              "e.g. ollama:llama3.1 with OLLAMA_HOST, or openai:gpt-4o-mini with OPENAI_API_KEY.")
    if provider not in ("ollama", "openai") or not model.strip():
        raise UnknownLLMError(f"Unknown LLM '{spec}'. Use one of: {', '.join(LLM_SPECS)}, e.g. ollama:llama3.1.")
    if provider == "ollama":
        return OllamaChat(model.strip(), host=host, client=client)
    return OpenAIChat(model.strip(), base_url=base_url, api_key=api_key, client=client)
