"""The reranking control of the Search, Context and Evaluate pages: a spec (empty: off) and a depth, one per session.

The reranker is made by rag.rerank.get_reranker with the data root as the limit of a `local:<path>` folder (the
rule for every model folder typed in the browser), a `tei:<url>` server only when it is the operator's TEI_URL (or
RAG_UI_SETTINGS=1 lets visitors choose servers), and the base URL and key configured beside each other in the
environment or secrets.toml (ui.settings), so a key goes only to its own URL. One reranker per spec and process.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import streamlit as st

from rag.errors import InvalidSettingsError
from rag.evaluation import SearchMode, SweepResult, effect_note, effect_words
from rag.providers import split_spec
from rag.rerank import DEFAULT_DEPTH, MAX_DEPTH, RERANK_SPECS, SCORE_KIND, SERVICES, TEI, Reranker, get_reranker
from rag.settings import check_url, display_url, same_url
from rag.store import Hit
from ui import errors, settings
from ui.render import md
from ui.workspace import Workspace

SPEC = "rerank_spec"
DEPTH = "rerank_depth"
SAVED = "rerank_saved"  # (spec, depth) as last typed, on any page
PREFILLED = "rerank_prefilled"  # ((store, collection), the reranker saved with it) last put in the control
HELP = (f"Reorder the first candidates with a reranker: {RERANK_SPECS}. Empty: off. No reranker model ships with "
        "RAG Lab: start one, e.g. text-embeddings-inference with BAAI/bge-reranker-v2-m3 (see docs/reranking.md). "
        "Scores are then the reranker's own.")


def control(container=st, ws: Workspace | None = None) -> tuple[str, int]:
    """Draw the spec field and the depth beside it; return (spec, depth), ("", 0) when reranking is off.

    The same two values on every page: written back before the widgets are drawn (Streamlit's way to keep a
    widget's value across pages), and kept under SAVED for a page that runs after the widgets were dropped.
    ws: the spec is pre-filled with its collection's saved reranker when the collection changes (prefill).
    """
    prefilled = prefill(ws) if ws is not None else ""
    saved = st.session_state.get(SAVED, ("", DEFAULT_DEPTH))
    for key, value in zip((SPEC, DEPTH), saved, strict=True):
        st.session_state[key] = st.session_state.get(key, value)
    left, right = container.columns([3, 1])
    spec = left.text_input("Reranker (optional)", key=SPEC, placeholder="off · e.g. tei:http://localhost:8080",
                           help=HELP)
    depth = right.number_input("rerank depth", 1, MAX_DEPTH, step=1, key=DEPTH,
                               help="How many of the search's first candidates the reranker reads per query.")
    st.session_state[SAVED] = (spec, int(depth))
    if prefilled and spec.strip() == prefilled:
        container.caption(f"The reranker saved with '{md(ws.collection)}' (by `rag sweep --apply-best` or \"Use this "
                          "configuration\"): its default, as on the command line. Change or clear it to search "
                          "without it.")
    return (spec.strip(), int(depth)) if spec.strip() else ("", 0)


def prefill(ws: Workspace) -> str:
    """Return the reranker saved with the workspace's collection ("" for none); when the collection changed since
    the last call, put it in the control first (a collection without one turns off the reranker the last one
    pre-filled, and leaves one the user typed)."""
    key = (ws.location, ws.collection)
    last = st.session_state.get(PREFILLED)
    if last is not None and last[0] == key:
        return last[1]
    spec = ""
    if ws.info is not None:
        with errors.reported() as report:
            spec = (ws.store.collection_setting(ws.collection, "rerank") or "").strip()
        if report.failed:
            spec = ""
    typed, depth = st.session_state.get(SAVED, ("", DEFAULT_DEPTH))
    if spec or (last is not None and typed.strip() == last[1] and last[1]):
        st.session_state[SAVED] = (spec, depth)
        st.session_state[SPEC] = spec
    st.session_state[PREFILLED] = (key, spec)
    return spec


def reranker(spec: str) -> Reranker | None:
    """Return the reranker of spec (None for ""); a RagError saying what to do when it cannot be made."""
    if not spec.strip():
        return None
    dialect, url = split_spec(spec)
    service = SERVICES.get(dialect)
    where = settings._source(service) if service else {}  # noqa: SLF001 (where its URL and key are configured)
    names = (service.url_variable, service.key_variable or "") if service else ()
    url = check_url(url, "The TEI URL in tei:<url>", default_scheme=True) if dialect == "tei" and url else url
    if dialect == "tei" and not settings.ui_settings_allowed() and not same_url(url, where.get(TEI.url_variable)):
        raise InvalidSettingsError(f"The reranker server '{display_url(url)}' is not the operator's: a server typed "
                                   "here gets the documents' text, so only the one in TEI_URL is allowed (or all, "
                                   "with RAG_UI_SETTINGS=1). Ask the operator to set TEI_URL to it.")
    return _made(spec.strip(), str(settings.data_root()), tuple((n, where.get(n) or "") for n in names))


@st.cache_resource(show_spinner=False)
def _made(spec: str, root: str, source: tuple[tuple[str, str], ...]) -> Reranker:
    return get_reranker(spec, root=Path(root), source=dict(source))


BEFORE_COLUMN = st.column_config.TextColumn(width=95, help="rank · score the search gave it (the mode's scale), "
                                           "before the reranker reordered the first candidates")


def before(hit: Hit) -> dict[str, str]:
    """Return the hit table's "before rerank" cell of a reranked hit ("#3 · 0.412"), or nothing."""
    if hit.score_kind != SCORE_KIND or hit.retrieved_rank is None:
        return {}
    score = "" if hit.retrieved_score is None else f" · {hit.retrieved_score:.3f}"
    return {"before rerank": f"#{hit.retrieved_rank}{score}"}


def with_rerank(modes: list[SearchMode], spec: str) -> list[SearchMode]:
    """Return each mode without and with the reranker (the sweep's rerank dimension), or modes when it is off."""
    return [replace(m, rerank=on) for m in modes for on in (False, True)] if spec else modes


def effect(result: SweepResult, metric: str) -> None:
    """Say for each configuration and mode whether the reranker helped: on minus off, paired over the queries."""
    if not result.rerank:
        return
    st.subheader(f"Does reranking help? ({metric})")
    lines = effect_words(result.rerank_effect(metric), metric)
    st.markdown("\n".join(f"- {md(line)}" for line in lines) or "No row ran both with and without the reranker.")
    st.caption(md(effect_note(result.rerank)))
