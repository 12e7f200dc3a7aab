"""What "Show on page" costs on a long PDF: one page of a 300-page file drawn with a chunk marked (rag.reports.pages).

    python -m bench.pages [--pages 300] [--width 760]

Builds a PDF of --pages pages from the shared hausarbeit-jura.pdf (its 8 pages over and over), keeps it in a
document archive as an ingest does, and draws pages spread over the file as the app does for a hit: the kept file
read, the page rendered at --width pixels, the chunk's boxes (placed once beforehand, as the payload holds them)
marked, the PNG encoded. Each page is drawn cold (never drawn before in this process: in the bounded child, as the
app draws it), beside the reference, the same page rendered and PNG-encoded by pypdfium2 and Pillow directly in this
process, alternating which goes first; then again (cached). Then a judged evidence span, placed by reading the words
of its page alone (rag.documents.place_spans), then another on that page. --with-model loads the local embedding
model first, so the process forks at about the app's size. Prints seconds and the load average.
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
from pathlib import Path

import pypdfium2

from rag.documents import load_document
from rag.reports import draw_pages
from rag.store import DocumentArchive

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "pdfs" / "hausarbeit-jura.pdf"


def long_pdf(pages: int) -> bytes:
    source, long = pypdfium2.PdfDocument(SOURCE.read_bytes()), pypdfium2.PdfDocument.new()
    while len(long) < pages:
        long.import_pages(source, list(range(min(len(source), pages - len(long)))))
    out = io.BytesIO()
    long.save(out)
    return out.getvalue()


def raw_draw(data: bytes, number: int, width: int) -> bytes:
    """Return page number drawn width pixels wide as a PNG by pypdfium2 and Pillow in this process: the reference."""
    document = pypdfium2.PdfDocument(data)
    try:
        page = document[number - 1]
        bitmap = page.render(scale=width / page.get_width())
        out = io.BytesIO()
        bitmap.to_pil().convert("RGB").save(out, format="PNG", compress_level=1)
        bitmap.close()
        page.close()
        return out.getvalue()
    finally:
        document.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--width", type=int, default=760)
    parser.add_argument("--with-model", action="store_true", help="load the local model first (the app's size)")
    args = parser.parse_args()
    if args.with_model:
        from rag.embeddings import get_embedder

        get_embedder("local").embed_query(["Wie lang muss ein Passwort sein?"])
    data = long_pdf(args.pages)
    document = load_document(data, "long.pdf", boxes=True)
    archive = DocumentArchive(tempfile.mkdtemp(prefix="bench-pages-"))
    archive.save(document)
    archive.keep_original(document, data)
    print(f"{args.pages} pages, {len(data) / 1e6:.1f} MB, load {os.getloadavg()[0]:.2f}")
    for turn, number in enumerate((1, args.pages // 2, args.pages - 1, args.pages // 3)):
        start = document.page_starts[number - 1]
        [boxes] = document.span_boxes([(start, start + 600)])
        for ours in ((True, False) if turn % 2 == 0 else (False, True)):
            began = time.perf_counter()
            if ours:
                draw_pages(archive, document.id, "long.pdf", args.width, boxes)
            else:
                raw_draw(data, number, args.width)
            print(f"page {number:4d} cold, {'drawn (child)' if ours else 'raw pypdfium2'}: "
                  f"{time.perf_counter() - began:.3f} s")
        began = time.perf_counter()
        draw_pages(archive, document.id, "long.pdf", args.width, boxes)
        print(f"page {number:4d} cached              : {time.perf_counter() - began:.3f} s")
    start = document.page_starts[args.pages // 2]
    for attempt in ("first evidence (reads its page)", "next evidence"):
        began = time.perf_counter()
        draw_pages(archive, document.id, "long.pdf", args.width, (), [(start + 10, start + 200)], "the evidence")
        print(f"{attempt}: {time.perf_counter() - began:.3f} s")
        start += 100
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
