"""The rule "a key goes only to its configured host", fuzzed over server URLs for every client that sends one.

For each URL: either RAG Lab refuses it (InvalidSettingsError, nothing sent), or every request that carries
the configured key goes to the configured host and port, as the real client connects: qdrant-client (its
own URL handling, then httpx) for Qdrant, httpx for the embedders and the LLM. The clients run for real;
only their transport is an httpx.MockTransport that records where each request went and with which key.
End to end, a recording loopback server checks the backslash case through the CLI and the real clients.
"""

from __future__ import annotations

import warnings

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qdrant_client import QdrantClient

from rag.embeddings.ollama import OllamaEmbedder
from rag.embeddings.openai import OpenAIEmbedder
from rag.errors import InvalidSettingsError
from rag.generation.llm import OpenAIChat
from rag.store import open as store_open
from rag.urls import endpoint
from tests import servers
from tests.conftest import run

KEY = "K-configured-0815"
# configured URL -> the (scheme, host, port) the key belongs to
CONFIGURED = {
    "http://qdrant.test:6333": ("http", "qdrant.test", 6333),
    "http://Qdrant.Test:6333/": ("http", "qdrant.test", 6333),
    "http://[::1]:6333": ("http", "::1", 6333),
    "https://user:pw@qdrant.test": ("https", "qdrant.test", None),  # the client's default: 6333 Qdrant, 443 httpx
}
SCHEME_PORTS = {"http": 80, "https": 443}
SCHEMES = ["http://", "HTTP://", "https://", "hTtP://", "http:/", "http:\\\\", "//", ""]
USERINFO = ["", "u@", "u:p@", "evil.test@", "qdrant.test:6333@", "a@b@", "u%40x:p@", "qdrant.test:6333\\@",
            "qdrant.test\\@", "[::1]@"]
HOSTS = ["qdrant.test", "QDRANT.test", "qdrant.test.", "evil.test", "127.0.0.1", "[::1]", "[::ffff:127.0.0.1]",
         "qdrant%2etest", "qdrant.test\\", "qdrant.test%5C", "xn--qdrnt-0ra.test", "qdränt.test", "[::1", "::1"]
PORTS = ["", ":6333", ":06333", ":80", ":443", ":6334", ":65536", ":", ":0", ": 6333", ":6333\t"]
PATHS = ["", "/", "/v1", "//evil.test", "//evil.test:1/x", "/x@evil.test:1", "/../", "/%2e%2e/", "/a/./b", "/\\evil",
         "/v1\\@evil.test"]
TAILS = ["", "?a=@evil.test", "#@evil.test", "?", "#", "\\@evil.test", "@evil.test", "\t", "\n", " ", "%00", "\r\n"]
TRICKY = "\\@/:%?#[]. \t\nAaE9-_~"

FIXED = [
    "http://qdrant.test:6333\\@evil.test:6333", "http://evil.test\\@qdrant.test:6333",
    "http://evil.test:6333\\@qdrant.test:6333", "http://qdrant.test:6333//evil.test:6333",
    "http://evil.test@qdrant.test:6333", "http://qdrant.test:6333@evil.test", "http://qdrant.test:6333#@evil.test",
    "http://qdrant.test:6333?@evil.test", "http://qdrant.test:6333/@evil.test", "http://qdrant.test%2e:6333",
    "http://QDRANT.TEST.:6333", "http://qdrant.test:6333\t", "http://qdrant.test\t:6333", "http://qdrant.test\n:6333",
    "http://[::1]:6333", "http://[::1]\\@evil.test", "http://a@b@evil.test:6333", "http://qdrant.test:6333;@evil.test",
    "http://qdrant.test:6333/x/../..//evil.test", "http://qdrant.test:80", "http://qdrant.test", "https://qdrant.test",
    "http://qdrant.test:6333/", "http://qdrant.test:06333", "http://[::ffff:7f00:1]:6333",
]


def urls() -> st.SearchStrategy[str]:
    """Server URLs built from tricky pieces, with now and then a tricky character put in anywhere."""
    pieces = st.tuples(*(st.sampled_from(p) for p in (SCHEMES, USERINFO, HOSTS, PORTS, PATHS, TAILS)))
    inserted = st.tuples(st.integers(0, 80), st.text(TRICKY, min_size=0, max_size=3))
    return st.builds(lambda p, i: "".join(p)[: i[0]] + i[1] + "".join(p)[i[0]:], pieces, inserted)


