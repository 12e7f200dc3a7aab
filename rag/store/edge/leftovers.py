"""What a killed process left in an embedded folder outside a collection's live files, removed at the next open.

EdgeClient calls sweep(path) right after it took the folder's lock: the lock says no other process has the folder
open, so these belong to no live writer (an index build's `.index-*` copy has its own lock: EdgeClient checks it):

    <folder>/.migrating-*/                            the staging folder of a killed move (rag.store.edge.migrate)
    <folder>/.reads.json.*.tmp                        an endpoint file not yet renamed into place (rag.store.reads)
    <folder>/edge/<name>/.collection.json.*.tmp       a collection.json not yet renamed into place (a killed delete
                                                      or index record in an indexed collection)
    <folder>/edge/<name>/shard/temp_segments/segment_builder_*
                                                      a segment the engine was building when a vacuum (after a delete
                                                      or a replacing re-ingest) was killed: the engine never removes
                                                      it, and it can be larger than the collection

None of them holds data: a collection's points are in its segments and write-ahead log, replayed at the open.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import shutil

from rag.files import TEMPORARY

logger = logging.getLogger(__name__)

EDGE_DIR, CONFIG_FILE, SHARD_DIR = "edge", "collection.json", "shard"  # as rag.store.edge.client lays them out
TEMP_SEGMENTS = "temp_segments"
STAGING = ".migrating-*"


def sweep(path: str) -> list[str]:
    """Remove the leftovers of killed processes listed in the module from the folder at path (its lock held); return
    the paths removed, each logged."""
    found = _matching(path, [STAGING, TEMPORARY.format(name="reads.json")])
    root = os.path.join(path, EDGE_DIR)
    for name in _entries(root):
        if name.startswith("."):
            continue  # staging, deleted and index folders: EdgeClient decides about those
        folder = os.path.join(root, name)
        found += _matching(folder, [TEMPORARY.format(name=CONFIG_FILE), f"{CONFIG_FILE}.*.tmp"])  # and as before
        found += _matching(os.path.join(folder, SHARD_DIR, TEMP_SEGMENTS), ["segment_builder_*"])
    for leftover in found:
        if os.path.isdir(leftover) and not os.path.islink(leftover):
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            try:
                os.remove(leftover)
            except OSError:
                continue
        logger.info("Removed %s, left by a process that was killed while writing it.", leftover)
    return found


def _entries(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:  # not there (a new folder, a shard never vacuumed)
        return []


def _matching(folder: str, patterns: list[str]) -> list[str]:
    return [os.path.join(folder, name) for name in _entries(folder)
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)]
