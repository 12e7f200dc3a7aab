"""Boxes of PDF chunks: what they cost the read, and whether they hold the chunk's words (issue 42).

    .venv/bin/python -m bench.boxes FILE.pdf [FILE.pdf ...] [--repeat 5] [--quality-only | --speed-only]

Speed: reading + chunking each file without boxes and with them (load_document(boxes=False / True), then
chunk_document), alternated in one run, median of --repeat; the reference is the read without boxes in the same
run. Quality, the issue's measure: every chunk's boxes are read back independently with pypdfium2's
get_text_bounded (the text inside each rectangle); per chunk, the share of its words found inside its boxes
(recall) and the share of the boxed words that belong to the chunk (precision), words compared as case-folded
\\w+ runs, each counted as often as it occurs. Target: median recall >= 0.95, median precision >= 0.85.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.chunking import Chunk, chunk_document
from rag.documents import load_document
from rag.documents.pdf import clean_pdf_text

_WORD = re.compile(r"\w+")
_HYPHEN = re.compile("[\ufffe\x02]$", re.MULTILINE)  # pdfium's mark of a hyphen at a line's end (\x02: bounded text)


@dataclass(frozen=True)
class ChunkQuality:
    chunk_index: int
    words: int  # words of the chunk
    boxed: int  # words read inside its boxes
    recall: float  # share of the chunk's words inside its boxes
    precision: float  # share of the boxed words that belong to the chunk


def words(text: str) -> Counter[str]:
    """Return the words of text as a multiset: case-folded runs of letters and digits."""
    return Counter(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def box_quality(data: bytes, chunks: Sequence[Chunk], password: str | None = None) -> list[ChunkQuality]:
    """Return, for each chunk with boxes, how well its boxes hold its words (read with get_text_bounded)."""
    import pypdfium2

    document = pypdfium2.PdfDocument(data, password=password)
    textpages: dict[int, object] = {}
    try:
        found = []
        for chunk in chunks:
            if not chunk.boxes:
                continue
            pieces = []
            for box in chunk.boxes:
                if box.page not in textpages:
                    textpages[box.page] = document[box.page - 1].get_textpage()
                pieces.append(textpages[box.page].get_text_bounded(box.left, box.bottom, box.right, box.top))
            # the reader's own cleaning joins "Haupt-" + "stadt" as it did for the chunk, and nothing else
            boxed = words(clean_pdf_text(_HYPHEN.sub("-", "\n".join(pieces))))
            mine = words(chunk.content)
            shared = sum((boxed & mine).values())
            found.append(ChunkQuality(chunk.chunk_index, sum(mine.values()), sum(boxed.values()),
                                      shared / max(sum(mine.values()), 1), shared / max(sum(boxed.values()), 1)))
        return found
    finally:
        for textpage in textpages.values():
            textpage.close()
        document.close()


def file_quality(path: Path, password: str | None = None) -> tuple[int, float, float, float]:
    """Return (chunks with boxes, median recall, median precision, lowest recall) of a PDF's default chunks."""
    data = path.read_bytes()
    chunks = chunk_document(load_document(data, path.name, password, boxes=True))
    rows = box_quality(data, chunks, password)
    if not rows:
        return 0, 0.0, 0.0, 0.0
    return (len(rows), statistics.median(r.recall for r in rows), statistics.median(r.precision for r in rows),
            min(r.recall for r in rows))


def speed(data: bytes, name: str, repeat: int) -> tuple[float, float, float, float, int]:
    """Return median seconds (read without boxes, read with, read + chunk without, read + chunk with) and the chunks."""
    times: dict[tuple[bool, str], list[float]] = {}
    chunks = 0
    for _ in range(repeat):
        for boxes in (False, True):
            started = time.perf_counter()
            document = load_document(data, name, boxes=boxes)
            read = time.perf_counter()
            chunks = len(chunk_document(document))
            done = time.perf_counter()
            times.setdefault((boxes, "read"), []).append(read - started)
            times.setdefault((boxes, "all"), []).append(done - started)
    med = {key: statistics.median(values) for key, values in times.items()}
    return med[(False, "read")], med[(True, "read")], med[(False, "all")], med[(True, "all")], chunks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.boxes", description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument("--quality-only", action="store_true")
    args = parser.parse_args(argv)
    print(f"load before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    if not args.quality_only:
        print("\nfile | pages | chunks | read | read, boxes | +% | read+chunk | read+chunk, boxes | +%")
        for path in args.files:
            data = path.read_bytes()
            plain, boxed, plain_all, boxed_all, chunks = speed(data, path.name, args.repeat)
            pages = len(load_document(data, path.name).pages)
            print(f"{path.name} | {pages} | {chunks} | {plain:.3f} s | {boxed:.3f} s | "
                  f"{100 * (boxed / plain - 1):+.0f} | {plain_all:.3f} s | {boxed_all:.3f} s | "
                  f"{100 * (boxed_all / plain_all - 1):+.0f}")
    if not args.speed_only:
        print("\nfile | chunks with boxes | median recall | median precision | lowest recall")
        for path in args.files:
            n, recall, precision, lowest = file_quality(path)
            print(f"{path.name} | {n} | {recall:.3f} | {precision:.3f} | {lowest:.3f}")
    print(f"\nload after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
