"""Files written whole or not at all: the one atomic writer of rag (query sets and judgments, kept query sets,
synthetic sets, the document archive, collection.json, a move's backup marker, the read server's endpoint).

write_atomic writes a temporary file beside the target (`.NAME.<hex>.tmp`, hidden, in the same folder so the
rename stays on one file system), fsyncs it, renames it over the target and fsyncs the folder, so a kill or a
power cut leaves the old file or the new one, never a part. A failure removes the temporary file and raises the
OSError; a writer killed before its rename leaves its temporary file, which the owner of the folder sweeps up
(TEMPORARY is its pattern).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

TEMPORARY = ".{name}.*.tmp"  # what a killed writer of NAME leaves (fnmatch pattern, NAME put in)


def write_atomic(path: str | Path, data: bytes | str, mode: int | None = None) -> Path:
    """Return path after writing data (text as UTF-8) to it whole (see module).

    mode None: the file keeps an existing file's permission bits, and a new one gets the umask's (as any file the
    user creates); an int: the file gets exactly that mode, from the start (a secret: 0o600).
    """
    path = Path(path)
    content = data.encode("utf-8") if isinstance(data, str) else data
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
    try:
        with os.fdopen(descriptor, "wb") as file:
            kept = _mode(path) if mode is None else mode
            if kept is not None:
                os.fchmod(file.fileno(), kept)
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)
    return path


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return None


def _sync_folder(folder: Path) -> None:
    """Make the rename durable; a file system that cannot fsync a folder keeps it as it can."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
