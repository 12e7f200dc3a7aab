"""RemoteReads: an EdgeClient whose reads go to the process that holds the folder (rag.store.reads serves them),
and which refuses every write with one line saying where writes go.

Searches, listings and counts run in the holder's process on its open shards, under its Store's lock, exactly
as its own pages run them: the answer equals the page's, and a read sees what the holder's reads see (an ingest
becomes visible whole, at its commit: rag.store.versions). Arguments and answers travel as JSON (rag.store.edge.wire).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import httpx
from qdrant_client.http import models as rest

from rag.errors import StoreUnavailableError
from rag.settings import timeout
from rag.store.edge import wire
from rag.store.edge.client import EdgeClient

WRITES = ("create_collection", "update_collection", "delete_collection", "create_payload_index", "upsert", "delete",
          "set_payload", "delete_payload", "copy_shard", "replace_shard", "_set_index", "_writing", "_shard")


def shown(folder: str) -> str:
    """Return folder as the user would write it: ./data/qdrant below the working folder, else absolute."""
    relative = os.path.relpath(folder)
    return folder if relative.startswith("..") else f"./{relative}" if relative != "." else "."


def writes_elsewhere(folder: str, pid: int) -> str:
    """Return the one line a write gets while another process serves the folder."""
    return (f"The store {shown(folder)} is open in the app (pid {pid}); writes go through the app or stop it first: "
            "ingest, delete and index on its pages, or stop it (Ctrl+C where it runs) and run this command again.")


class RemoteReads(EdgeClient):
    """The read methods of EdgeClient, answered by the process serving folder path (endpoint: rag.store.reads)."""

    def __init__(self, path: str, endpoint: dict):  # no lock taken: the holder has the folder
        self.path, self.pid, self.since = path, endpoint["pid"], endpoint.get("since")
        self.exact, self._remove = False, None
        self._configs: dict[str, dict] = {}
        self._mutex = threading.RLock()
        self._http = httpx.Client(base_url=f"http://127.0.0.1:{endpoint['port']}", trust_env=False,
                                  headers={"Authorization": f"Bearer {endpoint['token']}"},
                                  timeout=timeout("RAG_QDRANT_TIMEOUT"))

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Return the holder's answer to one read; its error raised again; StoreUnavailableError if it is gone."""
        request = {"method": method, "args": wire.encode(args), "kwargs": wire.encode(kwargs)}
        try:
            try:
                response = self._http.post("/read", json=request)
            except httpx.RemoteProtocolError:  # the holder closed the idle connection as this read went out
                response = self._http.post("/read", json=request)  # a read: asking again is safe
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

    def _config(self, name: str) -> dict:
        return self._call("collection_config", name)

    def collection_exists(self, name: str) -> bool:
        return self._call("collection_exists", name)

    def collection_names(self) -> list[str]:
        return self._call("collection_names")

    def retrieve(self, collection_name: str, ids: list[Any], with_payload: Any = True, with_vectors: Any = False,
                 **_: Any) -> list:
        return self._call("retrieve", collection_name, list(ids), with_payload, with_vectors)

    def scroll(self, collection_name: str, scroll_filter: Any = None, limit: int = 10, offset: Any = None,
               with_payload: Any = True, with_vectors: Any = False, **_: Any) -> tuple[list, Any]:
        records, following = self._call("scroll", collection_name, scroll_filter, limit, offset, with_payload,
                                        with_vectors)
        return records, following

    def count(self, collection_name: str, count_filter: Any = None, exact: bool = True, **_: Any) -> Any:
        return self._call("count", collection_name, count_filter)

    def query_batch_points(self, collection_name: str, requests: list, **_: Any) -> list[rest.QueryResponse]:
        answers = self._call("query_batch_points", collection_name, list(requests))
        return [rest.QueryResponse.model_construct(points=points) for points in answers]

    def index_state(self, collection_name: str) -> dict[str, Any]:
        return self._call("index_state", collection_name)


def _refuse(self: RemoteReads, *_: Any, **__: Any) -> Any:
    raise StoreUnavailableError(writes_elsewhere(self.path, self.pid))


for _name in WRITES:
    setattr(RemoteReads, _name, _refuse)
