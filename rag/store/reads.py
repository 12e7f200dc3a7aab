"""Reads of an embedded folder for other processes: the process holding it serves them on loopback (ReadServer),
another process reads through it (ReadClient).

Qdrant Edge opens a shard in one process only (its write-ahead log is locked, and rag locks the folder's .lock
around it), and has no read-only open. So the process that holds a folder (the app: ui/resources.py) calls
serve_reads(store): a small HTTP server on 127.0.0.1, on a port the system picks, answers the read methods of
its EdgeClient (READS) under the Store's lock (Store.reading), as its own pages read, and nothing else. It writes
`<folder>/reads.json` (pid, port, token; mode 0600, renamed into place) and removes it when it stops. A CLI that
finds the folder locked reads through it: rag.store.open gives its Store a ReadClient, which has exactly the
methods READS allows (and the two reads Store makes of them, get_collections and get_collection) and no write
method at all (Store answers a write with the one line writes_elsewhere: rag.store.contract).

A request must come to 127.0.0.1:<port> itself (Host header: no DNS rebinding), carry the token as a Bearer key,
and carry no Origin or Sec-Fetch-Mode header (a browser's page, e.g. the app's own, can never be the caller).
Arguments and answers are JSON (rag.store.edge.wire), never pickles. A connection that sends nothing for
READ_TIMEOUT_S is closed, at most MAX_CONNECTIONS are served at once (one more is answered 503 and closed), and a
malformed request (a Content-Length that is no number, a body nested too deep) is answered 400. A read through the
holder sees what the holder's own reads see (an ingest becomes visible whole, at its commit: rag.store.versions),
and its answer equals the holder's page's.
"""

from __future__ import annotations

import atexit
import contextlib
import hmac
import json
import logging
import os
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from qdrant_client import models
from qdrant_client.http import models as rest

from rag.errors import StoreUnavailableError
from rag.files import write_atomic
from rag.settings import timeout
from rag.store.client import Store
from rag.store.edge import EdgeClient, wire
from rag.store.edge.client import CollectionView, collection_view

ENDPOINT_FILE = "reads.json"
PATH = "/read"
MAX_BODY = 32 * 1024 * 1024
READ_TIMEOUT_S = 10.0  # a connection that sends nothing for this long is closed (a CLI's reads follow each other)
MAX_CONNECTIONS = 32  # connections served at once: a CLI command holds one
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
logger = logging.getLogger(__name__)
# method -> what it gives back to send (a QueryResponse holds EdgePoints, sent as themselves)
READS: dict[str, Any] = {
    "collection_names": None, "collection_exists": None, "collection_config": None, "index_state": None,
    "retrieve": None, "scroll": None, "count": None,
    "query_batch_points": lambda answers: [answer.points for answer in answers],
}
_SERVERS: dict[str, ReadServer] = {}
_SERVERS_LOCK = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    server: ReadServer
    protocol_version = "HTTP/1.1"  # one connection for all reads of a command
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart (delayed ACK)
    timeout = READ_TIMEOUT_S  # the socket's: a stalled request or idle connection ends (http.server closes it)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        if not self.server.admits(self.path, self.headers):
            return self._send(403, {"error": "refused"})
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return self._send(400, {"error": "malformed request (Content-Length is not a number)"})
        if not 0 < length <= MAX_BODY:
            return self._send(413, {"error": "no body, or too large"})
        try:
            request = json.loads(self.rfile.read(length))
            method = request["method"]
            if method not in READS:
                raise ValueError(f"{method!r} is not a read")
            args, kwargs = wire.decode(request.get("args", [])), wire.decode(request.get("kwargs", {}))
        except RecursionError:
            return self._send(400, {"error": "malformed request (nested too deep)"})
        except (ValueError, KeyError, TypeError) as e:
            return self._send(400, {"error": f"malformed request ({e})"})
        try:
            result = self.server.read(method, args, kwargs)
        except tuple(wire.ERRORS.values()) as e:
            kind = next(name for name, cls in wire.ERRORS.items() if isinstance(e, cls))
            return self._send(200, {"error": str(e), "kind": kind})
        except Exception as e:  # a bug: the reader says so in one line rather than losing the connection
            return self._send(500, {"error": f"{type(e).__name__}: {e}"})
        return self._send(200, {"result": result})

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        if status != 200:  # a refused request's body may be unread: the connection cannot carry another one
            self.close_connection = True
            self.send_header("Connection", "close")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the server logs nothing to stderr
        pass