class Seen:
    """A MockTransport that records (host, port, key sent) of every request and answers like the server."""

    def __init__(self, answer: dict | bytes):
        self.requests: list[tuple[str, str, int, str | None]] = []  # scheme, host, port, key
        self.answer = answer

    def handler(self, request: httpx.Request) -> httpx.Response:
        key = request.headers.get("api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        url = request.url
        self.requests.append((url.scheme, url.host, url.port or SCHEME_PORTS[url.scheme], key or None))
        if isinstance(self.answer, bytes):
            return httpx.Response(200, content=self.answer)
        return httpx.Response(200, json=self.answer)

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self.handler))


def keyed_requests_stay_home(seen: Seen, configured: str, default_port: int | None = None) -> None:
    """Assert that every request with the key went to the configured scheme, host and port (default_port: the
    client's port for a URL without one; else the scheme's)."""
    scheme, host, port = CONFIGURED[configured]
    home = (scheme, host, port or default_port or SCHEME_PORTS[scheme])
    for *target, key in seen.requests:
        if key == KEY:
            assert tuple(target) == home, (configured, seen.requests)


@pytest.fixture
def env(monkeypatch):
    def configure(url_variable: str, key_variable: str, url: str) -> None:
        monkeypatch.setenv(url_variable, url)
        monkeypatch.setenv(key_variable, KEY)
    return configure


def check_qdrant(url: str, configured: str, monkeypatch) -> None:
    seen = Seen({"result": {"collections": []}, "status": "ok", "time": 0})
    real = QdrantClient

    def with_transport(**options):
        return real(**options) if "path" in options or "location" in options else real(
            **options, transport=httpx.MockTransport(seen.handler))

    monkeypatch.setattr(store_open, "QdrantClient", with_transport)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Api key is used with an insecure connection"
            store = store_open.open_store(url=url)
    except InvalidSettingsError:
        assert seen.requests == []
        return
    store.close()
    keyed_requests_stay_home(seen, configured, 6333)


def check_openai_embedder(url: str, configured: str) -> None:
    seen = Seen({"data": [{"index": 0, "embedding": [0.6, 0.8]}]})
    try:
        OpenAIEmbedder("m", base_url=url, client=seen.client()).embed_documents(["a"])
    except InvalidSettingsError:
        assert seen.requests == []
        return
    keyed_requests_stay_home(seen, configured)


def check_llm(url: str, configured: str) -> None:
    answer = b'data: {"choices": [{"delta": {"content": "Ja."}}]}\n\ndata: [DONE]\n\n'
    seen = Seen(answer)
    try:
        OpenAIChat("m", base_url=url, client=seen.client()).complete([{"role": "user", "content": "?"}])
    except InvalidSettingsError:
        assert seen.requests == []
        return
    keyed_requests_stay_home(seen, configured)


def check_ollama(url: str) -> None:
    """Ollama gets no key, but user:password in its URL is one: requests go where rag.urls says the URL points."""
    seen = Seen({"embeddings": [[0.6, 0.8]]})
    try:
        embedder = OllamaEmbedder("m", host=url, client=seen.client())
        embedder.embed_documents(["a"])
    except InvalidSettingsError:
        assert seen.requests == []
        return
    assert {tuple(r[:3]) for r in seen.requests} == {endpoint(embedder.base_url)[:3]}


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("configured", list(CONFIGURED))
@FUZZ
@given(url=urls())
def test_fuzzed_qdrant_urls_never_carry_the_key_elsewhere(configured, url, env, monkeypatch):
    env("QDRANT_URL", "QDRANT_API_KEY", configured)
    check_qdrant(url, configured, monkeypatch)


@pytest.mark.parametrize("configured", list(CONFIGURED))
@FUZZ
@given(url=urls())
def test_fuzzed_openai_urls_never_carry_the_key_elsewhere(configured, url, env):
    env("OPENAI_BASE_URL", "OPENAI_API_KEY", configured)
    check_openai_embedder(url, configured)
    check_llm(url, configured)


@FUZZ
@given(url=urls())
def test_fuzzed_ollama_urls_go_where_they_are_read(url):
    check_ollama(url)


@pytest.mark.parametrize("url", FIXED)
@pytest.mark.parametrize("configured", list(CONFIGURED))
def test_known_tricks_never_carry_the_key_elsewhere(url, configured, env, monkeypatch):
    env("QDRANT_URL", "QDRANT_API_KEY", configured)
    env("OPENAI_BASE_URL", "OPENAI_API_KEY", configured)
    check_qdrant(url, configured, monkeypatch)
    check_openai_embedder(url, configured)
    check_llm(url, configured)
    check_ollama(url)


