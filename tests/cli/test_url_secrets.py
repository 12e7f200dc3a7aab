"""A password in a server URL never reaches stderr: every command that can reach each server, server down."""

from __future__ import annotations

import socket

import pytest

from rag.http import RetryPolicy
from tests.conftest import run

PASSWORD = "pw-s3cret-4711"


@pytest.fixture(scope="module")
def down_port() -> int:
    """Return a loopback port nothing listens on (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def material(tmp_path, capsys, monkeypatch):
    """Return (document, store folder, query set) for commands that need them; the store holds the document."""
    monkeypatch.setattr(RetryPolicy, "wait", lambda self, attempt, response=None: 0.0)  # retries, not waits
    doc = tmp_path / "vertrag.md"
    doc.write_text("# Kündigung\n\nDie Kündigungsfrist beträgt drei Monate zum Quartalsende. Der Vertrag läuft "
                   "ein Jahr und verlängert sich jeweils um ein weiteres Jahr.\n", encoding="utf-8")
    store, queries = str(tmp_path / "q"), str(tmp_path / "queries.jsonl")
    assert run(capsys, "ingest", str(doc), "--embedder", "fake:16", "--store", store)[0] == 0
    assert run(capsys, "make-queries", str(doc), "--out", queries, "--count", "1")[0] == 0, capsys.readouterr()
    return str(doc), store, queries


def embedder_commands(spec: str, doc: str, store: str, queries: str) -> list[list[str]]:
    new = ["--store", store, "--collection", f"neu-{spec.partition(':')[0]}"]
    return [["ingest", doc, "--embedder", spec, *new], ["search", "Frist", "--embedder", spec, "--store", store],
            ["context", "Frist", "--embedder", spec, "--store", store],
            ["eval", queries, "--embedder", spec, "--store", store, "--no-cache"],
            ["sweep", doc, "--queries", queries, "--embedder", spec, "--chunk-size", "50", "--overlap", "0",
             "--store", store]]


def llm_commands(spec: str, doc: str, store: str, queries: str) -> list[list[str]]:
    return [["answer", "Frist?", "--llm", spec, "--store", store],
            ["make-queries", doc, "--out", f"{queries}.llm", "--count", "1", "--llm", spec]]


def qdrant_commands(doc: str, queries: str) -> list[list[str]]:
    return [["collections"], ["documents"], ["ingest", doc, "--embedder", "fake:16"], ["search", "Frist"],
            ["context", "Frist"], ["answer", "Frist?", "--llm", "ollama:m"], ["eval", queries, "--no-cache"],
            ["sweep", doc, "--queries", queries, "--chunk-size", "50", "--overlap", "0"],
            ["delete", "--collection", "documents", "--document", "x"],
            ["compare", "Frist", "--a", "documents", "--b", "documents:sparse"]]


@pytest.mark.slow
@pytest.mark.parametrize("server", ["openai", "ollama", "qdrant"])
def test_no_command_prints_the_password_of_a_server_url(server, material, down_port, monkeypatch, capsys):
    doc, store, queries = material
    url = f"http://user:{PASSWORD}@127.0.0.1:{down_port}"
    variable = {"openai": "OPENAI_BASE_URL", "ollama": "OLLAMA_HOST", "qdrant": "QDRANT_URL"}[server]
    monkeypatch.setenv(variable, url)
    if server == "qdrant":
        commands = qdrant_commands(doc, queries)
    else:
        spec = f"{server}:m"
        commands = embedder_commands(spec, doc, store, queries) + llm_commands(spec, doc, store, queries)
    for argv in commands:
        code, out, err = run(capsys, *argv)
        assert code == 1, (argv, out, err)
        assert f"127.0.0.1:{down_port}" in err, (argv, err)  # the command did try that server
        assert PASSWORD not in err + out and "user:" not in err, (argv, err)
        assert err.strip().splitlines()[-1].startswith("error: "), (argv, err)
