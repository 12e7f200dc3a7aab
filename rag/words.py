"""Words for messages, reports and pages alike: counts ("1 question", "2 questions", never "2 question(s)") and
text shortened to one line (the one rule the CLI, the pages and the HTTP edge share)."""

from __future__ import annotations


def counted(count: int, word: str, words: str | None = None) -> str:
    """Return "1 document" or "3 documents" (words: an irregular plural, "queries"), the count with thousands
    separators."""
    return f"{count:,} {word if count == 1 else words or word + 's'}"


def shorten(text: str, limit: int = 200) -> str:
    """Return text on one line, cut to at most `limit` characters with an ellipsis (for messages and tables)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
