"""Words for messages, reports and pages alike: counts ("1 question", "2 questions", never "2 question(s)"), the
word or verb that agrees with a count (plural: "is" / "are") and
text shortened to one line (the one rule the CLI, the pages and the HTTP edge share)."""

from __future__ import annotations


def counted(count: int, word: str, words: str | None = None) -> str:
    """Return "1 document" or "3 documents" (words: an irregular plural, "queries"), the count with thousands
    separators."""
    return f"{count:,} {plural(count, word, words)}"


def plural(count: int, word: str, words: str | None = None) -> str:
    """Return word for a count of one, else its plural (words, or word + "s"): the page or pages, is or are, the
    verb after a count (plural(n, "is", "are"))."""
    return word if count == 1 else words or word + "s"


def shorten(text: str, limit: int = 200) -> str:
    """Return text on one line, cut to at most `limit` characters with an ellipsis (for messages and tables)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
