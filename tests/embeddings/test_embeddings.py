"""Embedders without a model: the registry and the HTTP providers against MockTransport (fake: test_embeddings_fake)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import httpx
import numpy as np
import pytest

from rag.chunking import tokens
from rag.embeddings import (
    DEFAULT_EMBEDDER,
    EMBEDDER_SPECS,
    E5Embedder,
    Embedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    RetryPolicy,
    get_embedder,
)
from rag.embeddings.ollama import ollama_base_url
from rag.embeddings.openai import openai_base_url
from rag.errors import (
    EmbedderAuthError,
    EmbedderUnavailableError,
    EmbeddingError,
    ModelNotFoundError,
    UnknownEmbedderError,
)

Respond = Callable[[httpx.Request, int], httpx.Response]


class Server:
    """An httpx.MockTransport that answers with respond(request, attempt) and records every request."""

    def __init__(self, respond: Respond):
        self.respond = respond
        self.requests: list[httpx.Request] = []
        self.client = httpx.Client(transport=httpx.MockTransport(self._handle))

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.respond(request, len(self.requests))

    def inputs(self) -> list[list[str]]:
        return [json.loads(request.content)["input"] for request in self.requests]


def vectors(texts: list[str], dimension: int) -> list[list[float]]:
    """Return one vector per text whose first number is the text's marker ("t17" -> 17.0, else 1.0)."""
    markers = [text[1:] if text[:1] == "t" and text[1:].isdigit() else "1" for text in texts]
    return [[float(marker)] + [0.0] * (dimension - 1) for marker in markers]


def ollama_ok(dimension: int = 1024) -> Respond:
    def respond(request: httpx.Request, attempt: int) -> httpx.Response:
        return httpx.Response(200, json={"embeddings": vectors(json.loads(request.content)["input"], dimension)})

    return respond


def openai_ok(dimension: int = 1536, reverse: bool = False) -> Respond:
    def respond(request: httpx.Request, attempt: int) -> httpx.Response:
        rows = vectors(json.loads(request.content)["input"], dimension)
        data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
        return httpx.Response(200, json={"data": data[::-1] if reverse else data, "model": "m"})

    return respond


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def retry(sleeps: list[float]) -> RetryPolicy:
    return RetryPolicy(sleep=sleeps.append)


def ollama(server: Server, retry: RetryPolicy, model: str = "mxbai-embed-large") -> OllamaEmbedder:
    return OllamaEmbedder(model, host="localhost:11434", client=server.client, retry=retry)


# --- registry ---------------------------------------------------------------------------------------


def test_specs_give_the_documented_model_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_EMBEDDER", raising=False)
    assert DEFAULT_EMBEDDER == "local" and set(EMBEDDER_SPECS) == {"local", "ollama", "openai", "fake"}
    assert get_embedder("local").model_id == "local:multilingual-e5-small-int8"  # onnxruntime: a requirement
    assert get_embedder("local:multilingual-e5-small").model_id == "local:multilingual-e5-small"
    assert get_embedder("local:all-MiniLM-L6-v2").model_id == "local:all-MiniLM-L6-v2"
    assert get_embedder("ollama:mxbai-embed-large").model_id == "ollama:mxbai-embed-large"
    assert get_embedder("openai:text-embedding-3-small").model_id == "openai:text-embedding-3-small"
    assert get_embedder("fake").model_id == "fake:64"
    assert get_embedder("fake:16").dimension == 16
    # isinstance on a runtime Protocol reads every property on Python 3.11: only where that is free
    for spec in ("ollama:mxbai-embed-large", "openai:text-embedding-3-large", "fake"):
        assert isinstance(get_embedder(spec), Embedder)


def test_default_is_local_unless_rag_embedder_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_EMBEDDER", raising=False)
    assert isinstance(get_embedder(None), E5Embedder)
    assert isinstance(get_embedder(""), E5Embedder)
    monkeypatch.setenv("RAG_EMBEDDER", "fake:8")
    assert get_embedder().model_id == "fake:8"
    assert get_embedder("fake:4").model_id == "fake:4"


@pytest.mark.parametrize("spec", ["bert", "ollama", "openai:", "fake:zero", "fake:0", "qdrant:x"])
def test_bad_specs_say_what_is_valid(spec: str) -> None:
    with pytest.raises(UnknownEmbedderError) as caught:
        get_embedder(spec)
    assert any(word in str(caught.value) for word in ("ollama:<model>", "e.g."))


