"""rag.generation.llm: Ollama and OpenAI-compatible chat, streamed, over httpx.MockTransport for every failure."""

from __future__ import annotations

import json

import httpx
import pytest

from rag.errors import (
    ContextWindowError,
    LLMAuthError,
    LLMError,
    LLMModelNotFoundError,
    LLMUnavailableError,
    UnknownLLMError,
)
from rag.generation.llm import OllamaChat, OpenAIChat, get_llm
from rag.http import RetryPolicy

MESSAGES = [{"role": "system", "content": "Sei knapp."}, {"role": "user", "content": "Frage?"}]
NO_WAIT = RetryPolicy(retries=2, sleep=lambda seconds: None)


def ollama_lines(*pieces: str) -> bytes:
    lines = [{"message": {"role": "assistant", "content": p}, "done": False} for p in pieces]
    return "\n".join(json.dumps(x) for x in [*lines, {"message": {"content": ""}, "done": True}]).encode()


def openai_events(*pieces: str) -> bytes:
    events = [f"data: {json.dumps({'choices': [{'delta': {'content': p}}]})}\n\n" for p in pieces]
    return ("".join(events) + "data: [DONE]\n\n").encode()


def client(handler) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler))


def test_ollama_streams_the_answer_from_api_chat():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, json.loads(request.content)))
        return httpx.Response(200, content=ollama_lines("Drei ", "Monate [Quelle 1]."))

    llm = OllamaChat("llama3.1", host="http://ollama.test:11434", client=client(handler))
    assert list(llm.stream(MESSAGES)) == ["Drei ", "Monate [Quelle 1]."]
    assert seen == [("/api/chat", {"model": "llama3.1", "messages": MESSAGES, "stream": True})]
    assert llm.model_id == "ollama:llama3.1"


def test_openai_streams_server_sent_events_and_sends_the_configured_key(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://llm.test/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-geheim-1234")
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), request.headers.get("authorization")))
        return httpx.Response(200, content=openai_events("Die Frist ", "beträgt drei Monate."))

    llm = get_llm("openai:gpt-4o-mini", client=client(handler))
    assert llm.complete(MESSAGES) == "Die Frist beträgt drei Monate."
    assert seen == [("http://llm.test/v1/chat/completions", "Bearer sk-geheim-1234")]
    assert "geheim" not in repr(llm)


def test_the_configured_key_never_goes_to_another_url(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://llm.test/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-geheim-1234")
    headers = []

    def handler(request: httpx.Request) -> httpx.Response:
        headers.append(request.headers.get("authorization"))
        return httpx.Response(401, json={"error": {"message": "missing key"}})

    llm = OpenAIChat("gpt-4o-mini", base_url="http://visitor.test/v1", client=client(handler), retry=NO_WAIT)
    with pytest.raises(LLMAuthError, match="OPENAI_API_KEY goes only to the URL in OPENAI_BASE_URL") as caught:
        llm.complete(MESSAGES)
    assert headers == [None] and "geheim" not in str(caught.value)


def test_a_refused_key_is_never_printed(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"message": "Incorrect API key provided: sk-falsch-9876"}})

    llm = OpenAIChat("gpt-4o-mini", base_url="http://llm.test/v1", api_key="sk-falsch-9876", client=client(handler))
    with pytest.raises(LLMAuthError, match="Check the API key") as caught:
        llm.complete(MESSAGES)
    assert "sk-falsch-9876" not in str(caught.value)


def test_a_server_that_is_down_is_retried_then_said_in_one_line():
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        raise httpx.ConnectError("Connection refused")

    llm = OllamaChat("llama3.1", host="http://ollama.test:11434", client=client(handler), retry=NO_WAIT)
    with pytest.raises(LLMUnavailableError, match=r"Could not reach Ollama at http://ollama.test:11434 .*3 attempts"):
        llm.complete(MESSAGES)
    assert len(calls) == 3


def test_a_5xx_is_retried_and_the_answer_still_comes():
    answers = iter([httpx.Response(503, json={"error": "loading"}), httpx.Response(200, content=ollama_lines("Ja."))])
    llm = OllamaChat("llama3.1", host="http://o.test:1", client=client(lambda r: next(answers)), retry=NO_WAIT)
    assert llm.complete(MESSAGES) == "Ja."


