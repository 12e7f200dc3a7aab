"""Every session-state key the app uses, in one place, with the helpers that read and write them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import streamlit as st

# sidebar: where the data lives, which collection, which embedder
LOCATION_KIND = "location_kind"  # "folder" | "server"
QDRANT_PATH = "qdrant_path"
QDRANT_URL = "qdrant_url"
QDRANT_API_KEY = "qdrant_api_key"  # typed in the sidebar; empty means: use QDRANT_API_KEY from the settings
COLLECTION = "collection"  # the collection chosen, by name (or sidebar.NEW): kept for the session
COLLECTION_CHOICE = "collection_choice"  # the picker widget, set from COLLECTION on every run
COLLECTION_OPTIONS = "collection_options"  # what the picker offered on the last run
SEEN_COLLECTIONS = "seen_collections"  # (location, names) of the last run: a name gone since was deleted
NEW_COLLECTION = "new_collection"
PENDING_COLLECTION = "pending_collection"  # set by a page; applied before the sidebar widget is drawn
EMBEDDER_SPEC = "embedder_spec"
OLLAMA_HOST = "ollama_host"
OPENAI_BASE_URL = "openai_base_url"
OPENAI_API_KEY = "openai_api_key"
WORKSPACE = "workspace"  # ui.workspace.Workspace of this run, for the pages
ANNOUNCED = "announced"  # toasts to show on the next run (ui.state.announce)

# upload
UPLOAD_TARGET = "upload_target"
UPLOAD_TARGET_OF = "upload_target_of"  # the sidebar's collection when the target was last set to it
SHOW_SWEEPS = "show_sweeps"  # the sidebar lists the collections sweeps made
UPLOAD_NEW_TARGET = "upload_new_target"
UPLOADER_ROUND = "uploader_round"  # bumped to clear the file uploader after an ingest
UPLOAD_LANGUAGE = "upload_language"  # keyword language of a new collection (rag.store.keywords)
UPLOAD_CHUNK_HEADERS = "upload_chunk_headers"  # a new collection's chunk headers (rag.chunking.headers)
UPLOAD_CHILD_SIZE = "upload_child_size"  # a new collection's child size (rag.chunking.children)
UPLOAD_QUERY_PROMPT = "upload_query_prompt"  # prompts of a new collection's embedder
UPLOAD_DOCUMENT_PROMPT = "upload_document_prompt"
MY_JOBS = "my_jobs"  # ids of the ingest jobs this session started (ui.jobs)
ADOPTED_JOBS = "adopted_jobs"  # ... whose results this session has followed
KEEP_VERSIONS = "keep_versions"  # keep a document of the same name instead of replacing it

# chunks
CHUNKS_DOCUMENT = "chunks_document"  # document_id picked on the Chunks page (also set by Library/Upload)

# search, shared with the context page
QUERY = "query"
TOP_K = "top_k"
USE_THRESHOLD = "use_threshold"
THRESHOLD = "threshold"
DOCUMENT_FILTER = "document_filter"
SEARCH_MODE = "search_mode"  # "dense" | "sparse" | "hybrid"
FUSION = "fusion"  # "convex" | "rrf" | "dbsf": how hybrid search fuses (rag.retrieval.fusion)
FUSION_WEIGHT = "fusion_weight"  # the dense list's share (convex, rrf)
INCLUDE_TOC = "include_toc"  # also search chunks flagged as a table of contents
SEARCH = "search"  # ui.workspace.SearchRun of the last search
SUBMITTED_QUERY = "submitted_query"  # the query of a Search click, until the page's results fragment searched it

# compare
COMPARE = "compare_run"  # ui.parts.compare.CompareRun of the last comparison
COMPARE_QUERY = "compare_query"

# embedding map
MAP_METHOD = "map_method"
MAP_COLOUR = "map_colour"  # "document" | "heading"
MAP_SAMPLE = "map_sample"
MAP_QUERY = "map_query"
MAP_TOP_K = "map_top_k"
MAP_MODE = "map_mode"

# context
CONTEXT_PRESET = "context_preset"
MAX_TOKENS = "max_tokens"
SOURCE_LABEL = "source_label"
SEPARATOR = "separator"
OVERFLOW = "context_overflow"  # what build_context does with a chunk that does not fit
LLM_SPEC = "llm_spec"  # the chat model of "Ask the LLM"
LLM_PRESET = "llm_preset"
LLM_QUESTION = "llm_question"
LLM_SYSTEM = "llm_system"  # the prompt templates as edited on the page
LLM_USER = "llm_user"
ANSWER = "llm_answer"  # (context text, Answer) of the last question asked


def get(key: str, default: Any = None) -> Any:
    """Return a session-state value, or default when it was never set."""
    return st.session_state.get(key, default)


def put(key: str, value: Any) -> None:
    st.session_state[key] = value


def pop(key: str, default: Any = None) -> Any:
    """Return a session-state value and forget it, or default when it is not set."""
    return st.session_state.pop(key, default)


def default(key: str, value: Any) -> None:
    """Give a widget key its starting value once (a widget must not also get value=)."""
    if key not in st.session_state:
        st.session_state[key] = value


def announce(message: str) -> None:
    """Show message as a toast on the next run: one shown right before st.rerun() is lost with that run."""
    put(ANNOUNCED, [*get(ANNOUNCED, []), message])


def announced() -> list[str]:
    """Return the messages announced for this run, and forget them."""
    return st.session_state.pop(ANNOUNCED, [])


def keep(key: str, options: Sequence[Any], fallback: Any) -> Any:
    """Give a picker's key its current value if options still hold it, else fallback; return that value.

    Call it before the widget is drawn. The browser holds a choice as its label: when a label changes (a count
    after a delete) or its option went away, Streamlit would hand back the label string itself as the value.
    Written here as a value, the choice is the option it was, or the fallback.
    """
    value = st.session_state.get(key)
    value = value if value in options else fallback
    st.session_state[key] = value
    return value


def table_key(name: str, rows: Iterable[object]) -> str:
    """Return the key of a selectable table that changes with its rows: a selection (a row index) never outlives
    the rows it was made on, so after a delete, a new result or a filter no row points at another one."""
    digest = hashlib.sha1("\n".join(map(str, rows)).encode()).hexdigest()[:12]
    return f"{name}-{digest}"


def result_key(name: str, result: Any) -> str:
    """Return the key of a widget that shows a choice on a sweep result (a row, a k, a metric, a target): it names
    the result (when it was made, its wall time, its rows), so a new result draws the widget afresh at its own
    default, also when it has the same rows (a sweep run again within the same second has another wall time).

    Resetting the old key is not enough: Streamlit keeps a keyed widget's identity while its options change, and
    the browser goes on showing the old choice (a row of the run before, not among the options) until a reload.
    """
    return table_key(name, (result.created_at, result.seconds, *(row.label for row in result.results)))


def bump(key: str) -> int:
    """Return key's counter plus one, stored (used to give a widget a fresh key)."""
    st.session_state[key] = st.session_state.get(key, 0) + 1
    return st.session_state[key]
