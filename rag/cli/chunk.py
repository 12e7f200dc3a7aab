"""The `chunk` command: how one file is chunked, as a table or as JSON (document, embedder, chunks)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rag import chunking
from rag.cli import common
from rag.documents import Document, load_document
from rag.embeddings import get_embedder
from rag.words import counted


def register(commands: argparse._SubParsersAction) -> None:
    chunk = commands.add_parser("chunk", help="show how a file is chunked")
    chunk.add_argument("file", metavar="FILE")
    common.add_chunk_options(chunk)
    chunk.add_argument("--password", help="password of an encrypted PDF")
    chunk.add_argument("--embedder", metavar="SPEC",
                       help="count model_tokens with this embedder (default $RAG_EMBEDDER, else local)")
    chunk.add_argument("--json", action="store_true", help="print one JSON object")
    chunk.set_defaults(run=run_chunk, parser=chunk)


def run_chunk(args: argparse.Namespace) -> int:
    settings = common.chunk_settings(args, args.parser)
    data = common.read_file(args.file)
    long_file = len(data) > common.LONG_FILE_BYTES
    started = time.perf_counter()
    if long_file:
        common.progress(f"{args.file}: reading {len(data) / 1e6:.1f} MB …")
    document = load_document(data, Path(args.file).name, password=args.password, boxes=True)
    if long_file:
        common.progress(f"{args.file}: {counted(len(document.pages), 'page')}, {len(document.text):,} characters; "
                        f"chunking …")
    chunks = chunking.chunk_document(document, settings.chunk_size, settings.overlap, settings.strategy)
    for note in document.notes:
        common.progress(f"{args.file}: {note}")
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
             common.pages_label(c.page_start, c.page_end), common.preview(" › ".join(c.heading_path), 40),
             common.preview(c.content, 60)]
            for c, n in zip(chunks, model_tokens, strict=True)]
    common.print_table(rows, ["#", "tokens", "model tokens", "pages", "heading path", "content"])
    elapsed = time.perf_counter() - started
    over = sum(n > limit for n in model_tokens)
    print(f"\n{document.title}: {counted(len(document.pages), 'page')}, {counted(len(chunks), 'chunk')} "
          f"(chunk_size {settings.chunk_size}, overlap {settings.overlap}, {settings.strategy}) in {elapsed:.2f} s; "
          f"{over} over the {limit} tokens {embedder.model_id} reads at once (marked !)")
    return 0


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
        "table_header": chunk.table_header,  # Markdown: the header rows the model reads before content
        "boxes": [box.as_dict() for box in chunk.boxes],  # a PDF's: 1-based page, PDF points, one per line fragment
    }
