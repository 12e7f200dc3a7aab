"""Servers that accept and never answer: each client gives up after its timeout setting and names it.

Loopback servers that take the connection and then stay silent (or fall silent mid-answer); the timeouts
are set short through the environment (RAG_QDRANT_TIMEOUT, RAG_EMBED_TIMEOUT, RAG_LLM_TIMEOUT) and
pytest-timeout guards against a client that would wait for ever. No assertion is about time.
"""

from __future__ import annotations

import pytest

from rag.embeddings.ollama import OllamaEmbedder
from rag.embeddings.openai import OpenAIEmbedder
from rag.errors import EmbedderUnavailableError, InvalidSettingsError, LLMUnavailableError, StoreUnavailableError
from rag.generation.llm import OllamaChat, OpenAIChat
from rag.http import RetryPolicy
from rag.settings import check_environment, timeout
from rag.store.open import open_store
from tests import servers
from tests.conftest import run

pytestmark = pytest.mark.timeout(90)
MESSAGES = [{"role": "user", "content": "Frage?"}]
NO_WAIT = RetryPolicy(retries=1, sleep=lambda seconds: None)


def stalling(answers: int = 0, piece: bytes = b"") -> servers.Loopback:
    """Return a loopback server that answers its first `answers` requests like Qdrant and then falls silent;
    with `piece`, it starts a streamed answer (headers and that piece) and falls silent after it."""
    then = servers.Reply(pieces=(piece,), hang=True) if piece else servers.SILENT
    return servers.scripted(*[servers.qdrant_collections()] * answers, then=then)


@pytest.fixture
def silent():
    with servers.silent() as server:
        yield server


def test_defaults_fit_an_interactive_tool():
    assert (timeout("RAG_QDRANT_TIMEOUT", {}), timeout("RAG_EMBED_TIMEOUT", {}), timeout("RAG_LLM_TIMEOUT", {})) == (
        10.0, 30.0, 60.0)
    assert timeout("RAG_LLM_TIMEOUT", {"RAG_LLM_TIMEOUT": " 2.5 "}) == 2.5


@pytest.mark.parametrize("variable", ["RAG_QDRANT_TIMEOUT", "RAG_EMBED_TIMEOUT", "RAG_LLM_TIMEOUT"])
@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf", "10s"])
def test_a_malformed_timeout_is_refused_at_start_in_one_line(variable, value, monkeypatch, capsys):
    with pytest.raises(InvalidSettingsError, match=f"{variable}='{value}' is not a positive number"):
        check_environment({variable: value})
    monkeypatch.setenv(variable, value)
    code, out, err = run(capsys, "collections", "--store", "/nonexistent/never-opened")
    assert code == 1 and out == "" and err.count("\n") == 1 and variable in err


@pytest.mark.slow
def test_a_silent_qdrant_server_times_out_and_names_the_setting(silent, monkeypatch):
    monkeypatch.setenv("RAG_QDRANT_TIMEOUT", "1")  # qdrant-client takes whole seconds
    with pytest.raises(StoreUnavailableError, match=r"did not answer within 1 s.*raise RAG_QDRANT_TIMEOUT") as error:
        open_store(url=silent.url)
    assert "127.0.0.1" in str(error.value) and "\n" not in str(error.value)


@pytest.mark.slow
def test_qdrant_falling_silent_after_connecting_names_the_setting(monkeypatch):
    server = stalling(answers=1)  # the probe is answered, the next request is not
    monkeypatch.setenv("RAG_QDRANT_TIMEOUT", "1")
    try:
        store = open_store(url=server.url)
        with pytest.raises(StoreUnavailableError, match="did not answer in time.*raise RAG_QDRANT_TIMEOUT"):
            store.collections()
        store.close()
    finally:
        server.close()


@pytest.mark.parametrize("make", [lambda url: OllamaEmbedder("m", host=url, retry=NO_WAIT),
                                  lambda url: OpenAIEmbedder("m", base_url=url, api_key="", retry=NO_WAIT)])
def test_a_silent_embedding_server_times_out_and_names_the_setting(make, silent, monkeypatch):
    monkeypatch.setenv("RAG_EMBED_TIMEOUT", "0.3")
    embedder = make(silent.url)
    with pytest.raises(EmbedderUnavailableError, match=r"did not answer within 0.3 s.*raise RAG_EMBED_TIMEOUT"):
        embedder.embed_documents(["Kündigungsfrist"])
    assert len(silent.requests) == 1  # a read timeout is not retried


@pytest.mark.parametrize("make", [lambda url: OllamaChat("m", host=url, retry=NO_WAIT),
                                  lambda url: OpenAIChat("m", base_url=url, api_key="", retry=NO_WAIT)])
def test_a_silent_llm_times_out_and_names_the_setting(make, silent, monkeypatch):
    monkeypatch.setenv("RAG_LLM_TIMEOUT", "0.3")
    with pytest.raises(LLMUnavailableError, match=r"did not answer within 0.3 s.*raise RAG_LLM_TIMEOUT"):
        make(silent.url).complete(MESSAGES)


def test_an_llm_falling_silent_mid_answer_says_how_much_came(monkeypatch):
    server = stalling(piece=b'data: {"choices": [{"delta": {"content": "Die Frist"}}]}\n\n')
    monkeypatch.setenv("RAG_LLM_TIMEOUT", "0.3")
    pieces = []
    try:
        with pytest.raises(LLMUnavailableError, match=r"stopped sending for 0.3 s after 9 characters.*RAG_LLM_TIMEOUT"):
            for piece in OpenAIChat("m", base_url=server.url, api_key="", retry=NO_WAIT).stream(MESSAGES):
                pieces.append(piece)
    finally:
        server.close()
    assert pieces == ["Die Frist"] and len(server.requests) == 1


def test_the_cli_gives_up_on_a_silent_embedder_with_the_setting_to_raise(silent, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("OLLAMA_HOST", silent.url)
    monkeypatch.setenv("RAG_EMBED_TIMEOUT", "0.3")
    code, out, err = run(capsys, "search", "Frist", "--embedder", "ollama:m", "--store", str(tmp_path / "q"))
    assert code == 1 and out == "" and err.count("\n") == 1 and "raise RAG_EMBED_TIMEOUT" in err
