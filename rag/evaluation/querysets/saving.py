"""Saving a query set: one writer at a time, whole files, the version entry before the file, no leftovers.

Every change of a query set file (a judgment from `rag judge`, the Search or Evaluate page or the LLM judge; a
query set started for judging) reads the file, changes it and writes it back. `saving(path)` serialises them: it
holds an exclusive flock on a lock file beside the query set (`.NAME.lock`, kept there) for the whole
read-modify-write, version entry included. A flock belongs to an open file description and every `saving` opens
the lock file anew, so it keeps out another process (the app beside `rag judge --llm`, two CLI runs) and another
thread of the same process (two tabs of the app) alike; a `saving` block must not open a second one on the same
file (it would wait for itself). Readers take no lock: a file is only ever replaced whole.

Inside the lock no other writer of this query set is alive, so its temporary files (`.NAME.*.tmp`) are leftovers
of a writer that was killed: `saving` removes them before the new write.

write_atomic writes through rag.files.write_atomic (a temporary file in the same folder, fsynced, renamed over the
file): a killed writer leaves the old file whole. A symlinked query set is written at the link's target (the link
stays), and the new file keeps the old one's permission bits (a new file gets the umask's, as any file the user
creates).
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rag import files
from rag.errors import QuerySetError


def real_path(path: str | Path) -> Path:
    """Return the file a query set path names: a symlink's target (followed to the end), else the path itself."""
    return Path(os.path.realpath(path))


@contextmanager
def saving(path: str | Path) -> Iterator[Path]:
    """Hold the write lock of the query set at path while the block reads, changes and writes it; yield the file
    to write (real_path). QuerySetError when its folder cannot hold the lock file."""
    real = real_path(path)
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        lock = os.open(real.with_name(f".{real.name}.lock"), os.O_RDONLY | os.O_CREAT, 0o666)  # a new description
    except OSError as error:
        raise QuerySetError(f"Cannot write {path}: {error.strerror or error}. The query set is unchanged.") from None
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError as error:  # a file system without locks (ENOLCK)
            raise QuerySetError(f"Cannot lock {path} for writing: {error.strerror or error}. The query set is "
                                "unchanged; keep it on a local disk.") from None
        sweep_leftovers(real)
        yield real
    finally:
        os.close(lock)  # releases the lock, also when the block raised


def sweep_leftovers(path: Path) -> list[str]:
    """Remove the temporary files of earlier writers of path (call it holding the lock); return their names."""
    leftover = re.compile(rf"\.{re.escape(path.name)}\.[^.]+\.tmp")
    try:
        names = [name for name in os.listdir(path.parent) if leftover.fullmatch(name)]
    except OSError:
        return []
    for name in names:
        (path.parent / name).unlink(missing_ok=True)
    return names


def write_atomic(path: str | Path, content: str) -> None:
    """Write content to path through a temporary file in the same folder and os.replace: all or nothing; at a
    symlink's target, keeping the old file's permission bits."""
    path = real_path(path)
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as error:
        raise QuerySetError(f"Cannot write {path.name}: it would hold text that is not UTF-8 "
                            f"({content[error.start:error.end]!r}). The query set is unchanged.") from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_atomic(path, data)
    except OSError as error:
        raise QuerySetError(f"Cannot write {path}: {error.strerror or error}. The query set is unchanged.") from None

