"""Counts in words, for messages, reports and pages alike: "1 question", "2 questions", never "2 question(s)"."""

from __future__ import annotations


def counted(count: int, word: str, words: str | None = None) -> str:
    """Return "1 document" or "3 documents" (words: an irregular plural, "queries"), the count with thousands
    separators."""
    return f"{count:,} {word if count == 1 else words or word + 's'}"
