"""The one way a page shows what a user can fix: a RagError as one error line. Anything else is a bug and
surfaces as one (Streamlit's traceback), never as a friendly message that hides it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


@dataclass
class Report:
    """What `reported` saw: failed is True when the block raised a RagError (shown already)."""

    failed: bool = False


@contextmanager
def reported(stop: bool = False) -> Iterator[Report]:
    """Show a RagError raised inside the block, then go on after it (or end the page's run when stop).

    `with errors.reported() as report: ...` then `if report.failed: return` leaves a function after the error.
    Any other exception is a bug and propagates (Streamlit shows its traceback).
    """
    report = Report()
    try:
        yield report
    except RagError as error:
        report.failed = True
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
