"""Where Qdrant lives: one cached Store per embedded folder or server URL, closed at exit."""

from __future__ import annotations

import atexit
import os
import threading

import httpx
from qdrant_client import QdrantClient
from qdrant_client.http.exceptions import ApiException, UnexpectedResponse

from rag.errors import StoreUnavailableError
from rag.store import DEFAULT_PATH, SERVER_TIMEOUT, Store

_STORES: dict[tuple[str, ...], Store] = {}
_CACHE_LOCK = threading.Lock()


def open_store(path: str | None = None, url: str | None = None, api_key: str | None = None) -> Store:
    """Return the process's Store for a location: url/QDRANT_URL (server) or path/RAG_QDRANT_PATH (folder).

    Explicit arguments win over environment variables (read now, not at import). One Store per location
    is cached, because an embedded folder can be opened by one client only; path=":memory:" gives a new
    in-memory engine every call (for tests).
    """
    if path == ":memory:":
        return Store(QdrantClient(location=":memory:"), "memory", local=True)
    url = url or (None if path else os.environ.get("QDRANT_URL") or None)
    if url:
        api_key = api_key or os.environ.get("QDRANT_API_KEY") or None
        key = ("url", url.rstrip("/"), api_key or "")
    else:
        path = os.path.abspath(os.path.expanduser(path or os.environ.get("RAG_QDRANT_PATH") or DEFAULT_PATH))
        key = ("path", path)
    with _CACHE_LOCK:
        if key not in _STORES:
            _STORES[key] = _connect_server(url, api_key) if url else _open_folder(path)
        return _STORES[key]


def _open_folder(path: str) -> Store:
    try:
        client = QdrantClient(path=path)
    except RuntimeError as e:
        if "already accessed" not in str(e):
            raise
        raise StoreUnavailableError(
            f"The Qdrant folder {path} is in use by another process (another RAG Lab app or CLI). "
            "Close that one, or run a Qdrant server and set QDRANT_URL so several processes can share it."
        ) from e
    except OSError as e:
        raise StoreUnavailableError(
            f"The Qdrant folder {path} cannot be opened: {e}. Set RAG_QDRANT_PATH to a writable folder."
        ) from e
    return Store(client, path, local=True)


def _connect_server(url: str, api_key: str | None) -> Store:
    client = QdrantClient(url=url, api_key=api_key, timeout=SERVER_TIMEOUT, check_compatibility=False)
    try:
        client.get_collections()  # the client is lazy: probe now, not at the first search
    except UnexpectedResponse as e:
        client.close()
        hint = "Check QDRANT_API_KEY." if e.status_code in (401, 403) else "Check QDRANT_URL."
        raise StoreUnavailableError(f"Qdrant at {url} answered {e.status_code} {e.reason_phrase}. {hint}") from e
    except (ApiException, httpx.HTTPError, OSError) as e:
        client.close()
        raise StoreUnavailableError(
            f"Qdrant at {url} cannot be reached ({e}). Start the server, fix QDRANT_URL, "
            "or unset QDRANT_URL to use the embedded folder."
        ) from e
    return Store(client, url, local=False)


def forget(store: Store) -> None:
    """Drop store from the cache (it is being closed)."""
    with _CACHE_LOCK:
        for key, cached in list(_STORES.items()):
            if cached is store:
                del _STORES[key]


@atexit.register
def _close_all() -> None:
    """Close cached clients while Python can still run their cleanup (else qdrant-client warns at exit)."""
    for store in list(_STORES.values()):
        store.close()
