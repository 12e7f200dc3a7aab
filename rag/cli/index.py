"""`python -m rag index`: the HNSW index of an embedded collection (rag.store.indexing).

    rag index [--collection C] [--status] [--json]

Without --status it builds the index now, whatever the collection's size (the build runs in a child process and
measures recall@10 against exact search), and prints the state; --status only prints it. `rag ingest` builds the
index by itself once a collection reaches RAG_INDEX_MIN_POINTS chunks (--no-index: not now).
"""

from __future__ import annotations

import argparse
import json

from rag.cli import common
from rag.cli.store_options import add_collection, store_of, store_options
from rag.errors import StoreError


def run_index(args: argparse.Namespace) -> int:
    store = store_of(args, read_only=args.status)  # --status only reads: beside the app, through it
    state = store.index_state(args.collection)
    if state is None:
        raise StoreError(f"Qdrant at {store.location} indexes its collections itself (HNSW, in the background); "
                         "`rag index` is for the embedded engine.")
    if not args.status:
        state = common.build_index(store, args.collection)
    if args.json:
        print(json.dumps(state.as_json(), ensure_ascii=False))
    else:
        print(state.summary())
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    index = commands.add_parser("index", parents=[store_options()],
                                help="build (or show) the HNSW index of an embedded collection")
    add_collection(index)
    index.add_argument("--status", action="store_true", help="only print the index state, build nothing")
    index.add_argument("--json", action="store_true",
                       help="print {collection, points, indexed, min_points, due, searches, recall_at_10, exact_ms, "
                       "indexed_ms, built_at, build_s}")
    index.set_defaults(run=run_index)
