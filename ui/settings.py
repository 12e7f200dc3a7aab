"""Settings of the app: environment variables first, then .streamlit/secrets.toml, then defaults.

Read at run time, never at import. Secrets (API keys) are only ever passed on, never displayed, and only
to the URL configured beside them in the same place (environment or secrets.toml; rag.settings has the
rule): a URL a visitor types into the sidebar gets a key only when the visitor types one too.

Who may change where the data lives and which servers are used: the operator, by setting
RAG_UI_SETTINGS=1 (environment or secrets.toml). Off by default, because anyone who can open the app could
otherwise point it at their own server; `make run` turns it on when it binds to 127.0.0.1.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import streamlit as st
from streamlit.errors import StreamlitSecretNotFoundError

from rag import settings as rag_settings
from rag.documents import BUNDLED
from rag.errors import InvalidSettingsError
from rag.settings import Service

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SECRET_NAMES = ("QDRANT_API_KEY", "OPENAI_API_KEY")


def _secrets() -> dict[str, str]:
    """Return the top-level values of secrets.toml as strings ({} without one); InvalidSettingsError when malformed."""
    try:
        values = st.secrets.to_dict()
    except StreamlitSecretNotFoundError as error:
        if getattr(error, "error_id", None) == "no-secrets-found":
            return {}
        reason = str(error).partition(": ")[2] or str(error)  # tomllib's reason names a line, never a value
        raise InvalidSettingsError(f"The secrets file is malformed ({reason[:200]}). Fix .streamlit/secrets.toml "
                                   "(it is TOML: NAME = \"value\"), or remove it.") from None
    return {str(k): str(v).strip() for k, v in values.items() if not isinstance(v, dict)}


def _merged() -> dict[str, str]:
    """Return the environment's set values over secrets.toml's: where every app setting is read."""
    return {**_secrets(), **{k: v for k, v in os.environ.items() if v.strip()}}


def loaded() -> rag_settings.Settings:
    """Return the app's RAG_* settings (environment, else secrets.toml), checked: InvalidSettingsError otherwise."""
    return rag_settings.load(_merged())


def check() -> None:
    """Return None when the app's settings and server URLs (environment and secrets.toml) are all usable."""
    rag_settings.check_environment(_merged())


def setting(name: str, default: str = "") -> str:
    """Return a setting: the environment variable, else the same key in st.secrets, else default."""
    return _merged().get(name, "").strip() or default


def ui_settings_allowed() -> bool:
    """Return whether visitors may change the data location and the servers (RAG_UI_SETTINGS, off by default)."""
    return loaded().ui_settings


def _source(service: Service) -> Mapping[str, str]:
    """Return where the service's key is configured (environment or secrets.toml), so its URL comes from there."""
    if service.key_variable and os.environ.get(service.key_variable, "").strip():
        return os.environ
    secrets = _secrets()
    if service.key_variable and secrets.get(service.key_variable):
        return secrets
    return {**secrets, **{k: v for k, v in os.environ.items() if v.strip()}}


def configured_url(service: Service) -> str:
    """Return the service's URL as the operator configured it ("" for a Qdrant server when none is)."""
    return rag_settings.configured_url(service, _source(service)) or ""


def key_for(service: Service, url: str, typed_key: str = "") -> str:
    """Return the key to send with url: a typed one, else the configured one if url is its configured URL."""
    return typed_key.strip() or rag_settings.configured_key(url, service, _source(service))


def key_is_set(service: Service) -> bool:
    """Return whether the operator configured a key for the service, without giving the key away."""
    return bool(service.key_variable and _source(service).get(service.key_variable, "").strip())


def qdrant_path() -> str:
    return loaded().qdrant_path


def qdrant_url() -> str:
    return configured_url(rag_settings.QDRANT)


def collection() -> str:
    return loaded().collection


def embedder_spec() -> str:
    from rag.embeddings import DEFAULT_EMBEDDER

    return loaded().embedder or DEFAULT_EMBEDDER


def refused_model_folder(spec: str) -> str | None:
    """Return why spec may not be loaded (a `local:<path>` folder outside the data root), or None when it may.

    A model folder is files on this machine: one typed in the browser, or read from a collection's metadata,
    must lie inside the data root, unless it is the operator's own RAG_EMBEDDER. Every embedder the app loads
    passes this check (ui.resources.embedder), so a refused spec never loads anywhere.
    """
    from rag.embeddings import LOCAL_MODEL_NAMES, parse_spec
    from rag.errors import InvalidSettingsError, RagError

    try:
        provider, argument = parse_spec(spec)
    except RagError:
        return None  # not a model folder; loading it gives its own message
    if provider != "local" or argument.lower() in LOCAL_MODEL_NAMES or spec == embedder_spec():
        return None
    try:
        rag_settings.folder_inside_data_root(argument, data_root())
    except InvalidSettingsError:
        return (f"The model folder '{argument}' is outside the data root {data_root()}. Put the model inside the "
                "data root, or ask the operator to set RAG_EMBEDDER.")
    return None


def data_root() -> Path:
    """Return the data root: RAG_DATA_ROOT (environment or secrets), else ./data."""
    return rag_settings.data_root({"RAG_DATA_ROOT": loaded().data_root})


def sample_dir() -> Path | None:
    """Return the folder of sample documents: RAG_SAMPLE_DIR (relative to the project root), else the set shipped
    in the package (rag/samples). A configured folder is returned even if it is missing."""
    configured = loaded().sample_dir
    if not configured:
        return BUNDLED
    folder = Path(configured).expanduser()
    return (folder if folder.is_absolute() else PROJECT_ROOT / folder).resolve()


def is_set(name: str) -> bool:
    """Return whether a (secret) setting has a value, without giving the value away."""
    return bool(setting(name))
