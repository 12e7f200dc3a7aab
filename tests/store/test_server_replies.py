"""A server that is not quite Qdrant: its reply of the wrong shape is one line, not a pydantic dump."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from rag.errors import StoreError
from rag.store.open import open_store


class WrongShapeServer(http.server.ThreadingHTTPServer):
    """Answers every GET with 200 and JSON that looks like Qdrant's envelope but has the wrong shape inside."""

    def __init__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                body = json.dumps({"result": {"collections": "x"}, "status": "ok", "time": 0}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


@pytest.fixture
def server():
    server = WrongShapeServer()
    yield server
    server.shutdown()


def test_a_reply_of_the_wrong_shape_is_one_line_naming_the_field(server):
    with pytest.raises(StoreError) as error:
        open_store(url=server.url)  # the probe on open lists the collections
    message = str(error.value)
    assert "\n" not in message and "validation error" not in message
    assert "not Qdrant's" in message and "result.collections" in message and server.url in message


def test_a_reply_of_the_wrong_shape_later_is_one_line_too(server):
    from qdrant_client import QdrantClient

    from rag.store.client import Store

    store = Store(QdrantClient(url=server.url, check_compatibility=False), server.url, local=False)
    with pytest.raises(StoreError) as error:
        store.collections()
    message = str(error.value)
    assert "\n" not in message and "not Qdrant's" in message and "result.collections" in message
