"""A sweep's grid: the chunk sizes and overlaps of the page's fields or the CLI's flags, as configurations."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rag.chunking import MIN_CHUNK_SIZE, STRATEGIES
from rag.errors import InvalidSettingsError
from rag.evaluation.sweeps.results import SweepConfig


def parse_sizes(text: str, what: str, minimum: int) -> list[int]:
    """Return the distinct whole numbers of "200,400,800" in the order given; ValueError names the bad one."""
    values: list[int] = []
    for item in text.split(","):
        item = item.strip()
        if not item.isdigit() or int(item) < minimum:
            raise InvalidSettingsError(
                f"{what} must be whole numbers >= {minimum} separated by commas, e.g. 200,400,800; "
                f"got {item!r}")
        if int(item) not in values:
            values.append(int(item))
    return values


def parse_chunk_sizes(text: str, what: str = "chunk sizes") -> list[int]:
    """Return the chunk sizes of a sweep's grid, e.g. "200,400,800" (each at least MIN_CHUNK_SIZE tokens)."""
    return parse_sizes(text, what, MIN_CHUNK_SIZE)


def parse_overlaps(text: str, what: str = "overlaps") -> list[int]:
    """Return the overlaps of a sweep's grid, e.g. "0,50,100" (0 or more tokens)."""
    return parse_sizes(text, what, 0)


def parse_grid(chunk_sizes: str | Iterable[int], overlaps: str | Iterable[int], strategy: str = "structure",
               chunk_headers: Sequence[bool] = (False,), child_sizes: Sequence[int] = (0,)
               ) -> tuple[list[SweepConfig], list[str]]:
    """Return the configurations of a sweep's grid (the page's fields or the CLI's flags) and the skipped notes;
    InvalidSettingsError for a malformed size, or when every overlap is at least its chunk size."""
    sizes = parse_chunk_sizes(chunk_sizes) if isinstance(chunk_sizes, str) else list(chunk_sizes)
    configs, skipped = grid(sizes, parse_overlaps(overlaps) if isinstance(overlaps, str) else overlaps, strategy,
                            chunk_headers, child_sizes)
    if not configs:
        raise InvalidSettingsError("No configuration is left: every overlap is >= its chunk size. Use smaller "
                                   "overlaps.")
    return configs, skipped


def grid(chunk_sizes: Iterable[int], overlaps: Iterable[int], strategy: str = "structure",
         chunk_headers: Sequence[bool] = (False,), child_sizes: Sequence[int] = (0,)
         ) -> tuple[list[SweepConfig], list[str]]:
    """Return the configurations of chunk_sizes x overlaps (x chunk_headers x child_sizes), and a note for each
    one skipped (overlap >= size)."""
    if strategy not in STRATEGIES:
        raise InvalidSettingsError(f"Unknown chunking strategy {strategy!r}; use one of {', '.join(STRATEGIES)}.")
    configs, skipped = [], []
    for size in chunk_sizes:
        for overlap in overlaps:
            if overlap >= size:
                skipped.append(f"skipped chunk_size {size}, overlap {overlap}: overlap must be below chunk_size")
            else:
                configs += [SweepConfig(size, overlap, strategy, headed, child)
                            for headed in dict.fromkeys(chunk_headers) for child in dict.fromkeys(child_sizes)]
    return configs, skipped