def test_an_unknown_model_says_how_to_get_it():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"error": "model 'lama3' not found, try pulling it first"})

    llm = OllamaChat("lama3", host="http://o.test:1", client=client(handler))
    with pytest.raises(LLMModelNotFoundError, match="ollama pull lama3"):
        llm.complete(MESSAGES)


@pytest.mark.parametrize("status, body", [
    (400, {"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length"}}),
    (400, {"error": "input length exceeds the context length"}),
    (413, {"error": "prompt is too long: 9000 tokens > 8192 maximum"}),
])
def test_a_prompt_too_long_for_the_server_is_a_context_window_error(status, body):
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(status, json=body)

    for llm in (OpenAIChat("gpt-4", base_url="http://llm.test/v1", api_key="", client=client(handler), retry=NO_WAIT),
                OllamaChat("llama3.1", host="http://o.test:1", client=client(handler), retry=NO_WAIT)):
        with pytest.raises(ContextWindowError, match="prompt is too long .* Lower the context's token budget") as err:
            llm.complete(MESSAGES)
        assert "\n" not in str(err.value)
    assert len(calls) == 2  # not retried: the same prompt would not fit again


def test_a_bad_request_that_is_not_about_length_is_no_context_window_error():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": "temperature must be at most 2"}})

    llm = OpenAIChat("gpt-4", base_url="http://llm.test/v1", api_key="", client=client(handler))
    with pytest.raises(LLMError, match="temperature must be at most 2") as caught:
        llm.complete(MESSAGES)
    assert not isinstance(caught.value, ContextWindowError)


def test_a_failure_after_text_arrived_is_not_retried():
    calls = []

    class Broken(httpx.SyncByteStream):
        def __iter__(self):
            yield ollama_lines("Erster Teil. ").split(b"\n")[0] + b"\n"
            raise httpx.ReadError("connection reset")

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(200, stream=Broken())

    llm = OllamaChat("llama3.1", host="http://o.test:1", client=client(handler), retry=NO_WAIT)
    pieces = []
    with pytest.raises(LLMUnavailableError):
        for piece in llm.stream(MESSAGES):
            pieces.append(piece)
    assert pieces == ["Erster Teil. "] and len(calls) == 1


def test_an_error_line_in_the_stream_stops_with_its_message():
    body = json.dumps({"message": {"content": "Hal"}, "done": False}) + "\n" + json.dumps({"error": "out of memory"})
    llm = OllamaChat("llama3.1", host="http://o.test:1", client=client(lambda r: httpx.Response(200, content=body)))
    with pytest.raises(LLMError, match="stopped with an error: out of memory"):
        llm.complete(MESSAGES)


@pytest.mark.parametrize("spec", ["", "claude:opus"])
def test_a_missing_or_malformed_spec_says_the_valid_forms(spec, monkeypatch):
    monkeypatch.delenv("RAG_LLM", raising=False)
    with pytest.raises(UnknownLLMError, match="ollama:"):
        get_llm(spec)


@pytest.mark.parametrize(("spec", "example"), [("ollama:", "ollama:llama3.1"), ("openai", "openai:gpt-4o-mini")])
def test_a_spec_without_its_model_says_it_needs_one(spec, example):
    with pytest.raises(UnknownLLMError, match=f"needs a model name, e.g. {example}"):
        get_llm(spec)


def test_a_malformed_host_is_one_line():
    from rag.errors import InvalidSettingsError

    with pytest.raises(InvalidSettingsError):
        OllamaChat("llama3.1", host="http://[::1")


# ---- replies that are not answers (each one LLMError line that says what came and what to do) -----------


def sse(*events: object) -> bytes:
    return b"".join(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events)


@pytest.mark.parametrize(("body", "message"), [
    (sse({"choices": "x"}, b"[DONE]"), "an event of the wrong shape"),
    (sse({"choices": [None]}, b"[DONE]"), "an event of the wrong shape"),
    (sse({"choices": [{"delta": "Ja"}]}, b"[DONE]"), "an event of the wrong shape"),
    (sse({"choices": [{"delta": {"content": 7}}]}, b"[DONE]"), "an event of the wrong shape"),
    (sse([1, 2], b"[DONE]"), "a malformed answer"),
    (b"<!DOCTYPE html><html><body><form>Login</form></body></html>", "no event stream"),
    (b"Service temporarily moved", "no event stream"),
    (sse(b"[DONE]"), "an empty answer"),
    (b"", "an empty answer"),
    (sse({"choices": []}, {"choices": [{"delta": {}, "finish_reason": "stop"}]}), "an empty answer"),
])
def test_an_openai_reply_that_is_no_answer_is_one_llm_error(body, message):
    answer = client(lambda r: httpx.Response(200, content=body))
    llm = OpenAIChat("m", base_url="http://llm.test/v1", api_key="", client=answer)
    with pytest.raises(LLMError, match=message) as raised:
        llm.complete(MESSAGES)
    text = str(raised.value)
    assert "\n" not in text and "llm.test" in text
    if message != "an empty answer":
        assert "Check that OPENAI_BASE_URL points at" in text


