"""Move a folder in qdrant-client's local format (meta.json + collection/<name>/storage.sqlite) to Qdrant Edge.

Done on the first open of such a folder (rag.store.open) or by `rag migrate`, while the folder's lock is held:

1. the old files are copied to <folder>/local-backup-<time>/ (the backup, kept afterwards);
2. every collection is read from the backup with qdrant-client and written, with its vectors, metadata and
   payloads, into Edge shards in a staging folder; the point counts of each collection are compared;
3. the staging folder's collections replace the (empty) edge/ folder in one rename; only then are the old
   files removed from the folder (the backup keeps them).

A failure before step 3 removes the staging folder and the backup copy and leaves the old files as they were.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass

from qdrant_client import QdrantClient, models

from rag.store.edge.client import EDGE_DIR, EdgeClient

OLD_META = "meta.json"
OLD_DATA = "collection"
BATCH = 512


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
    data untouched, the staging and backup copies removed) when anything fails or a count differs.
    """
    path = client.path
    if client.collection_names():
        raise MigrationFailed(f"{path} already holds collections of the new engine")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup, staging = os.path.join(path, f"local-backup-{stamp}"), os.path.join(path, f".migrating-{stamp}")
    try:
        _copy_old(path, backup)
        moved = _copy_collections(backup, staging)
        os.rmdir(os.path.join(path, EDGE_DIR))
        os.rename(os.path.join(staging, EDGE_DIR), os.path.join(path, EDGE_DIR))
    except Exception as e:
        shutil.rmtree(backup, ignore_errors=True)
        raise MigrationFailed(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__) from e
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(os.path.join(path, EDGE_DIR), exist_ok=True)
    os.remove(os.path.join(path, OLD_META))
    shutil.rmtree(os.path.join(path, OLD_DATA), ignore_errors=True)
    if not moved:
        shutil.rmtree(backup, ignore_errors=True)
        return moved, None
    return moved, backup


def _copy_old(path: str, backup: str) -> None:
    os.makedirs(backup)
    shutil.copy2(os.path.join(path, OLD_META), os.path.join(backup, OLD_META))
    if os.path.isdir(os.path.join(path, OLD_DATA)):
        shutil.copytree(os.path.join(path, OLD_DATA), os.path.join(backup, OLD_DATA))


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
