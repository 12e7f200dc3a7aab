"""Where Qdrant lives: one cached Store per embedded folder or server URL, closed at exit."""

from __future__ import annotations

import atexit
import logging
import math
import os
import tempfile
import threading
import warnings

import httpx
from qdrant_client import QdrantClient
from qdrant_client.http.exceptions import ApiException, UnexpectedResponse

from rag.errors import InvalidSettingsError, StoreError, StoreUnavailableError
from rag.settings import QDRANT, check_url, configured_key, configured_url, display_url, load, timeout
from rag.store import reads
from rag.store.client import Store, invalid_reply, not_qdrant, timed_out
from rag.store.contract import IndexReads
from rag.store.edge import EdgeClient
from rag.store.edge.migrate import MigrationFailed, finish, has_local_format, migrate
from rag.store.reads import ReadClient, shown, writes_elsewhere
from rag.urls import endpoint, redact_urls
from rag.words import counted, plural

LARGE_LOCAL_COLLECTION = 20_000  # points above which the embedded engine gets slow (qdrant-client's own figure)
# qdrant-client warns about that on every load and upsert, in its words; rag says it once, with what to do
warnings.filterwarnings("ignore", message="Local mode is not recommended", category=UserWarning)
logger = logging.getLogger(__name__)
MOVES: dict[str, tuple[list, str | None]] = {}  # folder -> what its move to Qdrant Edge moved, and the backup
_STORES: dict[tuple[str, ...], Store] = {}
_CACHE_LOCK = threading.Lock()


def open_store(path: str | None = None, url: str | None = None, api_key: str | None = None,
               read_only: bool = False) -> Store:
    """Return the process's Store for a location: url/QDRANT_URL (server) or path/RAG_QDRANT_PATH (folder).

    Explicit arguments win over environment variables (read now, not at import). QDRANT_API_KEY is sent
    only to QDRANT_URL: another url gets api_key, or no key (rag.settings); a URL that qdrant-client would
    read as another server than rag.urls does is refused before anything is sent. One Store per location is
    cached, because an embedded folder can be opened by one client only; path=":memory:" gives a new
    engine every call (Qdrant Edge in a temporary folder removed on close and at exit; with RAG_QDRANT_ENGINE=local,
    the local mode's in memory). A malformed
    URL or an empty path raises InvalidSettingsError. A Qdrant Edge folder that another process holds and serves
    (rag.store.reads: the app) gives, with read_only, a Store reading through that process (not cached: it may
    stop), and without it StoreUnavailableError saying that writes go through that process.
    """
    if path == ":memory:":
        if _engine() == "local":
            return Store(QdrantClient(location=":memory:"), "memory", local=True)
        return Store(EdgeClient(tempfile.mkdtemp(prefix="rag-memory-"), temporary=True), "memory", local=True)
    if path is not None and not str(path).strip():
        raise InvalidSettingsError("The Qdrant folder is empty. Give a folder path, or leave it out for the default.")
    if url is not None and not url.strip():
        raise InvalidSettingsError("The Qdrant URL is empty. Give a URL such as http://localhost:6333.")
    url = url or (None if path else configured_url(QDRANT))
    if url:
        url = check_url(url, "The Qdrant URL")
        api_key = (api_key if api_key is not None else configured_key(url, QDRANT)) or None
        key = ("url", url, api_key or "", timeout("RAG_QDRANT_TIMEOUT"))
    else:
        path = os.path.abspath(os.path.expanduser(path or load().qdrant_path))
        key = ("path", path)
    with _CACHE_LOCK:
        if key in _STORES:
            return _STORES[key]
        store = _connect_server(url, api_key) if url else _open_folder(path, read_only)
        if not isinstance(store.client, ReadClient):
            _STORES[key] = store
        return store


