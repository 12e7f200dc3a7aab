"""The argument types of eval and sweep: cut-offs, chunk sizes, chunk header settings, search modes; each a usage
error (exit 2) when malformed."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from rag.chunking import parse_chunk_headers
from rag.errors import InvalidSettingsError
from rag.evaluation import parse_ks, parse_modes


def ks_option(text: str) -> tuple[int, ...]:
    try:
        return parse_ks(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def sizes_option(read: Callable[[str, str], list[int]], what: str) -> Callable[[str], list[int]]:
    def parse(text: str) -> list[int]:
        try:
            return read(text, what)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def headers_option(text: str) -> list[bool]:
    """Return the chunk header settings of "on", "off" or "on,off"; usage error otherwise."""
    try:
        return list(dict.fromkeys(parse_chunk_headers(item) for item in text.split(",")))
    except InvalidSettingsError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def modes_option(text: str) -> str:
    """Return text after checking each of its modes (the fusion is applied later); usage error if unknown."""
    try:
        parse_modes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text
