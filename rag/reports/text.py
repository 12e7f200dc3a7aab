"""Text on one line for a table cell or a message: the one rule for shortening, used by the pages and the CLI."""

from __future__ import annotations


def preview(text: str, width: int = 90) -> str:
    """Return text on one line (runs of white space as one space), cut to width characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