def _open_folder(path: str, read_only: bool = False) -> Store:
    """Open an embedded folder with its engine: Qdrant Edge (a folder in qdrant-client's local format is moved to it
    first), or qdrant-client's local mode when RAG_QDRANT_ENGINE=local; read_only: read through the process that
    holds it, if that one serves its reads (rag.store.reads)."""
    engine = _engine()
    try:
        client = EdgeClient(path) if engine == "edge" else QdrantClient(path=path)
    except RuntimeError as e:
        if "already accessed" not in str(e):
            raise StoreUnavailableError(f"The Qdrant folder {path} cannot be opened: {e}.") from e
        holder = reads.endpoint(path) if engine == "edge" else None
        if holder is not None and read_only:
            return Store(ReadClient(path, holder), path, local=True)
        if holder is not None:
            raise StoreUnavailableError(writes_elsewhere(path, holder["pid"])) from e
        raise StoreUnavailableError(
            f"The Qdrant folder {path} is in use by another process (another RAG Lab app or CLI). "
            "Close that one, or run a Qdrant server and set QDRANT_URL so several processes can share it."
        ) from e
    except OSError as e:
        raise StoreUnavailableError(
            f"The Qdrant folder {path} cannot be opened: {e}. Set RAG_QDRANT_PATH to a writable folder."
        ) from e
    if engine == "edge":
        reads.discard_endpoint(path)  # what a killed holder left: the folder is ours now
    if engine == "edge" and has_local_format(path):
        if client.collection_names():
            if (kept := finish(path)) is not None:  # a move killed after its rename left the old files
                MOVES[path] = ([], kept)
        else:
            _move_to_edge(client, path)
    return Store(client, path, local=True, on_close=forget)


def _engine() -> str:
    """Return the embedded engine: "edge" (Qdrant Edge, the default) or "local" (qdrant-client's local mode)."""
    return load().qdrant_engine


def _move_to_edge(client: EdgeClient, path: str) -> None:
    """Move a qdrant-client local-mode folder to Qdrant Edge (rag.store.edge.migrate); one line if it fails."""
    try:
        moved, backup = migrate(client)
    except MigrationFailed as e:
        client.close()
        raise StoreError(
            f"Moving the Qdrant folder {path} to the new engine failed ({e}); the old data is untouched. Free "
            "disk space and try again (`rag migrate`), or set RAG_QDRANT_ENGINE=local to keep the old engine."
        ) from e
    MOVES[path] = (moved, backup)
    if moved:
        counts = ", ".join(f"'{m.name}' ({counted(m.points, 'point')})" for m in moved)
        logger.warning("Moved %s to Qdrant Edge in %s; the old files are kept in the complete backup %s.", counts,
                       path, backup)


def migrate_folder(path: str | None = None) -> dict:
    """Open an embedded folder, moving it to Qdrant Edge if it holds qdrant-client local-mode data (`rag migrate`);
    return {"folder", "moved": [{"collection", "points"}], "backup"} (nothing moved: [] and None)."""
    path = os.path.abspath(os.path.expanduser(path or load().qdrant_path))
    if _engine() != "edge":
        raise InvalidSettingsError("`rag migrate` moves folders to Qdrant Edge: set RAG_QDRANT_ENGINE=edge (and keep "
                                   "it set for every later use of the folder).")
    MOVES.pop(path, None)
    open_store(path=path)
    moved, backup = MOVES.get(path, ([], None))
    return {"folder": path, "moved": [{"collection": m.name, "points": m.points} for m in moved], "backup": backup}


