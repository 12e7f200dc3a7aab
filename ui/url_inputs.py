"""A page's inputs kept in its URL (st.query_params), so a reload or a link finds them: read into the session before
the widgets are drawn, written back after each run. ui.parts.search_inputs and ui.parts.evaluate_inputs name their
fields; a value the page would not offer (its reader returns None) is ignored."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import streamlit as st


@dataclass(frozen=True)
class Field:
    param: str  # the URL parameter
    read: Callable[[str], object]  # its value as the widget takes it, or None when the page would not offer it
    start: object = None  # the value without one in the URL (None: the widget's own default)


def read(fields: Mapping[str, Field]) -> None:
    """Give each session key (a widget's) that is not set yet its value from the URL, else its field's start."""
    for key, field in fields.items():
        if key in st.session_state:
            continue
        value = field.read(st.query_params[field.param]) if field.param in st.query_params else None
        if value is None:
            value = field.start
        if value is not None:
            st.session_state[key] = value


def as_text(value: object) -> str | None:
    """Return a value as a URL parameter: a list joined by commas, a flag as 1 or 0; None for no value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(int(value))
    return ",".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def write(values: Mapping[str, object]) -> None:
    """Set each URL parameter to its value (as_text), only where it changed; None or "" removes the parameter."""
    for param, value in values.items():
        text = as_text(value)
        if not text:
            if param in st.query_params:
                del st.query_params[param]
        elif st.query_params.get(param) != text:
            st.query_params[param] = text


def session_values(fields: Mapping[str, Field]) -> dict[str, object]:
    """Return each field's URL parameter with its session key's value now (None when unset)."""
    return {field.param: st.session_state.get(key) for key, field in fields.items()}
