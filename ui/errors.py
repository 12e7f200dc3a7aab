"""The one way a page shows what a user can fix: a RagError as one error line. Anything else is a bug and
surfaces as one (Streamlit's traceback), never as a friendly message that hides it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import streamlit as st

from rag.errors import RagError
from rag.urls import redact_urls
from ui.render import md

T = TypeVar("T")


def show(error: RagError) -> None:
    """Draw the error's message (it says what happened and what to do) as plain text in an error box; URLs in it
    lose their user:password (rag.urls.redact_urls), whoever made the message."""
    st.error(md(redact_urls(str(error))), icon=":material/error:")


@contextmanager
def reported(stop: bool = False) -> Iterator[None]:
    """Show a RagError raised inside the block, then go on after it (or end the page's run when stop)."""
    try:
        yield
    except RagError as error:
        show(error)
        if stop:
            st.stop()


def attempt(call: Callable[..., T], *args, **kwargs) -> T | None:
    """Return call(*args, **kwargs), or None after showing the RagError it raised."""
    try:
        return call(*args, **kwargs)
    except RagError as error:
        show(error)
        return None