def test_local_path_that_does_not_exist_is_a_clear_error(tmp_path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelNotFoundError, match="No local model folder") as caught:
        get_embedder(f"local:{missing}")
    assert str(missing) in str(caught.value)


def test_importing_rag_embeddings_does_not_import_torch() -> None:
    code = "import sys, rag.embeddings; print('torch' in sys.modules or 'sentence_transformers' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# --- Ollama -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "url"),
    [
        (None, "http://localhost:11434"),
        ("", "http://localhost:11434"),
        ("localhost:11434", "http://localhost:11434"),
        ("gpu-box", "http://gpu-box:11434"),
        ("http://gpu-box:8080/", "http://gpu-box:8080"),
        ("https://ollama.example.org", "https://ollama.example.org"),
    ],
)
def test_ollama_host_rule(host: str | None, url: str) -> None:
    assert ollama_base_url(host) == url


def test_ollama_sends_model_and_input_and_reads_embeddings(retry: RetryPolicy) -> None:
    server = Server(ollama_ok())
    embedder = ollama(server, retry)
    matrix = embedder.embed_documents(["t1", "t2"])
    assert matrix.shape == (2, 1024) and matrix.dtype == np.float32
    assert str(server.requests[0].url) == "http://localhost:11434/api/embed"
    assert json.loads(server.requests[0].content) == {"model": "mxbai-embed-large", "input": ["t1", "t2"]}
    assert embedder.max_input_tokens == 512 and not embedder.tokens_exact
    assert embedder.count_tokens("Der Vertrag wurde gekündigt.") == tokens.count("Der Vertrag wurde gekündigt.")


def test_batching_splits_150_texts_into_64_64_22_in_order(retry: RetryPolicy) -> None:
    server = Server(ollama_ok(4))
    texts = [f"t{i}" for i in range(150)]
    matrix = ollama(server, retry, model="my-embedder").embed_documents(texts)
    assert [len(batch) for batch in server.inputs()] == [64, 64, 22]
    assert sum(server.inputs(), []) == texts
    assert matrix[:, 0].tolist() == list(range(150))


def test_empty_list_makes_no_request(retry: RetryPolicy) -> None:
    server = Server(ollama_ok())
    assert ollama(server, retry).embed_documents([]).shape == (0, 1024)
    assert server.requests == []


def test_unknown_model_dimension_is_probed_once(retry: RetryPolicy) -> None:
    server = Server(ollama_ok(768))
    embedder = ollama(server, retry, model="granite-embedding")
    assert embedder.dimension == 768 and embedder.dimension == 768
    assert len(server.requests) == 1
    assert embedder.max_input_tokens == 512 and "unknown" in embedder.token_note


def test_connection_refused_names_the_url_and_the_fix(retry: RetryPolicy, sleeps: list[float]) -> None:
    def refuse(request: httpx.Request, attempt: int) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    server = Server(refuse)
    with pytest.raises(EmbedderUnavailableError) as caught:
        ollama(server, retry).embed_documents(["a"])
    assert "http://localhost:11434" in str(caught.value) and "ollama serve" in str(caught.value)
    assert len(server.requests) == 4 and sleeps == [0.5, 1.0, 2.0]


def test_read_timeout_is_reported_without_retrying(retry: RetryPolicy) -> None:
    def slow(request: httpx.Request, attempt: int) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    server = Server(slow)
    with pytest.raises(EmbedderUnavailableError, match="did not answer within 30 s.*raise RAG_EMBED_TIMEOUT"):
        ollama(server, retry).embed_documents(["a"])
    assert len(server.requests) == 1


def test_missing_model_says_how_to_pull_it(retry: RetryPolicy) -> None:
    server = Server(lambda r, n: httpx.Response(404, json={"error": 'model "x" not found, try pulling it first'}))
    with pytest.raises(ModelNotFoundError) as caught:
        ollama(server, retry, model="x").embed_documents(["a"])
    assert str(caught.value) == "Ollama at http://localhost:11434 has no model 'x'. Run `ollama pull x`."


def test_rate_limit_then_success_honours_retry_after(retry: RetryPolicy, sleeps: list[float]) -> None:
    def respond(request: httpx.Request, attempt: int) -> httpx.Response:
        if attempt == 1:
            return httpx.Response(429, headers={"Retry-After": "2"}, json={"error": "slow down"})
        return ollama_ok()(request, attempt)

    server = Server(respond)
    assert ollama(server, retry).embed_documents(["a"]).shape == (1, 1024)
    assert len(server.requests) == 2 and sleeps == [2.0]