def _connect_server(url: str, api_key: str | None) -> Store:
    shown, seconds = display_url(url), math.ceil(timeout("RAG_QDRANT_TIMEOUT"))  # qdrant-client takes whole seconds
    try:
        client = QdrantClient(url=url, api_key=api_key, timeout=seconds, check_compatibility=False)
    except ValueError as e:  # qdrant-client's own URL checks
        raise InvalidSettingsError(
            f"The Qdrant URL '{shown}' is not usable ({_reason(e)}). Write it like http://localhost:6333."
        ) from None
    _check_destination(client, url, shown)
    try:
        client.get_collections()  # the client is lazy: probe now, not at the first search
    except UnexpectedResponse as e:
        client.close()
        if e.status_code in (401, 403):
            hint = "Check QDRANT_API_KEY." if api_key else (
                "No API key was sent: QDRANT_API_KEY goes only to the URL in QDRANT_URL.")
        else:
            hint = "Check QDRANT_URL."
        raise StoreUnavailableError(f"Qdrant at {shown} answered {e.status_code} {e.reason_phrase}. {hint}") from e
    except (ApiException, httpx.HTTPError, OSError, ValueError) as e:
        client.close()
        if (invalid := invalid_reply(e)) is not None:
            raise StoreUnavailableError(not_qdrant(shown, "listing collections", invalid)) from e
        if timed_out(e):
            raise StoreUnavailableError(
                f"Qdrant at {shown} did not answer within {seconds:g} s. Check that the server is up; raise "
                "RAG_QDRANT_TIMEOUT (seconds) if it is only slow."
            ) from e
        raise StoreUnavailableError(
            f"Qdrant at {shown} cannot be reached ({_reason(e)}). Start the server, fix QDRANT_URL, "
            "or unset QDRANT_URL to use the embedded folder."
        ) from e
    return Store(client, shown, local=False, on_close=forget)


def _check_destination(client: QdrantClient, url: str, shown: str) -> None:
    """Refuse url (closing client) unless qdrant-client will send its requests where rag.urls says url points.

    The key decision (configured_key) compared url as rag.urls reads it; this holds qdrant-client to the same
    reading, whatever its version does with the URL (it parses with urllib3 and joins a path onto the host).
    """
    try:
        same = endpoint(client.http.client.host)[:3] == endpoint(url, QDRANT.default_port)[:3]
    except ValueError:
        same = False
    if not same:
        client.close()
        raise InvalidSettingsError(
            f"The Qdrant URL '{shown}' is refused: qdrant-client reads it as another server. Write it plainly, "
            "like http://localhost:6333."
        )


def _reason(error: Exception) -> str:
    """Return the first line of an error's text, short and without user:password in URLs (httpx puts whole
    tracebacks of causes in some)."""
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return redact_urls(text)[:160]


def size_note(store: Store, infos: list | None = None) -> str | None:
    """Return a note when qdrant-client's local mode holds a collection too large for it (else None; Qdrant Edge
    searches 100,000 chunks at numpy speed)."""
    if not store.local or isinstance(store.client, IndexReads):  # Qdrant Edge, here or through the app
        return None
    large = [c for c in (infos if infos is not None else store.collections()) if c.points > LARGE_LOCAL_COLLECTION]
    if not large:
        return None
    names = ", ".join(f"'{c.name}' ({counted(c.points, 'chunk')})" for c in large)
    return (f"{names} {plural(len(large), 'is', 'are')} large for the embedded Qdrant engine, which compares "
            f"every chunk on each search (slow above {LARGE_LOCAL_COLLECTION:,}). Run a Qdrant server and set "
            "QDRANT_URL for collections this size.")


def reading_note(store: Store) -> str | None:
    """Return the note of a store read through the process that holds its folder (else None)."""
    if not isinstance(store.client, ReadClient):
        return None
    return (f"reading through the app that holds {shown(store.location)} (pid {store.client.pid}); writes stay "
            "with it")


def forget(store: Store) -> None:
    """Drop store from the cache and stop serving its reads (it is being closed)."""
    reads.stop_serving(store)
    with _CACHE_LOCK:
        for key, cached in list(_STORES.items()):
            if cached is store:
                del _STORES[key]


@atexit.register
def _close_all() -> None:
    """Close cached clients while Python can still run their cleanup (else qdrant-client warns at exit)."""
    for store in list(_STORES.values()):
        store.close()


def close_stores() -> None:
    """Close every cached store and stop serving its reads now: what the at-exit hooks do, for a process that ends
    itself without Python's finalization (the app, ui/shutdown.py)."""
    _close_all()
    reads.stop_all()
