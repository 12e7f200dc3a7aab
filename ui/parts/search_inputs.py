"""The Search page's inputs across a reload: the query last searched and the controls in the page's URL
(st.query_params), as the Evaluate page keeps its grid (ui.parts.evaluate_inputs). A new session (a reload of the
Search page, a link) starts from the URL and searches its query again; a value the page would not offer is ignored.
A reload of another page starts a session without them: the URL is the only memory a new session has."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from rag.store import FUSIONS, MODES
from ui import state, url_inputs
from ui.url_inputs import Field

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


# session key -> its URL parameter and reading; the names are the page's own, apart from the Evaluate page's
FIELDS: dict[str, Field] = {
    state.TOP_K: Field("top_k", _number(1, 50, int)),
    state.SEARCH_MODE: Field("mode", lambda v: v if v in MODES else None),
    state.FUSION: Field("fusion", lambda v: v if v in FUSIONS else None),
    state.FUSION_WEIGHT: Field("weight", _number(0.0, 1.0)),
    state.USE_THRESHOLD: Field("threshold_on", _flag),
    state.INCLUDE_TOC: Field("toc", _flag),
    state.DOCUMENT_FILTER: Field("only", lambda v: [d for d in v.split(",") if d] or None),
}
QUERY = "search"  # the query last searched
THRESHOLD = "threshold"  # "<scale>:<minimum score>", e.g. "convex:0.45": the threshold field of that scale


def restore() -> None:
    """Give a new session's inputs their values from the URL (before they are drawn), and have its query searched."""
    if st.session_state.get(RESTORED):
        return
    st.session_state[RESTORED] = True
    url_inputs.read(FIELDS)
    params = st.query_params
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
    values = url_inputs.session_values(FIELDS)
    values[QUERY] = query
    minimum = st.session_state.get(threshold_key)
    values[THRESHOLD] = None if minimum is None else f"{threshold_key.partition('-')[2]}:{minimum:g}"
    url_inputs.write(values)
