"""`python -m rag migrate`: move an embedded folder from qdrant-client's local format to Qdrant Edge.

Opening such a folder does the same; this command does it on purpose and prints what moved (JSON): every
collection with its point count (checked equal before and after) and the backup folder of the old files.
"""

from __future__ import annotations

import argparse
import json

from rag.store import migrate_folder


def run_migrate(args: argparse.Namespace) -> int:
    print(json.dumps(migrate_folder(getattr(args, "store", None)), ensure_ascii=False, indent=2))
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    migrate = commands.add_parser("migrate", help="move an embedded folder to Qdrant Edge (backup, counts checked)")
    migrate.add_argument("--store", metavar="PATH", default=argparse.SUPPRESS,
                         help="embedded Qdrant folder (default $RAG_QDRANT_PATH or ./data/qdrant)")
    migrate.set_defaults(run=run_migrate)