@pytest.mark.parametrize(("body", "message"), [
    (b'{"message": "Ja", "done": false}\n{"done": true}\n', "a piece of the wrong shape"),
    (b'{"message": {"content": ["Ja"]}, "done": false}\n{"done": true}\n', "a piece of the wrong shape"),
    (b"<html><body>Anmelden</body></html>", "not JSON"),
    (b'{"done": true}\n', "an empty answer"),
])
def test_an_ollama_reply_that_is_no_answer_is_one_llm_error(body, message):
    llm = OllamaChat("m", host="http://o.test:1", client=client(lambda r: httpx.Response(200, content=body)))
    with pytest.raises(LLMError, match=message) as raised:
        llm.complete(MESSAGES)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("chat", ["openai", "ollama"])
def test_a_stream_that_ends_without_its_end_mark_is_called_cut_off(chat):
    body = sse({"choices": [{"delta": {"content": "Die Frist "}}]}) if chat == "openai" else (
        json.dumps({"message": {"content": "Die Frist "}, "done": False}).encode() + b"\n")
    handler = lambda r: httpx.Response(200, content=body)  # noqa: E731
    llm = (OpenAIChat("m", base_url="http://l.test/v1", api_key="", client=client(handler)) if chat == "openai"
           else OllamaChat("m", host="http://l.test:1", client=client(handler)))
    pieces = []
    with pytest.raises(LLMUnavailableError, match="may be cut off"):
        for piece in llm.stream(MESSAGES):
            pieces.append(piece)
    assert pieces == ["Die Frist "]


def test_a_finish_reason_without_done_ends_the_answer_properly():
    body = sse({"choices": [{"delta": {"content": "Ja."}, "finish_reason": "stop"}]}, {"choices": [], "usage": {}})
    answer = client(lambda r: httpx.Response(200, content=body))
    llm = OpenAIChat("m", base_url="http://l.test/v1", api_key="", client=answer)
    assert llm.complete(MESSAGES) == "Ja."


def test_a_stream_cut_mid_answer_says_how_much_came_and_that_it_was_not_retried():
    calls = []

    class Cut(httpx.SyncByteStream):
        def __iter__(self):
            yield sse({"choices": [{"delta": {"content": "Die Frist beträgt"}}]})
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(200, stream=Cut())

    llm = OpenAIChat("m", base_url="http://l.test/v1", api_key="", client=client(handler), retry=NO_WAIT)
    with pytest.raises(LLMUnavailableError) as raised:
        llm.complete(MESSAGES)
    assert len(calls) == 1
    text = str(raised.value)
    assert "broke off after 17 characters" in text and "not retried" in text and "attempts" not in text


@pytest.mark.parametrize("failures", [1, 3])
def test_the_attempt_count_in_the_message_is_the_number_of_requests(failures):
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        raise httpx.ConnectError("Connection refused")

    retry = RetryPolicy(retries=failures - 1, sleep=lambda seconds: None)
    llm = OllamaChat("m", host="http://o.test:1", client=client(handler), retry=retry)
    with pytest.raises(LLMUnavailableError) as raised:
        llm.complete(MESSAGES)
    said = "1 attempt)" if failures == 1 else f"{failures} attempts)"
    assert len(calls) == failures and said in str(raised.value)


def test_a_password_in_the_server_url_is_never_in_a_message():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("Connection refused")

    for llm in (OllamaChat("m", host="http://user:pw-geheim@o.test:1", client=client(handler), retry=NO_WAIT),
                OpenAIChat("m", base_url="http://user:pw-geheim@o.test:1", client=client(handler), retry=NO_WAIT)):
        with pytest.raises(LLMUnavailableError) as raised:
            llm.complete(MESSAGES)
        assert "pw-geheim" not in str(raised.value) + repr(llm) and "o.test:1" in str(raised.value)
