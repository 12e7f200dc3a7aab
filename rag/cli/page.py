"""The `page` command: a chunk's page (or pages) of a PDF drawn as one PNG with the chunk's text marked."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from rag import chunking
from rag.cli import common
from rag.cli.store_options import store_of
from rag.documents import CHUNK, Box, Mark, load_document, render_page, stack_pngs
from rag.errors import DocumentNotFoundError, NoPageImageError, UsageError
from rag.files import write_atomic
from rag.reports import chunk_boxes
from rag.store import DocumentArchive, Hit, default_archive_dir
from rag.words import counted

DEFAULT_WIDTH = 1000


def register(commands: argparse._SubParsersAction) -> None:
    page = commands.add_parser(
        "page", help="draw a chunk's pages with its text marked (one PNG)",
        description="Draw the page of chunk INDEX of a PDF with the chunk's text marked (amber: a translucent fill "
                    "and an outline per line). A chunk over several pages gives one PNG with its pages stacked top "
                    "to bottom. Without --collection the file is chunked as `rag chunk` does with the same options; "
                    "with it, the chunk is the one stored in the collection, with its boxes, and FILE is the PDF or "
                    "the title of a document in it (drawn from the file kept at ingest).")
    page.add_argument("file", metavar="FILE", help="the PDF (with --collection also a document's title)")
    page.add_argument("--chunk", metavar="INDEX", type=common.positive_int(0), required=True,
                      help="the chunk's index (the # of `rag chunk`, chunk_index of `rag search --json`)")
    page.add_argument("--collection", type=_given, default=None,
                      help="draw the chunk as stored in this collection (its boxes from the payload)")
    page.add_argument("--out", metavar="FILE.png", required=True, help="the PNG to write (pages stacked in one)")
    page.add_argument("--page", metavar="N", type=common.positive_int(1), default=None,
                      help="draw only page N of the file (the chunk's text marked where it is on it)")
    page.add_argument("--width", metavar="PIXELS", type=common.positive_int(1), default=DEFAULT_WIDTH,
                      help=f"width of each page in pixels, default {DEFAULT_WIDTH}")
    page.add_argument("--password", help="password of an encrypted PDF")
    common.add_chunk_options(page)
    page.set_defaults(run=run_page, parser=page)


def _given(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the collection name is empty")
    return text


def run_page(args: argparse.Namespace) -> int:
    out = common.output_file(args.out)
    data, title, boxes = _stored(args) if args.collection else _chunked(args)
    pages = [args.page] if args.page else sorted({b.page for b in boxes})
    if not pages:
        raise NoPageImageError(f"Chunk {args.chunk} of '{title}' has no text on a page (an empty or scanned page): "
                               "there is nothing to mark. Choose another chunk, or a page with --page.")
    marks = [Mark(CHUNK, boxes)]
    pngs = [render_page(data, n, args.width, marks, password=args.password, name=title) for n in pages]
    try:
        write_atomic(out, stack_pngs(pngs))
    except OSError as error:
        raise UsageError(f"{out}: cannot write it ({error.strerror}).") from error
    shown = f"page {pages[0]}" if len(pages) == 1 else f"pages {', '.join(map(str, pages))} (stacked)"
    print(f"wrote {out}: {shown} of '{title}', chunk {args.chunk} marked ({counted(len(boxes), 'box', 'boxes')})")
    return 0


def _chunked(args: argparse.Namespace) -> tuple[bytes, str, tuple[Box, ...]]:
    """Return (the file, its title, the chunk's boxes) with the file chunked by the command's options."""
    settings = common.chunk_settings(args, args.parser)
    data = common.read_file(args.file)
    name = Path(args.file).name
    document = load_document(data, name, password=args.password, boxes=True)  # one read: the chunks carry boxes
    _check_pdf(document.kind, name)
    chunks = chunking.chunk_document(document, settings.chunk_size, settings.overlap, settings.strategy)
    if args.chunk >= len(chunks):
        raise UsageError(f"'{name}' has {counted(len(chunks), 'chunk')} with these settings (0 to {len(chunks) - 1}); "
                         f"chunk {args.chunk} is past the end. Choose one of them (list them: rag chunk {args.file}).")
    chunk = chunks[args.chunk]
    return data, name, chunk.boxes


def _stored(args: argparse.Namespace) -> tuple[bytes, str, tuple[Box, ...]]:
    """Return (the file, its title, the stored chunk's boxes): FILE read from disk, else its title's kept file."""
    store = store_of(args, read_only=True)
    documents = store.documents(args.collection)
    on_disk = Path(args.file).is_file()
    data = common.read_file(args.file) if on_disk else None
    wanted = hashlib.sha256(data).hexdigest() if data is not None else None
    matches = [d for d in documents if d.document_id == wanted or (
        wanted is None and d.title in (args.file, Path(args.file).name))]
    if not matches:
        what = f"the file {args.file}" if on_disk else f"a document titled '{args.file}' (and it is no file here)"
        raise DocumentNotFoundError(f"'{args.collection}' has no document that is {what}. List them with: "
                                    f"python -m rag documents --collection {args.collection}")
    info = matches[0]
    hits = store.document_chunks(args.collection, info.document_id)
    hit = _chunk(hits, args.chunk, info.title, args.collection)
    _check_pdf(str(hit.payload.get("document_kind") or "pdf"), info.title)
    boxes = chunk_boxes(hit)
    if data is None:
        data = DocumentArchive(default_archive_dir(store.location, store.local)).original(info.document_id, info.title)
    return data, info.title, boxes


def _chunk(hits: list[Hit], index: int, title: str, collection: str) -> Hit:
    for hit in hits:
        if hit.chunk_index == index:
            return hit
    last = max((h.chunk_index or 0 for h in hits), default=-1)
    raise UsageError(f"'{title}' has {counted(len(hits), 'chunk')} in '{collection}' (0 to {last}); chunk {index} is "
                     f"past the end. Choose one of them (python -m rag documents --collection {collection}).")


def _check_pdf(kind: str, name: str) -> None:
    if kind != "pdf":
        raise UsageError(f"'{name}' is a {kind} file: it has no pages to draw. See its chunks with python -m rag "
                         f"chunk {name}.")
