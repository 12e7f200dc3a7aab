"""Documents uploaded for a sweep in the app, kept as files under the data root (<root>/evaluate-documents/<set>/),
so a page can run its sweep on them again after a reload.

A set is named by 12 hex characters of its files' names and bytes; a name that is not such a set reads nothing.
Each file is stored under a safe name (kept_sets.safe_name: always inside its set's folder, whatever name the
upload had), and the name it was uploaded with is kept beside it (names.json) as the document's title only, so
the query set's labels still find it; it never becomes a path. A file is kept only if an upload of it may be read:
a PDF, Markdown or text file within RAG_MAX_FILE_MB (rag.documents.loader.check_size).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.documents import check_size
from rag.errors import DocumentError
from rag.evaluation.querysets.kept_sets import safe_name, write_whole

FOLDER = "evaluate-documents"
SUFFIXES = (".pdf", ".md", ".markdown", ".txt")
NAMES = "names.json"  # [{"name": as uploaded, "file": its safe name}, ...] in upload order
SET_NAME = re.compile(r"[0-9a-f]{12}")
MAX_TITLE = 200


@dataclass(frozen=True)
class KeptDocument:
    name: str  # as uploaded, without a folder: the document's title
    path: Path  # <root>/evaluate-documents/<set>/<safe name>

    @property
    def size(self) -> int:
        """Return the file's size in bytes."""
        return self.path.stat().st_size


def upload_name(name: str) -> str:
    """Return an uploaded file's name without any folder and control characters, at most MAX_TITLE characters."""
    base = re.split(r"[\\/]", name)[-1]
    return re.sub(r"[\x00-\x1f\x7f]", "", base)[:MAX_TITLE] or "document.txt"


def set_name(files: Sequence[tuple[str, bytes]]) -> str:
    """Return the name of a set of files: 12 hex characters of their names and bytes, in order."""
    digest = hashlib.sha256()
    for name, data in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:12]


def keep_documents(root: str | Path, files: Sequence[tuple[str, bytes]]) -> tuple[str | None, list[str]]:
    """Return (the kept set's name, or None when no file could be kept; why each other file was refused) after
    writing the files an upload may hold as <root>/evaluate-documents/<set>/ (each file whole, then its names)."""
    refused, kept = [], []
    for name, data in files:
        title = upload_name(name)
        if not title.lower().endswith(SUFFIXES):
            refused.append(f"'{title}' is not a PDF, Markdown or text file: not kept.")
            continue
        try:
            check_size(len(data), title)
        except DocumentError as error:
            refused.append(f"{error} Not kept.")
            continue
        kept.append((title, data))
    if not kept:
        return None, refused
    name = set_name(kept)
    folder = Path(root) / FOLDER / name
    entries, used = [], set()
    for title, data in kept:
        file = _unused(safe_name(title, "document", "txt"), used)
        write_whole(folder, file, data)
        entries.append({"name": title, "file": file})
    for stale in folder.iterdir():  # a set written before with other files
        if stale.name not in used and stale.name != NAMES:
            stale.unlink(missing_ok=True)
    write_whole(folder, NAMES, json.dumps(entries, ensure_ascii=False).encode())
    return name, refused


def _unused(file: str, used: set[str]) -> str:
    """Return file, or file with -2, -3, ... before its suffix when used already holds it; add it to used."""
    stem, dot, suffix = file.rpartition(".")
    candidate, number = file, 2
    while candidate in used:
        candidate, number = f"{stem}-{number}{dot}{suffix}", number + 1
    used.add(candidate)
    return candidate


def kept_documents(root: str | Path, name: str | None) -> list[KeptDocument]:
    """Return the documents of the kept set of that name, in upload order; [] when there is no such set."""
    folder = _folder(root, name)
    if folder is None or not (folder / NAMES).is_file():
        return []
    try:
        entries = json.loads((folder / NAMES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    found = []
    for entry in entries if isinstance(entries, list) else []:
        file = str(entry.get("file", "")) if isinstance(entry, dict) else ""
        if file and safe_name(file, "document", "txt") == file and (folder / file).is_file():
            found.append(KeptDocument(upload_name(str(entry.get("name") or file)), folder / file))
    return found


def forget_document(root: str | Path, name: str | None, file: str) -> list[KeptDocument]:
    """Return the documents left in the kept set after removing the one stored as file (a name it lists, else
    nothing is removed); the set goes with its last document."""
    kept = kept_documents(root, name)
    left = [d for d in kept if d.path.name != file]
    if len(left) == len(kept):
        return kept
    if not left:
        forget_documents(root, name)
        return []
    folder = left[0].path.parent
    write_whole(folder, NAMES, json.dumps([{"name": d.name, "file": d.path.name} for d in left],
                                          ensure_ascii=False).encode())
    (folder / file).unlink(missing_ok=True)
    return left


def forget_documents(root: str | Path, name: str | None) -> None:
    """Remove the kept set of that name with its files (nothing when there is no such set)."""
    folder = _folder(root, name)
    if folder is not None and folder.is_dir():
        shutil.rmtree(folder, ignore_errors=True)


def _folder(root: str | Path, name: str | None) -> Path | None:
    """Return the folder of the set of that name, or None when name is not a set's name."""
    return Path(root) / FOLDER / name if name and SET_NAME.fullmatch(name) else None
