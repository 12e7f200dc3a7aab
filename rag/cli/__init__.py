"""The command line: `python -m rag COMMAND` (chunk, page, ingest, search, context, collections, documents, delete,
delete-collection, answer, import-squad, eval, sweep, compare, make-queries, runs, judge, queries, migrate, index).

A user's mistake (bad file, unknown collection, server down) prints one line to stderr and exits 1;
a malformed command line exits 2 (argparse); a closed pipe (`| head`) ends quietly with 141, as for a tool
ended by SIGPIPE. Results go to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys

from rag.cli import answer, chunk, compare, evaluate, index, judge, migrate, page, runs, store, sweep, synthetic
from rag.errors import RagError
from rag.settings import check_environment
from rag.urls import redact_urls

# Every command group, in the order `--help` lists them; each module's register(subparsers) adds its commands.
COMMAND_GROUPS = (chunk, page, store, answer, evaluate, sweep, compare, synthetic, runs, judge, migrate, index)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rag", description="RAG Lab: chunk, embed, search, evaluate.")
    parser.add_argument("--store", metavar="PATH", help="embedded Qdrant folder (default $RAG_QDRANT_PATH)")
    parser.add_argument("--qdrant-url", metavar="URL", help="Qdrant server or cluster (default $QDRANT_URL)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 user error, 2 usage error, 141 reader gone)."""
    try:
        check_environment()  # first: the parser's defaults (e.g. RAG_COLLECTION) are settings
        args = build_parser().parse_args(argv)
        code = args.run(args)
        sys.stdout.flush()  # inside the try: a reader that is gone fails here, not in the interpreter's exit
        return code
    except RagError as error:
        print(f"error: {redact_urls(str(error))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `rag documents --json | head -c 100`: the reader has all it wanted
        _silence_stdout()
        return BROKEN_PIPE


BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool ended by a closed pipe (e.g. `yes | head`)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of what is left cannot fail again at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no real file (a test's capture): nothing is flushed at exit
        pass
    finally:
        os.close(devnull)
