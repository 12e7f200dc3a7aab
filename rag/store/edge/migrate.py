"""Move a folder in qdrant-client's local format (meta.json + collection/<name>/storage.sqlite) to Qdrant Edge.

Done on the first open of such a folder (rag.store.open) or by `rag migrate`, while the folder's lock is held:

1. the old files are copied to <folder>/local-backup-<time>/ (the backup, kept afterwards); its MARKER file says
   "complete": false from the start and is replaced by "complete": true, with the list of files copied, last;
2. every collection is read from the backup with qdrant-client and written, with its vectors, metadata and
   payloads, into Edge shards in a staging folder; the point counts of each collection are compared;
3. the staging folder's collections replace the (empty) edge/ folder in one rename; only then are the old
   files removed from the folder (the backup keeps them).

A failure before step 3 removes the staging folder and the backup copy and leaves the old files as they were.
A kill leaves no second backup: the next open removes the staging folder (rag.store.edge.leftovers) and an
unfinished backup (its marker says "complete": false, or it is empty), reuses a complete one that holds the old
files as they are now (same names, sizes and times), and after a kill between steps 3 and the removal of the old
files only removes them (finish). A backup without a marker comes from an older RAG Lab and is left alone.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from dataclasses import dataclass

from qdrant_client import QdrantClient, models

from rag.files import write_atomic
from rag.store.edge.client import EDGE_DIR, EdgeClient

OLD_META = "meta.json"
OLD_DATA = "collection"
BACKUP_PREFIX = "local-backup-"
MARKER = "backup.json"  # in a backup: {"complete": false} while it is copied; {"complete": true, "files": ...} last
BATCH = 512
logger = logging.getLogger(__name__)


class MigrationFailed(RuntimeError):
    """The move did not finish; the old data is untouched."""


@dataclass(frozen=True)
class Moved:
    """One collection moved: its name and point count (the same before and after)."""

    name: str
    points: int


def has_local_format(path: str) -> bool:
    """Return whether path holds qdrant-client local-mode data (its meta.json)."""
    return os.path.isfile(os.path.join(path, OLD_META))


def migrate(client: EdgeClient) -> tuple[list[Moved], str | None]:
    """Move the local-format data in client's folder into it; return (collections moved, backup folder or None).

    client must hold no collections yet (the move replaces its empty edge/ folder). MigrationFailed (the old
    data untouched, the staging copy and a backup made now removed) when anything fails or a count differs.
    """
    path = client.path
    if client.collection_names():
        raise MigrationFailed(f"{path} already holds collections of the new engine")
    staging = os.path.join(path, f".migrating-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}")
    backup, made = None, False
    try:
        backup, made = _backup(path)
        moved = _copy_collections(backup, staging)
        os.rmdir(os.path.join(path, EDGE_DIR))
        os.rename(os.path.join(staging, EDGE_DIR), os.path.join(path, EDGE_DIR))
    except Exception as e:
        if made:
            shutil.rmtree(backup, ignore_errors=True)
        raise MigrationFailed(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__) from e
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(os.path.join(path, EDGE_DIR), exist_ok=True)
    _remove_old(path)
    if not moved:
        shutil.rmtree(backup, ignore_errors=True)
        return moved, None
    return moved, backup


def finish(path: str) -> str | None:
    """Remove the old files a move killed after its rename left beside the moved collections (only if a complete
    backup holds them as they are); return that backup, else None (nothing removed)."""
    backup = _complete_backup(path, _old_files(path))
    if backup is not None:
        _remove_old(path)
        logger.warning("Finished the move of %s to Qdrant Edge that was stopped before it removed the old files; "
                       "they are kept in the complete backup %s.", path, backup)
    return backup


def _remove_old(path: str) -> None:
    os.remove(os.path.join(path, OLD_META))
    shutil.rmtree(os.path.join(path, OLD_DATA), ignore_errors=True)


def _backup(path: str) -> tuple[str, bool]:
    """Return (the complete backup of path's old files, whether it was made now): unfinished ones of killed moves
    are removed first, and a complete one that holds the old files as they are is reused."""
    files = _old_files(path)
    for name in _backups(path):
        folder = os.path.join(path, name)
        marker = _marker(folder)
        if (marker is None and not os.listdir(folder)) or (marker or {}).get("complete") is False:
            shutil.rmtree(folder, ignore_errors=True)
            logger.warning("Removed the unfinished backup %s of a move that was stopped while copying.", folder)
    reused = _complete_backup(path, files)
    if reused is not None:
        logger.warning("Reusing the complete backup %s of the same old files (a move was stopped after it).", reused)
        return reused, False
    backup = os.path.join(path, BACKUP_PREFIX + time.strftime("%Y%m%d-%H%M%S"))
    while os.path.exists(backup):
        backup += "-1"
    os.makedirs(backup)
    _write_marker(backup, {"complete": False})
    for relative in files:
        target = os.path.join(backup, relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(path, relative), target)
    _write_marker(backup, {"complete": True, "files": files, "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return backup, True


def _old_files(path: str) -> dict[str, list[int]]:
    """Return {relative path: [size, mtime_ns]} of the old engine's files in path (meta.json, collection/...)."""
    found = [OLD_META] if os.path.isfile(os.path.join(path, OLD_META)) else []
    for folder, _, names in os.walk(os.path.join(path, OLD_DATA)):
        found += [os.path.relpath(os.path.join(folder, n), path) for n in names]
    stats = {relative: os.stat(os.path.join(path, relative)) for relative in sorted(found)}
    return {relative: [s.st_size, s.st_mtime_ns] for relative, s in stats.items()}


def _backups(path: str) -> list[str]:
    return sorted(n for n in os.listdir(path) if n.startswith(BACKUP_PREFIX) and os.path.isdir(os.path.join(path, n)))


def _complete_backup(path: str, files: dict[str, list[int]]) -> str | None:
    """Return a backup in path whose marker says it is complete and lists exactly files, else None."""
    for name in _backups(path):
        marker = _marker(os.path.join(path, name)) or {}
        if marker.get("complete") is True and marker.get("files") == files:
            return os.path.join(path, name)
    return None


def _marker(backup: str) -> dict | None:
    try:
        with open(os.path.join(backup, MARKER), encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {"complete": False}
    except FileNotFoundError:
        return None
    except (OSError, ValueError):  # half written: the copy never finished
        return {"complete": False}


def _write_marker(backup: str, data: dict) -> None:
    """Write the backup's marker whole (fsynced, renamed into place): it is the last thing a finished copy writes."""
    write_atomic(os.path.join(backup, MARKER), json.dumps(data))


def _copy_collections(source: str, staging: str) -> list[Moved]:
    """Copy every collection of the local-format folder source into a new Edge folder staging."""
    old, new = QdrantClient(path=source), EdgeClient(staging)
    try:
        return [_copy_collection(old, new, c.name) for c in old.get_collections().collections]
    finally:
        old.close()
        new.close()


def _copy_collection(old: QdrantClient, new: EdgeClient, name: str) -> Moved:
    config = old.get_collection(name).config
    new.create_collection(name, vectors_config=config.params.vectors,
                          sparse_vectors_config=config.params.sparse_vectors, metadata=config.metadata)
    offset = None
    while True:
        points, offset = old.scroll(name, limit=BATCH, offset=offset, with_payload=True, with_vectors=True)
        new.upsert(name, [models.PointStruct(id=p.id, vector=p.vector or {}, payload=p.payload) for p in points])
        if offset is None:
            break
    before, after = old.count(name, exact=True).count, new.count(name).count
    if before != after:
        raise MigrationFailed(f"collection '{name}' has {before} points but {after} arrived")
    return Moved(name, after)
