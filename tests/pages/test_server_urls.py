"""Server URLs in the app (AppTest): a password in the operator's URL never reaches a visitor's page, and a
typed URL that parsers read differently is refused before the configured key goes anywhere."""

from __future__ import annotations

import socket

import pytest

from rag.http import RetryPolicy
from tests.pages.conftest import button, settled, start, texts
from tests.test_url_rule import recorder

PASSWORD = "pw-s3cret-4711"


@pytest.fixture
def down_url(app_env, monkeypatch) -> str:
    """Return a loopback URL with user:password where nothing listens; retries do not wait."""
    monkeypatch.setattr(RetryPolicy, "wait", lambda self, attempt, response=None: 0.0)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://user:{PASSWORD}@127.0.0.1:{port}"


@pytest.mark.parametrize(("variable", "spec"), [("OPENAI_BASE_URL", "openai:m"), ("OLLAMA_HOST", "ollama:m")])
def test_a_visitor_never_sees_the_password_of_an_embedding_server(down_url, monkeypatch, variable, spec):
    monkeypatch.setenv(variable, down_url)
    monkeypatch.setenv("RAG_EMBEDDER", spec)
    at = start()
    text = "Die Kündigungsfrist beträgt drei Monate zum Quartalsende.".encode()
    at.file_uploader[0].set_value([("vertrag.txt", text, "text/plain")])
    at.run()
    settled(button(at, "Ingest").click())
    assert not at.exception, at.exception
    port = down_url.rsplit(":", 1)[1]
    assert f"127.0.0.1:{port}" in texts(at.error)  # the error is there, and names the server
    assert at.dataframe, "the results table is shown"
    page = str(at._tree) + str(at.dataframe[0].value.to_dict("records"))
    assert PASSWORD not in page and "user:" not in page


def test_a_visitor_never_sees_the_password_of_the_qdrant_server(down_url, monkeypatch):
    monkeypatch.setenv("QDRANT_URL", down_url)
    at = start()
    assert "cannot be reached" in texts(at.sidebar.error)
    assert PASSWORD not in str(at._tree)


def test_a_typed_qdrant_url_with_a_backslash_is_refused_and_nothing_is_sent(app_env, monkeypatch):
    with recorder() as configured, recorder() as other:
        monkeypatch.setenv("RAG_UI_SETTINGS", "1")
        monkeypatch.setenv("QDRANT_URL", configured.url)
        monkeypatch.setenv("QDRANT_API_KEY", "K-operator")
        at = start()
        at.text_input(key="qdrant_url").set_value(f"{other.url}\\@{configured.url.removeprefix('http://')}").run()
        assert "backslash" in texts(at.sidebar.error)
        assert other.requests == []
        assert all(r["headers"].get("api-key") in (None, "K-operator") for r in configured.requests)
