"""The app's read endpoint (rag.store.reads) on a real loopback socket: stalled connections end after its read
timeout, connections beyond its cap are answered 503 at once, and malformed requests (a Content-Length that is no
number, a body nested 100,000 deep) are answered 400, not left without an answer. The CLI's `rag judge` and `rag index
--status`, which only read the store, read beside the app through it. Bounded: a few sockets, each read waits at most
CLIENT_WAIT_S."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from rag.store import reads
from rag.store.open import open_store
from rag.store.reads import endpoint, serve_reads, stop_serving
from tests.store.test_reads_beside_app import TITLE, holder, rag  # noqa: F401 - holder is a fixture

CLIENT_WAIT_S = 30.0  # the longest a test socket waits for the server (a bound, never a measured figure)


@pytest.fixture
def server(tmp_path: Path, monkeypatch):
    """A store serving its reads (its own read timeout), with a cap of 4 connections; yields (port, token)."""
    monkeypatch.setattr(reads, "MAX_CONNECTIONS", 4, raising=False)
    store = open_store(path=str(tmp_path / "qdrant"))
    try:
        serving = serve_reads(store)
        yield serving.port, endpoint(str(tmp_path / "qdrant"))["token"]
    finally:
        stop_serving(store)
        store.close()


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=CLIENT_WAIT_S)


def answer(sock: socket.socket) -> bytes | None:
    """Return what the server sends until it closes the connection; None if it sent nothing within CLIENT_WAIT_S."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        return data or None
    except ConnectionResetError:
        pass
    return data


def request(port: int, token: str, body: bytes, length: str | None = None) -> bytes:
    head = (f"POST /read HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length or len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


@pytest.mark.slow
def test_stalled_connections_are_closed_after_the_read_timeout(server) -> None:
    port, token = server
    assert 0 < reads.READ_TIMEOUT_S < CLIENT_WAIT_S
    stalled = [connect(port) for _ in range(3)]
    try:
        stalled[0].sendall(b"POST /read HTTP/1.1\r\nHost: 127.0.0.1:")  # half a request line's headers
        stalled[1].sendall(request(port, token, b"", length="100")[:-2])  # headers not ended
        stalled[2].sendall(request(port, token, b'{"method": "coll', length="200"))  # a body cut short
        assert [answer(s) for s in stalled] == [b"", b"", b""]  # closed by the server, no answer owed
    finally:
        for sock in stalled:
            sock.close()


def test_connections_beyond_the_cap_are_answered_503_at_once(server) -> None:
    port, token = server
    held = [connect(port) for _ in range(4)]
    try:
        for sock in held:
            sock.sendall(b"POST /read HTTP/1.1\r\n")  # each keeps a thread waiting for its headers
        extra = connect(port)
        try:
            reply = answer(extra)
            assert reply is not None and reply.startswith(b"HTTP/1.1 503 "), reply
        finally:
            extra.close()
    finally:
        for sock in held:
            sock.close()


@pytest.mark.parametrize(("body", "length", "error"), [
    (b'{"method": "collection_names"}', "abc", "Content-Length is not a number"),
    (b"[" * 100_000 + b"]" * 100_000, None, "nested too deep"),
    (b'{"method": "collection_names", "args": ' + b"[" * 5_000 + b"]" * 5_000 + b"}", None, "nested too deep"),
])
def test_malformed_requests_are_answered_400(server, body: bytes, length: str | None, error: str) -> None:
    port, token = server
    sock = connect(port)
    try:
        sock.sendall(request(port, token, body, length))
        reply = answer(sock)
    finally:
        sock.close()
    assert reply is not None and reply.startswith(b"HTTP/1.1 400 "), reply
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1]) == {"error": f"malformed request ({error})"}


@pytest.mark.crash
def test_rag_judge_and_index_status_read_beside_the_app(tmp_path: Path, holder) -> None:  # noqa: F811 - the fixture
    folder = tmp_path / "qdrant"
    note = f"note: reading through the app that holds {folder} (pid {holder.pid}); writes stay with it"
    status = rag(folder, "index", "--collection", "c", "--status", "--json")
    assert status.returncode == 0 and status.stderr.strip() == note, status.stderr
    assert json.loads(status.stdout)["points"] == 4
    found = rag(folder, "search", "Kündigungsfrist", "--collection", "c", "--json", "--embedder", "fake")
    chunk = json.loads(found.stdout)["hits"][0]["chunk_id"]
    queries = tmp_path / "queries.jsonl"
    judged = rag(folder, "judge", "Wie lang ist die Kündigungsfrist?", "--collection", "c", "--chunk", chunk,
                 "--grade", "2", "--queries", str(queries), "--json")
    assert judged.returncode == 0 and judged.stderr.strip() == note, judged.stderr
    assert json.loads(judged.stdout)["judgment"]["document"] == TITLE
    assert json.loads(queries.read_text(encoding="utf-8").splitlines()[0])["query"] == "Wie lang ist die " \
                                                                                         "Kündigungsfrist?"
    built = rag(folder, "index", "--collection", "c")  # a build still writes: refused as before
    assert built.returncode == 1 and "writes go through the app" in built.stderr