class ReadServer(ThreadingHTTPServer):
    """The loopback server of one Store's reads (see module)."""

    daemon_threads = True

    def __init__(self, store: Store):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.store, self.token, self.folder = store, secrets.token_urlsafe(32), store.location
        self.port = self.server_address[1]
        self.thread = threading.Thread(target=self.serve_forever, name="rag-reads", daemon=True)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve a connection in its own thread while fewer than MAX_CONNECTIONS are served; else answer 503."""
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.settimeout(1.0)
                request.sendall(BUSY)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Log a connection that broke (the caller went away mid-answer) in one line, not a traceback."""
        logger.info("A read connection from %s ended with an error.", client_address)

    def admits(self, path: str, headers: Any) -> bool:
        """Return whether a request may read: our path and Host, no browser headers, the token."""
        if path != PATH or headers.get("Host") != f"127.0.0.1:{self.port}":
            return False
        if headers.get("Origin") is not None or headers.get("Sec-Fetch-Mode") is not None:
            return False
        return hmac.compare_digest(headers.get("Authorization", ""), f"Bearer {self.token}")

    def read(self, method: str, args: list, kwargs: dict) -> Any:
        """Run one read of the store's client under the Store's lock (the engine is not thread-safe); return it
        encoded."""
        with self.store.reading() as client:
            answer = getattr(client, method)(*args, **kwargs)
        convert = READS[method]
        return wire.encode(convert(answer) if convert else answer)

    def publish(self) -> None:
        """Write the endpoint file, readable by this user only, renamed into place whole."""
        data = {"pid": os.getpid(), "port": self.port, "token": self.token,
                "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        write_atomic(os.path.join(self.folder, ENDPOINT_FILE), json.dumps(data), mode=0o600)

    def stop(self) -> None:
        """Stop serving and remove the endpoint file if it is still this server's."""
        found = endpoint(self.folder, check_pid=False)
        if found and found["token"] == self.token:
            with contextlib.suppress(OSError):
                os.remove(os.path.join(self.folder, ENDPOINT_FILE))
        self.shutdown()
        self.server_close()


def serve_reads(store: Store) -> ReadServer | None:
    """Serve the reads of an embedded Qdrant Edge folder to other processes (see module); return the server, or None
    for a server URL, a store in memory or qdrant-client's local mode (their CLI keeps refusing the folder)."""
    if not store.local or not isinstance(store.client, EdgeClient) or not os.path.isabs(store.location):
        return None
    with _SERVERS_LOCK:
        running = _SERVERS.get(store.location)
        if running is not None and running.store is store:
            return running
        if running is not None:
            running.stop()
        server = _SERVERS[store.location] = ReadServer(store)
        server.thread.start()
        server.publish()
        return server


def stop_serving(store: Store) -> None:
    """Stop serving store's reads (it is being closed)."""
    with _SERVERS_LOCK:
        running = _SERVERS.get(store.location)
        if running is not None and running.store is store:
            del _SERVERS[store.location]
            running.stop()


def endpoint(folder: str, check_pid: bool = True) -> dict | None:
    """Return {"pid", "port", "token", "since"} of the process serving folder's reads; None if there is none (no
    file, not this user's or readable by others, or, with check_pid, its process is gone)."""
    path = os.path.join(folder, ENDPOINT_FILE)
    try:
        status = os.stat(path)
        if status.st_uid != os.getuid() or status.st_mode & 0o077:
            return None
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        pid, port, token = int(data["pid"]), int(data["port"]), str(data["token"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if check_pid:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
    return {"pid": pid, "port": port, "token": token, "since": data.get("since")}


def discard_endpoint(folder: str) -> None:
    """Remove a folder's endpoint file left by a process that is gone (the caller holds the folder now)."""
    with contextlib.suppress(OSError):
        os.remove(os.path.join(folder, ENDPOINT_FILE))


@atexit.register
def stop_all() -> None:
    """Stop every read server of this process (at exit)."""
    for server in list(_SERVERS.values()):
        server.stop()


def shown(folder: str) -> str:
    """Return folder as the user would write it: ./data/qdrant below the working folder, else absolute."""
    relative = os.path.relpath(folder)
    return folder if relative.startswith("..") else f"./{relative}" if relative != "." else "."


def writes_elsewhere(folder: str, pid: int) -> str:
    """Return the one line a write gets while another process serves the folder."""
    return (f"The store {shown(folder)} is open in the app (pid {pid}); writes go through the app or stop it first: "
            "ingest, delete and index on its pages, or stop it (Ctrl+C where it runs) and run this command again.")


class ReadClient:
    """The reads of a folder that the process at endpoint serves (see module): READS, get_collections and
    get_collection made of them, close; no other method (rag.store.contract.StoreReads and IndexReads)."""

    def __init__(self, path: str, endpoint: dict):  # no lock taken: the holder has the folder
        self.path, self.pid, self.since = path, endpoint["pid"], endpoint.get("since")
        self.refusal = writes_elsewhere(path, self.pid)  # what Store answers a write with
        self._http = httpx.Client(base_url=f"http://127.0.0.1:{endpoint['port']}", trust_env=False,
                                  headers={"Authorization": f"Bearer {endpoint['token']}"},
                                  timeout=timeout("RAG_QDRANT_TIMEOUT"))

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, *args: Any) -> Any:
        """Return the holder's answer to one read; its error raised again; StoreUnavailableError if it is gone."""
        request = {"method": method, "args": wire.encode(args), "kwargs": {}}
        try:
            try:
                response = self._http.post(PATH, json=request)
            except httpx.RemoteProtocolError:  # the holder closed the idle connection as this read went out
                response = self._http.post(PATH, json=request)  # a read: asking again is safe
            body = response.json()
        except (httpx.HTTPError, ValueError) as e:
            raise StoreUnavailableError(
                f"The app holding the store {shown(self.path)} (pid {self.pid}) did not answer a read "
                f"({type(e).__name__}); try again, or stop the app and run the command alone.") from e
        if response.status_code != 200:
            raise StoreUnavailableError(f"The app holding the store {shown(self.path)} (pid {self.pid}) refused a "
                                        f"read ({response.status_code}: {body.get('error')}).")
        if "error" in body:
            raise wire.ERRORS.get(body.get("kind"), RuntimeError)(body["error"])
        return wire.decode(body["result"])

    # ---- READS, one method each ----

    def collection_names(self) -> list[str]:
        return self._call("collection_names")

    def collection_exists(self, collection_name: str) -> bool:
        return self._call("collection_exists", collection_name)

    def collection_config(self, name: str) -> dict:
        return self._call("collection_config", name)

    def index_state(self, collection_name: str) -> dict[str, Any]:
        return self._call("index_state", collection_name)

    def retrieve(self, collection_name: str, ids: list[Any], with_payload: Any = True,
                 with_vectors: Any = False) -> list[models.Record]:
        return self._call("retrieve", collection_name, list(ids), with_payload, with_vectors)

    def scroll(self, collection_name: str, scroll_filter: Any = None, limit: int = 10, offset: Any = None,
               with_payload: Any = True, with_vectors: Any = False) -> tuple[list[models.Record], Any]:
        records, following = self._call("scroll", collection_name, scroll_filter, limit, offset, with_payload,
                                        with_vectors)
        return records, following

    def count(self, collection_name: str, count_filter: Any = None, exact: bool = True) -> models.CountResult:
        return self._call("count", collection_name, count_filter)  # the holder counts exactly

    def query_batch_points(self, collection_name: str, requests: list[Any]) -> list[rest.QueryResponse]:
        answers = self._call("query_batch_points", collection_name, list(requests))
        return [rest.QueryResponse.model_construct(points=points) for points in answers]

    # ---- what Store reads, made of READS ----

    def get_collections(self) -> models.CollectionsResponse:
        return models.CollectionsResponse(collections=[models.CollectionDescription(name=n)
                                                       for n in self.collection_names()])

    def get_collection(self, collection_name: str) -> CollectionView:
        return collection_view(self.collection_config(collection_name))
