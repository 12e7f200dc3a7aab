"""The tests' one loopback server (tests/servers.py): it records, stays silent and answers by script."""

from __future__ import annotations

import httpx
import pytest

from tests import servers

pytestmark = pytest.mark.timeout(60)


def test_a_recording_server_keeps_method_path_headers_and_body():
    with servers.recording(servers.Reply({"ok": True}, 201)) as server:
        answer = httpx.post(f"{server.url}/v1/x?y=1", json={"a": 1}, headers={"api-key": "K"})
    assert answer.status_code == 201 and answer.json() == {"ok": True}
    [request] = server.requests
    assert (request["method"], request["path"], request["json"]) == ("POST", "/v1/x?y=1", {"a": 1})
    assert request["headers"]["api-key"] == "K" and request["raw"] == b'{"a":1}'


def test_a_scripted_server_answers_in_turn_then_falls_silent():
    with servers.scripted(servers.Reply(b"one"), servers.Reply(pieces=(b"t", b"wo"))) as server:
        assert httpx.get(server.url).text == "one" and httpx.get(server.url).text == "two"
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(server.url, timeout=0.3)
    assert len(server.requests) == 3


def test_a_silent_server_accepts_and_never_answers():
    with servers.silent() as server, pytest.raises(httpx.ReadTimeout):
        httpx.post(server.url, content=b"x", timeout=0.3)
    assert [r["raw"] for r in server.requests] == [b"x"]
