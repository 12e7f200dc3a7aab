"""The sidebar on every page: the collection, the embedder, and where the data lives (folder or server)."""

from __future__ import annotations

import streamlit as st

from rag.errors import RagError
from rag.store import CollectionInfo, Store
from ui import resources, settings, state
from ui.render import md
from ui.workspace import Workspace

NEW = "__new__"
PRESET_SPECS = ("local", "fake", "ollama:mxbai-embed-large", "ollama:nomic-embed-text", "openai:text-embedding-3-small")
KINDS = {"folder": "Embedded folder", "server": "Qdrant server"}


def render() -> Workspace | None:
    """Draw the sidebar; return the workspace, or None (with the error shown) when the store cannot be used."""
    with st.sidebar:
        top, bottom = st.container(), st.container()
    with bottom, st.expander("Data location and servers", expanded=False):
        opened = _location()
        servers = _servers()
    if isinstance(opened, str):
        top.error(opened)
        return None
    store, location = opened
    try:
        infos = resources.collections(store, location, resources.version())
    except RagError as error:
        top.error(str(error))
        return None
    with top:
        collection = _collection(infos)
        info = next((c for c in infos if c.name == collection), None)
        spec, fixed = _embedder(info)
        kind = "Qdrant server" if not store.local else "Qdrant folder"
        st.caption(f"{kind}: {md(location)}")
    return Workspace(store, location, collection, info, tuple(infos), spec, fixed, servers)


def _location() -> tuple[Store, str] | str:
    """Return the opened store and its location, or the message that says why it cannot be opened."""
    state.default(state.LOCATION_KIND, "server" if settings.qdrant_url() else "folder")
    state.default(state.QDRANT_PATH, settings.qdrant_path())
    state.default(state.QDRANT_URL, settings.qdrant_url())
    kind = st.radio("Qdrant", list(KINDS), format_func=KINDS.get, key=state.LOCATION_KIND, horizontal=True)
    if kind == "server":
        url = st.text_input("Server URL", key=state.QDRANT_URL, placeholder="http://localhost:6333").strip()
        hint = "set in QDRANT_API_KEY (hidden)" if settings.is_set("QDRANT_API_KEY") else "none"
        typed = st.text_input("API key", key=state.QDRANT_API_KEY, type="password", placeholder=hint)
        if not url:
            return "Enter the URL of a Qdrant server (e.g. http://localhost:6333) under 'Data location and servers'."
        target, api_key = url, typed.strip() or settings.setting("QDRANT_API_KEY")
    else:
        target = st.text_input("Folder", key=state.QDRANT_PATH, help="Created if missing.").strip()
        target, api_key = target or settings.qdrant_path(), ""
    try:
        store = resources.store(kind, target, api_key)
    except RagError as error:
        return f"{error} (Change it under 'Data location and servers'.)"
    return store, store.location


def _servers() -> tuple[str, str, str]:
    state.default(state.OLLAMA_HOST, settings.setting("OLLAMA_HOST"))
    state.default(state.OPENAI_BASE_URL, settings.setting("OPENAI_BASE_URL"))
    ollama = st.text_input("Ollama host", key=state.OLLAMA_HOST, placeholder="http://localhost:11434")
    openai = st.text_input("OpenAI-compatible base URL", key=state.OPENAI_BASE_URL,
                           placeholder="https://api.openai.com/v1")
    hint = "set in OPENAI_API_KEY (hidden)" if settings.is_set("OPENAI_API_KEY") else "none"
    key = st.text_input("OpenAI API key", key=state.OPENAI_API_KEY, type="password", placeholder=hint)
    return ollama.strip(), openai.strip(), key.strip()


def _collection(infos: list[CollectionInfo]) -> str:
    names = [c.name for c in infos]
    points = {c.name: c.points for c in infos}
    pending = state.get(state.PENDING_COLLECTION)
    if pending:
        st.session_state.pop(state.PENDING_COLLECTION)
        state.put(state.COLLECTION_CHOICE, pending)
    default = settings.collection()
    options = names + [n for n in (default, state.get(state.COLLECTION_CHOICE)) if n and n != NEW and n not in names]
    options = list(dict.fromkeys(options)) + [NEW]
    if state.get(state.COLLECTION_CHOICE) not in options:
        state.put(state.COLLECTION_CHOICE, default)

    def label(name: str) -> str:
        if name == NEW:
            return "＋ New collection…"
        return f"{name} · {points[name]:,} chunks" if name in points else f"{name} · new"

    choice = st.selectbox("Collection", options, format_func=label, key=state.COLLECTION_CHOICE)
    if choice != NEW:
        return choice
    name = st.text_input("Name of the new collection", key=state.NEW_COLLECTION, placeholder="e.g. vertraege")
    if not name.strip():
        st.caption(f"Type a name; until then the collection is '{md(default)}'.")
    return name.strip() or default


def _embedder(info: CollectionInfo | None) -> tuple[str, bool]:
    """Return (spec, fixed): the collection's own embedder when RAG Lab made it, else the chosen one."""
    state.default(state.EMBEDDER_SPEC, settings.embedder_spec())
    if info is not None and not info.foreign and info.embedder:
        st.selectbox("Embedder", [info.embedder], disabled=True, key="embedder_fixed",
                     help="A collection keeps the embedder that filled it. Pick a new collection to choose another.")
        return info.embedder, True
    options = list(dict.fromkeys([*PRESET_SPECS, state.get(state.EMBEDDER_SPEC)]))
    spec = st.selectbox(
        "Embedder", options, key=state.EMBEDDER_SPEC, accept_new_options=True, persist_state="session",
        help="local = all-MiniLM-L6-v2 on this machine (offline); ollama:<model>; openai:<model>; "
             "fake = tiny test embedder. Type another spec to add it.",
    )
    if info is not None and info.foreign:
        st.caption(f"'{md(info.name)}' was not made by RAG Lab: pick an embedder with {info.dimension} dimensions.")
    return spec or settings.embedder_spec(), False
