"""The command line's parser, shared helpers and the `chunk` command.

A user's mistake (bad file, unknown collection, server down) prints one line to stderr and exits 1;
a malformed command line exits 2 (argparse). Results go to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rag import chunking
from rag.documents import Document, check_size, load_document
from rag.embeddings import get_embedder
from rag.errors import RagError
from rag.settings import check_environment

LONG_FILE_BYTES = 2_000_000  # files above this get progress lines on stderr

Command = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, Command] = {}


class UserError(RagError):
    """A mistake in the command's input that is not a usage error (missing file, ...)."""


def positive_int(minimum: int = 0) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {number}")
        return number

    return parse


def add_chunk_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunk-size", type=positive_int(chunking.MIN_CHUNK_SIZE), default=chunking.DEFAULT_CHUNK_SIZE,
                        help=f"maximum tokens per chunk (cl100k_base), default {chunking.DEFAULT_CHUNK_SIZE}")
    parser.add_argument("--overlap", type=positive_int(0), default=chunking.DEFAULT_OVERLAP,
                        help=f"tokens shared by consecutive chunks, default {chunking.DEFAULT_OVERLAP}")
    parser.add_argument("--strategy", choices=chunking.STRATEGIES, default="structure",
                        help="structure: split at headings, paragraphs, sentences (default); tokens: plain window")


def chunk_settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> chunking.ChunkSettings:
    """Return the chunk settings of args, or exit 2 with the reason."""
    settings = chunking.ChunkSettings(args.chunk_size, args.overlap, args.strategy)
    try:
        return chunking.validate_settings(settings)
    except ValueError as error:
        parser.error(str(error))
        raise  # unreachable: parser.error exits


def read_file(path: str) -> bytes:
    """Return the bytes of path, or raise UserError (or DocumentTooLargeError, before reading) saying why not."""
    file = check_path(path)
    try:
        check_size(file.stat().st_size, file.name)
        return file.read_bytes()
    except OSError as error:
        raise UserError(f"{path}: cannot read it ({error.strerror}).") from error


def check_path(path: str) -> Path:
    """Return path as a Path if it names a file; UserError saying what is wrong otherwise."""
    file = Path(path)
    if not file.exists():
        raise UserError(f"{path}: no such file.")
    if file.is_dir():
        raise UserError(f"{path} is a folder; name the files in it, e.g. {path}/*.pdf")
    return file


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def document_json(document: Document) -> dict:
    return {
        "id": document.id,
        "title": document.title,
        "kind": document.kind,
        "pages": len(document.pages),
        "text": document.text,
        "empty_pages": list(document.empty_pages),
        "notes": list(document.notes),
    }


def chunk_json(chunk: chunking.Chunk) -> dict:
    return {
        "chunk_index": chunk.chunk_index,
        "content": chunk.content,
        "token_count": chunk.token_count,
        "heading_path": list(chunk.heading_path),
        "page_start": chunk.page_start,
        "page_end": chunk.page_end,
        "start": chunk.start,
        "end": chunk.end,
    }


def preview(text: str, width: int) -> str:
    """Return text on one line, cut to width characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def print_table(rows: list[list[str]], headers: list[str]) -> None:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    for row in [headers, ["-" * w for w in widths], *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def run_chunk(args: argparse.Namespace) -> int:
    settings = chunk_settings(args, args.parser)
    data = read_file(args.file)
    long_file = len(data) > LONG_FILE_BYTES
    started = time.perf_counter()
    if long_file:
        progress(f"{args.file}: reading {len(data) / 1e6:.1f} MB …")
    document = load_document(data, Path(args.file).name, password=args.password)
    if long_file:
        progress(f"{args.file}: {len(document.pages)} pages, {len(document.text):,} characters; chunking …")
    chunks = chunking.chunk_document(document, settings.chunk_size, settings.overlap, settings.strategy)
    for note in document.notes:
        progress(f"{args.file}: {note}")
    embedder = get_embedder(args.embedder)
    model_tokens = [embedder.count_tokens(c.content) for c in chunks]
    limit = embedder.max_input_tokens
    if args.json:
        model = {"model_id": embedder.model_id, "max_input_tokens": limit,
                 "windowed": bool(getattr(embedder, "windowed", False))}
        json.dump({"document": document_json(document), "embedder": model,
                   "chunks": [chunk_json(c) | {"model_tokens": n} for c, n in zip(chunks, model_tokens, strict=True)]},
                  sys.stdout, ensure_ascii=False)
        print()
        return 0
    rows = [[str(c.chunk_index), str(c.token_count), str(n) + (" !" if n > limit else ""),
             pages_label(c.page_start, c.page_end), preview(" › ".join(c.heading_path), 40), preview(c.content, 60)]
            for c, n in zip(chunks, model_tokens, strict=True)]
    print_table(rows, ["#", "tokens", "model tokens", "pages", "heading path", "content"])
    elapsed = time.perf_counter() - started
    over = sum(n > limit for n in model_tokens)
    print(f"\n{document.title}: {len(document.pages)} pages, {len(chunks)} chunks "
          f"(chunk_size {settings.chunk_size}, overlap {settings.overlap}, {settings.strategy}) in {elapsed:.2f} s; "
          f"{over} over the {limit} tokens {embedder.model_id} reads at once (marked !)")
    return 0


def pages_label(start: int | None, end: int | None) -> str:
    if start is None:
        return ""
    return str(start) if end in (None, start) else f"{start}-{end}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rag", description="RAG Lab: chunk, embed, search, evaluate.")
    parser.add_argument("--store", metavar="PATH", help="embedded Qdrant folder (default $RAG_QDRANT_PATH)")
    parser.add_argument("--qdrant-url", metavar="URL", help="Qdrant server or cluster (default $QDRANT_URL)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chunk = commands.add_parser("chunk", help="show how a file is chunked")
    chunk.add_argument("file", metavar="FILE")
    add_chunk_options(chunk)
    chunk.add_argument("--password", help="password of an encrypted PDF")
    chunk.add_argument("--embedder", metavar="SPEC",
                       help="count model_tokens with this embedder (default $RAG_EMBEDDER, else local)")
    chunk.add_argument("--json", action="store_true", help="print one JSON object")
    chunk.set_defaults(run=run_chunk, parser=chunk)
    for register in EXTENSIONS:
        register(commands)
    return parser


# Modules with more commands append a function(subparsers) here (see rag/cli_store.py).
EXTENSIONS: list[Callable[[argparse._SubParsersAction], None]] = []


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 user error, 2 usage error)."""
    import rag.cli_compare  # noqa: F401  (each module registers its commands)
    import rag.cli_eval  # noqa: F401
    import rag.cli_store  # noqa: F401

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_environment()
        return args.run(args)
    except RagError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
