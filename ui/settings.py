"""Settings of the app: environment variables first, then .streamlit/secrets.toml, then defaults.

Read at run time, never at import. Secrets (API keys) are only ever passed on, never displayed.
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from rag.store import DEFAULT_COLLECTION, DEFAULT_PATH

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SECRET_NAMES = ("QDRANT_API_KEY", "OPENAI_API_KEY")


def setting(name: str, default: str = "") -> str:
    """Return a setting: the environment variable, else the same key in st.secrets, else default."""
    value = os.environ.get(name, "").strip()
    if value:
        return value
    try:
        secret = st.secrets.get(name)
    except Exception:  # no secrets.toml, or a malformed one: Streamlit raises several types; both mean "unset"
        secret = None
    return str(secret).strip() if secret not in (None, "") else default


def qdrant_path() -> str:
    return setting("RAG_QDRANT_PATH", DEFAULT_PATH)


def qdrant_url() -> str:
    return setting("QDRANT_URL")


def collection() -> str:
    return setting("RAG_COLLECTION", DEFAULT_COLLECTION)


def embedder_spec() -> str:
    from rag.embeddings import DEFAULT_EMBEDDER

    return setting("RAG_EMBEDDER", DEFAULT_EMBEDDER)


def sample_dir() -> Path | None:
    """Return the folder of sample documents: RAG_SAMPLE_DIR (relative to the project root), else
    ../shared/data when that exists, else None. A configured folder is returned even if it is missing."""
    configured = setting("RAG_SAMPLE_DIR")
    if not configured:
        default = PROJECT_ROOT.parent / "shared" / "data"
        return default.resolve() if default.is_dir() else None
    folder = Path(configured).expanduser()
    return (folder if folder.is_absolute() else PROJECT_ROOT / folder).resolve()


def is_set(name: str) -> bool:
    """Return whether a (secret) setting has a value, without giving the value away."""
    return bool(setting(name))
