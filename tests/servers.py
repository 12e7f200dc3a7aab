"""The one loopback HTTP server of the tests: a real server on 127.0.0.1 in a thread, the network edge faked.

`Loopback(reply)` records every request (method, path, headers, raw body and the body read as JSON) in
`requests` and answers each with `reply(request)`:

- a `Reply`: a status and a body (bytes, or anything JSON-able), or `pieces` streamed one by one and flushed
  (then the connection closes, or with `hang=True` it stays open and silent);
- `SILENT` (None): the connection is accepted and never answered, until the server is closed.

`recording(reply)`, `silent()` and `scripted(*replies)` are the three kinds the tests use; each is also a
context manager that closes the server. pytest-timeout guards every test that talks to a silent server.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

SILENT = None
HANG_SECONDS = 60  # a silent handler waits at most this long, or until close() releases it


@dataclass(frozen=True)
class Reply:
    """One answer: status and body (bytes or JSON-able), or pieces streamed in turn; hang=True then stays silent."""

    body: Any = b""
    status: int = 200
    pieces: tuple[bytes, ...] = ()
    hang: bool = False
    content_type: str | None = None  # no Content-Type header unless given

    def data(self) -> bytes:
        """Return the body as the bytes sent."""
        return self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()


Answer = Callable[[dict], "Reply | None"]


class Loopback:
    """A loopback HTTP server that records each request and answers it with reply(request)."""

    def __init__(self, reply: Answer):
        self.reply, self.requests, self.release = reply, [], threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def handle_one(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                           "raw": raw, "json": _json(raw)}
                server.requests.append(request)
                server.send(self, server.reply(request))

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_one  # noqa: N815 (the http.server API)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def send(self, handler: http.server.BaseHTTPRequestHandler, reply: Reply | None) -> None:
        """Write reply on the handler's connection; None (SILENT) writes nothing and waits for close()."""
        if reply is SILENT:
            self.release.wait(HANG_SECONDS)
            return
        handler.send_response(reply.status)
        if reply.content_type:
            handler.send_header("Content-Type", reply.content_type)
        if not reply.pieces:
            data = reply.data()
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        handler.end_headers()
        for piece in reply.pieces:
            handler.wfile.write(piece)
            handler.wfile.flush()
        if reply.hang:
            self.release.wait(HANG_SECONDS)

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> Loopback:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _json(raw: bytes) -> Any:
    """Return the body read as JSON, or None where it is empty or no JSON."""
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def recording(reply: Answer | Reply = Reply()) -> Loopback:
    """Return a server that records every request and answers each with reply (a Reply or a function)."""
    return Loopback(reply if callable(reply) else lambda request: reply)


def silent() -> Loopback:
    """Return a server that accepts every connection and never answers (until it is closed)."""
    return Loopback(lambda request: SILENT)


def scripted(*replies: Reply | None, then: Reply | None = SILENT) -> Loopback:
    """Return a server that answers the n-th request with replies[n], and every later one with then."""
    script: Iterator[Reply | None] = iter(replies)
    return Loopback(lambda request: next(script, then))


def qdrant_collections(collections: Any = ()) -> Reply:
    """Return Qdrant's answer to GET /collections (the probe every client sends first)."""
    return Reply({"result": {"collections": collections if isinstance(collections, str) else list(collections)},
                  "status": "ok", "time": 0})
