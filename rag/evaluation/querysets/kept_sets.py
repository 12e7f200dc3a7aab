"""Query sets uploaded in the app, kept as files under the data root (<root>/query-sets/), so a page can read its
query set again after a reload. A name is reduced to a plain file name of safe characters: a kept file is always
inside that folder, whatever name the upload had."""

from __future__ import annotations

import re
from pathlib import Path

from rag.files import write_atomic

FOLDER = "query-sets"
SUFFIXES = (".jsonl", ".csv", ".json")
MAX_NAME = 100


def safe_name(name: str, stem_if_none: str = "query-set", suffix_if_none: str = "jsonl") -> str:
    """Return name as a file name of letters, digits, '.', '-' and '_' (others become '_'), without a folder or a
    leading dot, at most MAX_NAME characters, keeping its suffix; "query-set.jsonl" when nothing is left."""
    base = re.split(r"[\\/]", name)[-1]
    stem, dot, suffix = base.rpartition(".")
    stem, suffix = (stem, suffix) if dot else (base, "")
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", stem).lstrip("._")[: MAX_NAME - 8] or stem_if_none
    suffix = re.sub(r"[^A-Za-z0-9]", "", suffix).lower()
    return f"{stem}.{suffix}" if suffix else f"{stem}.{suffix_if_none}"


def keep_query_set(root: str | Path, name: str, data: bytes) -> Path:
    """Write data as <root>/query-sets/<safe name> (whole or not at all) and return its path."""
    return write_whole(Path(root) / FOLDER, safe_name(name), data)


def write_whole(folder: Path, name: str, data: bytes) -> Path:
    """Write data as folder/name, whole or not at all (rag.files.write_atomic), and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_atomic(folder / name, data, mode=0o600)  # the upload: this user only, as before


def kept_query_set(root: str | Path, name: str) -> Path | None:
    """Return the kept query set of that name (as safe_name makes it), or None when there is none."""
    if not name or safe_name(name) != name or not name.lower().endswith(SUFFIXES):
        return None
    path = Path(root) / FOLDER / name
    return path if path.is_file() else None