def test_retry_after_is_capped(sleeps: list[float]) -> None:
    policy = RetryPolicy(retries=1, max_wait=30.0, sleep=sleeps.append)
    server = Server(lambda r, n: httpx.Response(503, headers={"Retry-After": "3600"}, text="busy"))
    with pytest.raises(EmbedderUnavailableError, match="HTTP 503"):
        ollama(server, policy).embed_documents(["a"])
    assert sleeps == [30.0]


def test_server_error_forever_gives_up_after_the_retries(retry: RetryPolicy, sleeps: list[float]) -> None:
    server = Server(lambda r, n: httpx.Response(500, json={"error": "llama runner process has terminated"}))
    with pytest.raises(EmbedderUnavailableError, match="kept failing with HTTP 500.*llama runner"):
        ollama(server, retry).embed_documents(["a"])
    assert len(server.requests) == 4 and len(sleeps) == 3


def test_wrong_dimension_is_an_error(retry: RetryPolicy) -> None:
    server = Server(ollama_ok(768))
    with pytest.raises(EmbeddingError, match="768 numbers.*1024 were expected"):
        ollama(server, retry).embed_documents(["a"])


def test_dimension_change_between_batches_is_an_error(retry: RetryPolicy) -> None:
    server = Server(lambda r, n: ollama_ok(8 if n == 1 else 9)(r, n))
    embedder = OllamaEmbedder("custom", host="h", client=server.client, retry=retry, batch_size=1)
    with pytest.raises(EmbeddingError, match="9 numbers.*8 were expected"):
        embedder.embed_documents(["a", "b"])


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        (b"<html>502 proxy page</html>", "<html>502 proxy page</html>"),
        (b'{"embedding": [0.1, 0.2]}', "no 'embeddings'"),
        (b'{"embeddings": [[0.1], [0.2]]}', "2 vectors for 1 texts"),
        (b'{"embeddings": [["a", "b"]]}', "other than numbers"),
        (b'{"embeddings": [[0.1, 0.2], [0.3]]}', "one common length"),
    ],
)
def test_malformed_answers_show_what_was_received(retry: RetryPolicy, body: bytes, shown: str) -> None:
    server = Server(lambda r, n: httpx.Response(200, content=body))
    texts = ["a", "b"] if b"[0.3]" in body else ["a"]
    with pytest.raises(EmbeddingError, match="Ollama at http://localhost:11434") as caught:
        ollama(server, retry, model="custom").embed_documents(texts)
    assert shown in str(caught.value) and len(str(caught.value)) < 400


def test_model_that_cannot_embed(retry: RetryPolicy) -> None:
    server = Server(lambda r, n: httpx.Response(400, json={"error": '"llama3" does not support embeddings'}))
    with pytest.raises(EmbeddingError, match="cannot make embeddings"):
        ollama(server, retry, model="llama3").embed_documents(["a"])


# --- OpenAI-compatible ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "url"),
    [
        (None, "https://api.openai.com/v1"),
        ("https://api.openai.com/v1/", "https://api.openai.com/v1"),
        ("http://localhost:8000", "http://localhost:8000/v1"),
        ("localhost:1234/", "http://localhost:1234/v1"),
        ("http://gpu:8080/v1", "http://gpu:8080/v1"),
        ("https://host/api/openai/v1", "https://host/api/openai/v1"),
    ],
)
def test_openai_base_url_rule(value: str | None, url: str) -> None:
    assert openai_base_url(value) == url


def openai(server: Server, retry: RetryPolicy, model: str = "text-embedding-3-small", key: str = "") -> OpenAIEmbedder:
    return OpenAIEmbedder(model, "http://llm:8000", key, client=server.client, retry=retry)


def test_openai_sends_bearer_key_and_sorts_by_index(retry: RetryPolicy) -> None:
    server = Server(openai_ok(reverse=True))
    embedder = openai(server, retry, key="sk-test-123456")
    matrix = embedder.embed_documents(["t1", "t2", "t3"])
    request = server.requests[0]
    assert str(request.url) == "http://llm:8000/v1/embeddings"
    assert request.headers["authorization"] == "Bearer sk-test-123456"
    assert json.loads(request.content) == {"model": "text-embedding-3-small", "input": ["t1", "t2", "t3"]}
    assert matrix[:, 0].tolist() == [1.0, 2.0, 3.0]
    assert embedder.dimension == 1536 and len(server.requests) == 1
    assert embedder.max_input_tokens == 8191 and embedder.tokens_exact


