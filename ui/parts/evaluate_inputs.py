"""The Evaluate page's inputs across a reload: the grid and the choices in the page's URL (st.query_params), an
uploaded query set as a file under the data root (rag.evaluation.querysets.kept_sets) and the uploaded documents as a
set of files there (rag.evaluation.querysets.kept_documents), each named in the URL. A new session (a reload, a link)
starts from the URL; a value the page would not offer is ignored. Leaving the page through the sidebar drops the URL's
parameters and the state of the widgets not drawn: the kept files' names are also in the session (NAMES), and each
run of the page writes them and the inputs back into the URL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

from rag.evaluation import (
    KeptDocument,
    forget_document,
    forget_documents,
    keep_documents,
    keep_query_set,
    kept_query_set,
    safe_name,
)
from rag.evaluation import kept_documents as kept_set
from rag.store import DEFAULT_FUSION
from ui import settings, url_inputs
from ui.parts import synthetic
from ui.render import COMPARED_MODES, counted
from ui.url_inputs import Field

QUERY_SET = "query_set"  # URL parameter: the kept file of the uploaded query set
KEPT = "evaluate_kept_upload"  # (name, size) of the upload this session kept last: it is written once
DOCUMENTS = "documents"  # URL parameter: the kept set of the uploaded documents
KEPT_DOCUMENTS = "evaluate_kept_documents"  # ((name, size), ...) of the documents this session kept last, refusals
NAMES = {QUERY_SET: "evaluate_query_set_name", DOCUMENTS: "evaluate_documents_name"}  # URL parameter -> session key


def _text(value: str) -> str | None:
    return value if len(value) <= 200 else None


def _one_of(*options: str) -> Callable[[str], str | None]:
    return lambda value: value if value in options else None


def _modes(value: str) -> list[str] | None:
    modes = [m for m in value.split(",") if m]
    return modes if modes and all(m in COMPARED_MODES for m in modes) else None


def _articles(value: str) -> int | None:
    return int(value) if value.isdigit() and 1 <= int(value) <= 1000 else None


# widget key -> its URL parameter, reading and starting value
FIELDS: dict[str, Field] = {
    "evaluate_sizes": Field("chunk_size", _text, "200,400,800"),
    "evaluate_overlaps": Field("overlap", _text, "0,50,100"),
    "evaluate_ks": Field("k", _text, "1,3,5,10"),
    "evaluate_strategy": Field("strategy", _one_of("structure", "tokens")),
    "evaluate_modes": Field("modes", _modes, [f"hybrid-{DEFAULT_FUSION}"]),
    "evaluate_query_from": Field("queries_from", _one_of("Upload", "Sample folder", synthetic.CHOICE)),
    "evaluate_articles": Field("articles", _articles),
    "evaluate_documents_from": Field("documents_from", _one_of("A collection", "Upload documents")),
    "evaluate_collection": Field("collection", _text),  # checked against the collections when drawn
    "evaluate_documents_from_squad": Field("squad_documents_from",
                                           _one_of("The SQuAD articles", "A collection", "Upload documents")),
}


def restore() -> None:
    """Give each input of a new session its value from the URL, else its starting value (before it is drawn)."""
    url_inputs.read(FIELDS)
    for param, key in NAMES.items():  # the kept files: the URL's name (a reload, a link), else the session's
        if param in st.query_params:
            st.session_state[key] = st.query_params[param]
        elif key in st.session_state:  # back through the sidebar: the URL lost it
            st.query_params[param] = st.session_state[key]


def _name(param: str, value: str | None) -> None:
    """Name a kept file (None: no file) in the URL and in the session."""
    if value:
        st.query_params[param] = st.session_state[NAMES[param]] = value
    else:
        st.query_params.pop(param, None)
        st.session_state.pop(NAMES[param], None)


def remember() -> None:
    """Write the inputs as they are now into the URL, so a reload finds them."""
    url_inputs.write({param: value for param, value in url_inputs.session_values(FIELDS).items()
                      if value is not None})  # an input not drawn yet keeps its parameter


def params() -> dict[str, str]:
    """Return the inputs as they are now as URL parameters, the kept files' names with them: a sweep's kept run keeps
    them, so the page can bring its inputs back after a restart (use)."""
    values = {param: url_inputs.as_text(value) for param, value in url_inputs.session_values(FIELDS).items()}
    values |= {param: st.session_state.get(key) for param, key in NAMES.items()}
    return {param: value for param, value in values.items() if value}


def use(values: dict[str, str]) -> None:
    """Make values (params() of an earlier run) the page's inputs: the URL gets them and the session forgets its own,
    so restore() reads them on the next run (call it in a button's callback, before the widgets are drawn)."""
    for key in (*FIELDS, *NAMES.values()):
        st.session_state.pop(key, None)
    known = [field.param for field in FIELDS.values()] + list(NAMES)
    url_inputs.write({param: values.get(param) if isinstance(values.get(param), str) else None for param in known})


def uploaded(name: str, data: bytes) -> None:
    """Keep an uploaded query set under the data root (once per upload) and name it in the URL."""
    if st.session_state.get(KEPT) != (name, len(data)) or not kept_query_set(settings.data_root(), safe_name(name)):
        keep_query_set(settings.data_root(), name, data)
        st.session_state[KEPT] = (name, len(data))
    _name(QUERY_SET, safe_name(name))


def kept() -> Path | None:
    """Return the kept query set the URL names, or None."""
    name = st.query_params.get(QUERY_SET)
    return kept_query_set(settings.data_root(), name) if name else None


def documents_uploaded(files: list[tuple[str, bytes]]) -> list[str]:
    """Keep uploaded documents under the data root (once per upload, replacing the set the URL named) and name
    their set in the URL; return why a file was not kept, in words."""
    marker = tuple((name, len(data)) for name, data in files)
    before = st.query_params.get(DOCUMENTS)
    last = st.session_state.get(KEPT_DOCUMENTS)
    if last and last[0] == marker and (kept_documents() or not before):
        return last[1]
    name, refused = keep_documents(settings.data_root(), files)
    if before and before != name:  # this tab's earlier upload: replaced
        forget_documents(settings.data_root(), before)
    st.session_state[KEPT_DOCUMENTS] = (marker, refused)
    _name(DOCUMENTS, name)
    return refused


def kept_documents() -> list[KeptDocument]:
    """Return the kept documents the URL names, in upload order ([] when it names none)."""
    return kept_set(settings.data_root(), st.query_params.get(DOCUMENTS))


def show_kept(container, documents: list[KeptDocument]) -> None:
    """Draw which kept documents the sweep will use, each with a button that removes it."""
    container.caption(f"Using {counted(len(documents), 'document')} as uploaded earlier; upload others to replace "
                      "them.")
    for document in documents:
        name, remove = container.columns([3, 1], vertical_alignment="center")
        size = document.size
        name.text(f"{document.name} · " + (f"{size / 1024:,.0f} KB" if size >= 1024 else f"{size} bytes"))  # as text
        if remove.button("Remove", key=f"evaluate_forget_{document.path.name}", width="stretch",
                         help="Remove this document from the sweep (and its kept copy)."):
            if not forget_document(settings.data_root(), st.query_params.get(DOCUMENTS), document.path.name):
                _name(DOCUMENTS, None)
            st.rerun()
