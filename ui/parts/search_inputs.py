"""The Search page's inputs across a reload: the query last searched and the controls in the page's URL
(st.query_params), as the Evaluate page keeps its grid (ui.parts.evaluate_inputs). A new session (a reload of the
Search page, a link) starts from the URL and searches its query again; a value the page would not offer is ignored.
A reload of another page starts a session without them: the URL is the only memory a new session has."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from rag.store import FUSIONS, MODES
from ui import state

RESTORED = "search_restored"  # this session has read the URL once


def _number(low: float, high: float | None, kind: type = float) -> Callable[[str], object]:
    def read(value: str) -> object:
        try:
            number = kind(value)
        except ValueError:
            return None
        return number if low <= number and (high is None or number <= high) else None

    return read


def _flag(value: str) -> bool | None:
    return {"1": True, "0": False}.get(value)


# session key -> (URL parameter, its reading (None: not a value the page offers)); the names are the page's own,
# apart from the Evaluate page's
FIELDS: dict[str, tuple[str, Callable[[str], object]]] = {
    state.TOP_K: ("top_k", _number(1, 50, int)),
    state.SEARCH_MODE: ("mode", lambda v: v if v in MODES else None),
    state.FUSION: ("fusion", lambda v: v if v in FUSIONS else None),
    state.FUSION_WEIGHT: ("weight", _number(0.0, 1.0)),
    state.USE_THRESHOLD: ("threshold_on", _flag),
    state.INCLUDE_TOC: ("toc", _flag),
    state.DOCUMENT_FILTER: ("only", lambda v: [d for d in v.split(",") if d] or None),
}
QUERY = "search"  # the query last searched
THRESHOLD = "threshold"  # "<scale>:<minimum score>", e.g. "convex:0.45": the threshold field of that scale


def restore() -> None:
    """Give a new session's inputs their values from the URL (before they are drawn), and have its query searched."""
    if st.session_state.get(RESTORED):
        return
    st.session_state[RESTORED] = True
    params = st.query_params
    for key, (param, read) in FIELDS.items():
        value = read(params[param]) if param in params and key not in st.session_state else None
        if value is not None:
            st.session_state[key] = value
    scale, _, minimum = params.get(THRESHOLD, "").partition(":")
    key = f"{state.THRESHOLD}-{scale}"
    if scale.isalnum() and key not in st.session_state and _number(0.0, None)(minimum) is not None:
        st.session_state[key] = float(minimum)
    query = params.get(QUERY, "")
    if query.strip() and len(query) <= 1000 and state.get(state.QUERY) is None:
        state.put(state.QUERY, query)
        state.put(state.SUBMITTED_QUERY, query)  # the results fragment searches it, as after a click on Search


def remember(query: str | None, threshold_key: str) -> None:
    """Write the query last searched and the controls as they are now into the URL, so a reload finds them."""
    values = {param: st.session_state.get(key) for key, (param, _) in FIELDS.items()}
    values[QUERY] = query
    minimum = st.session_state.get(threshold_key)
    values[THRESHOLD] = None if minimum is None else f"{threshold_key.partition('-')[2]}:{minimum:g}"
    for param, value in values.items():
        text = (None if value is None else ",".join(value) if isinstance(value, list) else
                str(int(value)) if isinstance(value, bool) else str(value))
        if text is None or text == "":
            if param in st.query_params:
                del st.query_params[param]
        elif st.query_params.get(param) != text:
            st.query_params[param] = text
