"""Cached resources and data: one Store per location and one embedder per spec for the whole server process,
and listings that are read again only when the store changed (or after a short ttl, for other processes)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import streamlit as st

from rag import reports as chunk_report
from rag.chunking import Chunk, chunk_document
from rag.documents import Document
from rag.embeddings import E5Embedder, Embedder, get_embedder, parse_spec
from rag.errors import InvalidSettingsError, RagError
from rag.store import (
    CollectionInfo,
    DocumentArchive,
    DocumentInfo,
    Hit,
    Store,
    default_archive_dir,
    document_from_chunks,
    open_store,
    serve_reads,
)
from ui import settings

LISTING_TTL = 30  # seconds: another process writing to the same Qdrant shows up at the latest after this


@st.cache_resource(show_spinner=False)
def store(kind: str, target: str, api_key: str = "") -> Store:
    """Return the Store for an embedded folder (kind "folder") or a server URL (kind "server")."""
    if kind == "server":  # an explicit key ("" = none): the store never falls back to QDRANT_API_KEY
        return open_store(url=target, api_key=api_key)
    opened = open_store(path=target)
    serve_reads(opened)  # the CLI reads beside the app through this process (rag.store.reads)
    return opened


@st.cache_resource(show_spinner=False)
def embedder(spec: str, ollama_host: str = "", openai_base_url: str = "", openai_api_key: str = "",
             prompts: tuple[str, str] | None = None) -> Embedder:
    """Return the embedder for a spec with the sidebar's host, URL and key (the key only ever the one given),
    and the (query, document) prompts of the collection it serves (None: the model's own)."""
    provider, _ = parse_spec(spec)
    refused = settings.refused_model_folder(spec)
    if refused:
        raise InvalidSettingsError(refused)
    options: dict[str, str | None] = {}
    if prompts is not None:
        options |= {"query_prompt": prompts[0], "document_prompt": prompts[1]}
    if provider == "ollama":
        options["host"] = ollama_host or None
    if provider == "openai":  # an explicit key ("" = none): the embedder never falls back to OPENAI_API_KEY
        options |= {"base_url": openai_base_url or None, "api_key": openai_api_key}
    return get_embedder(spec, **options)


@st.cache_data(show_spinner=False, max_entries=512)
def query_vector(_embedder: Embedder, model: tuple[str, str], query: str) -> np.ndarray:
    """Return the query's embedding, once per (model id, query prompt) and query text for the whole server."""
    return _embedder.embed_query([query])[0]


@st.cache_data(show_spinner=False, max_entries=4096)
def unread_start(_embedder: Embedder, model_id: str, limit: int, text: str) -> int | None:
    """Return where the model stops reading a chunk's text (rag.reports.chunks.unread_start), once per model,
    input limit and text."""
    return chunk_report.unread_start(text, _embedder)


def archive(store: Store) -> DocumentArchive:
    """Return the document archive of a store (beside its folder, or in the data root for a server)."""
    return DocumentArchive(default_archive_dir(store.location, store.local))


@dataclass(frozen=True)
class WarmUp:
    """The default model loading in the background: its thread, and the model's name as the pages say it."""

    thread: threading.Thread
    model: str
    _start: threading.Lock = field(default_factory=threading.Lock)

    def loading(self) -> str | None:
        """Return the model's name while it still loads (or is yet to), else None."""
        return self.model if self.model and (self.thread.is_alive() or self.thread.ident is None) else None

    def start(self) -> None:
        """Start loading, once: after the page has said that it loads (the import takes the GIL for a while)."""
        with self._start:
            if self.thread.ident is None:
                self.thread.start()


@st.cache_resource(show_spinner=False)
def warm_up() -> WarmUp:
    """Return the loading of the default local model in the background, once per server process (WarmUp.start), so no
    first click waits for it."""
    try:
        embedder = get_embedder(None)  # cheap: the model itself loads in the thread
    except RagError:  # a broken setting is reported where the embedder is used
        embedder = None

    def load() -> None:
        with contextlib.suppress(RagError):
            embedder.count_tokens("warm up")
            if isinstance(embedder, E5Embedder):  # its tokens need no engine: load the engine itself
                embedder.load()

    thread = threading.Thread(target=load if embedder is not None else lambda: None, name="model-warm-up",
                              daemon=True)
    name = embedder.model_id.removeprefix("local:") if embedder is not None else ""
    if isinstance(embedder, E5Embedder):  # "multilingual-e5-small, int8"
        name = f"{name.removesuffix('-int8')}, {embedder.precision}"
    return WarmUp(thread, name)


@st.cache_resource(show_spinner=False)
def _changes() -> dict[str, int]:
    return {"count": 0}


def version() -> int:
    """Return a number that grows whenever this server process changed a store (ingest, delete)."""
    return _changes()["count"]


def store_changed() -> None:
    """Drop cached listings: the next read sees the store as it is now."""
    _changes()["count"] += 1


def change_hook() -> Callable[[], None]:
    """Return store_changed for a thread outside any script run (an ingest job): it holds the counter itself."""
    counter = _changes()

    def changed() -> None:
        counter["count"] += 1

    return changed


LAST_USED_FILE = "last-collection.json"  # under the data root: {location: collection}, kept across a restart
_WRITING = threading.Lock()  # sessions run on threads of their own: one writes the file at a time


@st.cache_resource(show_spinner=False)
def _last_used() -> dict[str, str]:
    """Return the collections last used per location, read once per server process from the data root."""
    try:
        saved = json.loads((settings.data_root() / LAST_USED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none kept yet, or unreadable: the largest collection opens, as on a first start
    return {str(k): str(v) for k, v in saved.items()} if isinstance(saved, dict) else {}


def _keep_last_used(used: dict[str, str]) -> None:
    """Write the last used collections under the data root, whole or not at all; a read-only root keeps them in
    this process only (a convenience, never an error)."""
    path = settings.data_root() / LAST_USED_FILE
    with _WRITING, contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{LAST_USED_FILE}.{os.getpid()}")
        temporary.write_text(json.dumps(used, ensure_ascii=False), encoding="utf-8")
        os.replace(temporary, path)


def remember_collection(location: str, name: str) -> None:
    """Note name as the collection last chosen (or ingested into) at location, for the next new session."""
    used = _last_used()
    if used.get(location) != name:
        used[location] = name
        _keep_last_used(dict(used))


def last_collection(location: str) -> str | None:
    """Return the collection last chosen at location by any session of this server, also before its restart."""
    return _last_used().get(location)


@st.cache_data(ttl=LISTING_TTL, max_entries=32, show_spinner=False)
def collections(_store: Store, location: str, changes: int) -> list[CollectionInfo]:
    return _store.collections()


@st.cache_data(ttl=LISTING_TTL, max_entries=64, show_spinner=False)
def documents(_store: Store, location: str, collection: str, changes: int) -> list[DocumentInfo]:
    return _store.documents(collection)


@st.cache_data(ttl=LISTING_TTL, max_entries=64, show_spinner=False)
def document_chunks(_store: Store, location: str, collection: str, document_id: str, changes: int) -> list[Hit]:
    return _store.document_chunks(collection, document_id)


@st.cache_data(max_entries=64, show_spinner=False)
def model_token_counts(_embedder: Embedder, model_id: str, contents: tuple[str, ...]) -> list[int]:
    """Return each text's length in the embedder's own tokens (the unit of its input limit)."""
    return [_embedder.count_tokens(text) for text in contents]


@st.cache_data(max_entries=16, show_spinner=False)
def stored_document(_chunks: list[Hit], key: tuple, document_id: str, title: str, kind: str) -> Document:
    """Return the document rebuilt from its stored chunks; key names them (location, collection, changes)."""
    return document_from_chunks(document_id, title, _chunks, kind)


@st.cache_data(max_entries=64, show_spinner=False)
def rechunk(_document: Document, key: tuple, chunk_size: int, overlap: int, strategy: str) -> list[Chunk]:
    """Return the document chunked with other settings (milliseconds; cached per settings anyway)."""
    return chunk_document(_document, chunk_size, overlap, strategy)