@pytest.mark.parametrize("url", ["http://qdrant.test:6333\\@evil.test", "http://evil.test\\@qdrant.test:6333",
                                 "http://a@b@qdrant.test", "http://qdrant%2etest", "http://qdrant.test:6333//evil",
                                 "http://qdrant.test\t:1", "http://qdrant.test:1?x", "http://qdrant.test/../x"])
def test_ambiguous_urls_are_refused_by_every_client_in_one_line(url, monkeypatch):
    for make in (lambda: store_open.open_store(url=url), lambda: OpenAIEmbedder("m", base_url=url),
                 lambda: OllamaEmbedder("m", host=url), lambda: OpenAIChat("m", base_url=url)):
        with pytest.raises(InvalidSettingsError) as refused:
            make()
        assert "\n" not in str(refused.value) and "\t" not in str(refused.value)


# ---- end to end: a recording loopback server -----------------------------------------------------------


def answer_like_the_servers(request: dict) -> servers.Reply:
    """Return what Qdrant, an OpenAI-compatible embedder or chat server would answer to request."""
    if request["path"].endswith("/chat/completions"):
        return servers.Reply(b'data: {"choices": [{"delta": {"content": "Ja."}}]}\n\ndata: [DONE]\n\n')
    if request["path"].endswith("/embeddings"):
        return servers.Reply({"data": [{"index": 0, "embedding": [0.6, 0.8]}]})
    return servers.qdrant_collections()


def recorder() -> servers.Loopback:
    """Return a loopback server that records every request (path, headers) and answers like Qdrant, an
    OpenAI-compatible embedder and chat server."""
    return servers.recording(answer_like_the_servers)


def test_the_cli_refuses_a_backslash_qdrant_url_and_sends_the_key_nowhere(monkeypatch, capsys):
    with recorder() as configured, recorder() as other:
        monkeypatch.setenv("QDRANT_URL", configured.url)
        monkeypatch.setenv("QDRANT_API_KEY", KEY)
        typed = f"{other.url}\\@{configured.url.removeprefix('http://')}"
        code, out, err = run(capsys, "--qdrant-url", typed, "collections")
        assert code == 1 and out == "" and err.count("\n") == 1 and "backslash" in err
        assert other.requests == [] and configured.requests == []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code, _, err = run(capsys, "collections")  # the configured URL itself still gets its key
        assert code == 0, err
        assert configured.requests and {r["headers"].get("api-key") for r in configured.requests} == {KEY}
        assert other.requests == []
        store_open.open_store(url=configured.url).close()


def test_the_real_http_clients_refuse_a_backslash_url_and_send_the_key_nowhere(monkeypatch):
    with recorder() as configured, recorder() as other:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{configured.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        typed = f"{other.url}\\@{configured.url.removeprefix('http://')}/v1"
        for make in (lambda: OpenAIEmbedder("m", base_url=typed), lambda: OpenAIChat("m", base_url=typed)):
            with pytest.raises(InvalidSettingsError, match="backslash"):
                make()
        assert other.requests == [] and configured.requests == []
        assert OpenAIEmbedder("m", base_url=f"{configured.url}/v1/").embed_query(["a"]).shape == (1, 2)
        assert OpenAIChat("m", base_url=configured.url).complete([{"role": "user", "content": "?"}]) == "Ja."
        assert [r["headers"].get("Authorization") for r in configured.requests] == [f"Bearer {KEY}"] * 2
        assert other.requests == []


@pytest.mark.slow
def test_the_issue_repro_in_a_real_process_sends_the_key_nowhere():
    """`QDRANT_URL=A QDRANT_API_KEY=K rag --qdrant-url 'B\\@A' collections` sent K to B; now it is refused."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    with recorder() as configured, recorder() as other:
        env = {**os.environ, "QDRANT_URL": configured.url, "QDRANT_API_KEY": KEY}
        typed = f"{other.url}\\@{configured.url.removeprefix('http://')}"
        done = subprocess.run([sys.executable, "-m", "rag", "--qdrant-url", typed, "collections"], env=env,
                              cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and done.stderr.startswith("error: ") and "backslash" in done.stderr
        assert other.requests == [] and configured.requests == []