def test_openai_without_key_sends_no_authorization(retry: RetryPolicy) -> None:
    server = Server(openai_ok(384))
    embedder = openai(server, retry, model="BAAI/bge-small-en-v1.5")
    assert embedder.dimension == 384
    assert "authorization" not in server.requests[0].headers
    assert not embedder.tokens_exact and embedder.max_input_tokens == 512


@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_is_never_shown(retry: RetryPolicy, status: int) -> None:
    key = "sk-proj-SECRET-abcdef0123456789"
    message = f"Incorrect API key provided: {key}. You can find your API key at https://platform.openai.com."
    server = Server(lambda r, n: httpx.Response(status, json={"error": {"message": message, "code": "invalid"}}))
    embedder = openai(server, retry, key=key)
    with pytest.raises(EmbedderAuthError, match=f"HTTP {status}") as caught:
        embedder.embed_documents(["a"])
    for shown in (str(caught.value), repr(caught.value), repr(embedder)):
        assert key not in shown and "SECRET" not in shown
    assert len(server.requests) == 1


def test_missing_key_is_named(retry: RetryPolicy) -> None:
    server = Server(lambda r, n: httpx.Response(401, json={"error": {"message": "no key"}}))
    with pytest.raises(EmbedderAuthError, match="set OPENAI_API_KEY"):
        openai(server, retry).embed_documents(["a"])


def test_openai_unknown_model(retry: RetryPolicy) -> None:
    error = {"message": "The model `nope` does not exist", "code": "model_not_found"}
    server = Server(lambda r, n: httpx.Response(404, json={"error": error}))
    with pytest.raises(ModelNotFoundError, match="no embedding model 'nope'"):
        openai(server, retry, model="nope").embed_documents(["a"])


def test_openai_wrong_path_is_not_a_missing_model(retry: RetryPolicy) -> None:
    server = Server(lambda r, n: httpx.Response(404, text="Not Found"))
    with pytest.raises(EmbeddingError, match="no /embeddings endpoint") as caught:
        openai(server, retry).embed_documents(["a"])
    assert not isinstance(caught.value, ModelNotFoundError)


def test_openai_bad_indexes_are_malformed(retry: RetryPolicy) -> None:
    data = [{"index": 0, "embedding": [0.1]}, {"index": 0, "embedding": [0.2]}]
    server = Server(lambda r, n: httpx.Response(200, json={"data": data}))
    with pytest.raises(EmbeddingError, match="indexes"):
        openai(server, retry, model="m").embed_documents(["a", "b"])


def test_get_embedder_passes_client_and_options(retry: RetryPolicy) -> None:
    server = Server(ollama_ok(3))
    embedder = get_embedder("ollama:tiny", client=server.client, retry=retry, batch_size=2, timeout=5)
    assert embedder.embed_documents(["a", "b", "c"]).shape == (3, 3)
    assert [len(batch) for batch in server.inputs()] == [2, 1]


def test_http_embedders_send_their_models_prompts() -> None:
    sent: list[list[str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body["input"])
        size = {"mxbai-embed-large": 1024, "nomic-embed-text:v1.5": 768, "bge-m3": 1024}.get(body["model"], 2)
        return httpx.Response(200, json={"embeddings": [[0.1] * size] * len(body["input"])})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    mxbai = OllamaEmbedder("mxbai-embed-large", client=client)
    mxbai.embed_query(["Frage"]), mxbai.embed_documents(["Text"])
    nomic = OllamaEmbedder("nomic-embed-text:v1.5", client=client)
    nomic.embed_query(["Frage"]), nomic.embed_documents(["Text"])
    own = OllamaEmbedder("bge-m3", client=client, query_prompt="Q: ", document_prompt="D: ")
    own.embed_query(["Frage"]), own.embed_documents(["Text"])
    assert sent == [["Represent this sentence for searching relevant passages: Frage"], ["Text"],
                    ["search_query: Frage"], ["search_document: Text"], ["Q: Frage"], ["D: Text"]]
    assert OpenAIEmbedder("text-embedding-3-small", client=client).query_prompt == ""
    assert OpenAIEmbedder("intfloat/multilingual-e5-large", client=client).document_prompt == "passage: "


def test_a_sentence_transformers_folder_brings_its_own_prompts(tmp_path) -> None:
    from rag.embeddings.local import folder_prompts

    (tmp_path / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "query: ", "passage": "passage: "}}), encoding="utf-8")
    assert (folder_prompts(tmp_path).query, folder_prompts(tmp_path).document) == ("query: ", "passage: ")
    assert folder_prompts(tmp_path / "missing").query == ""
