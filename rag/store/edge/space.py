"""Writes refused while the disk can still say no: the embedded engine writes through memory-mapped files, and on a
full disk it would die of SIGBUS (its write-ahead log keeps the data consistent, as after kill -9), so every write
of rag.store.edge.client first checks the free space here."""

from __future__ import annotations

import errno
import json
import shutil

from qdrant_client import models

MIN_FREE = 128 * 2**20  # bytes a write leaves free at least: the engine grows its files by up to 32 MB at once
SMALL_FREE = 4 * 2**20  # the same for payload updates of a few points


def check(path: str, size: int, reserve: int = MIN_FREE) -> None:
    """Raise OSError(ENOSPC) unless the disk holding path keeps reserve bytes free after a write of about size.

    Points and indexes need MIN_FREE; payload updates (the registry: commits, and hiding a failed write) only
    SMALL_FREE, so that the headroom left by a refused write is there for them.
    """
    needed = reserve + 4 * size
    free = free_bytes(path)
    if free < needed:
        raise OSError(errno.ENOSPC, f"disk is full: {free // 2**20} MB free, the embedded engine needs at "
                                    f"least {needed // 2**20 + 1} MB")


def free_bytes(path: str) -> int:
    """Return the bytes free for this user on the disk holding path."""
    return shutil.disk_usage(path).free


def point_size(point: models.PointStruct) -> int:
    """Return about how many bytes a point takes in the engine (vectors and payload)."""
    vectors = point.vector.values() if isinstance(point.vector, dict) else [point.vector]
    floats = sum(len(v.indices) * 2 if isinstance(v, models.SparseVector) else len(v) for v in vectors)
    return 4 * floats + len(json.dumps(point.payload or {}, default=str))
