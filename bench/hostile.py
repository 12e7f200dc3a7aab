"""Hostile input: reading + chunking megabyte-sized adversarial files, next to German prose of the same size.

    python -m bench.hostile [--sizes 1,5] [CORPUS.txt]

Each input (long runs of spaces, dots, dashes, `#`, digits, a heading line of spaces, one huge word) goes
through load_document (as .txt and .md), chunk_document (600/80) and the keyword vectors of its first 500
chunks. Printed: seconds and MB/s per size, and the ratio to German prose of the same size measured in the
same run; linear steps keep the seconds proportional to the size (5 MB about 5x 1 MB).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench.chunking import corpus_path
from rag.chunking import chunk_document, tokens
from rag.documents import load_document
from rag.store import legacy_keywords as sparse

ROOT = Path(__file__).resolve().parents[1]

MB = 1_000_000


def inputs(size: int, prose: bytes) -> dict[str, bytes]:
    """Return the hostile inputs of about `size` bytes each, and German prose of that size as the reference."""
    return {
        "German prose (reference)": prose[:size].rsplit(b" ", 1)[0],
        "a + spaces + x": b"a" + b" " * size + b"x",
        "dots": b"a" + b"." * size + b"x",
        "dashes": b"-" * size,
        "hashes": b"#" * size,
        "'# a' + spaces + 'b'": b"# a" + b" " * size + b"b",
        "digits": b"1" * size,
        "dot-leader lines": (b"2.1 Kapitel " + b"." * 300 + b" 17\n") * (size // 317),
        "'. ' repeated": b". " * (size // 2),
        "one word": b"x" * size,
    }


def run(data: bytes, suffix: str) -> float:
    started = time.perf_counter()
    document = load_document(data, "hostile" + suffix, max_bytes=len(data) + 1)
    chunks = chunk_document(document, 600, 80)
    for chunk in chunks[:500]:
        sparse.chunk_vector(chunk.content)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", help="German prose (default: bench/out/german-corpus.txt)")
    parser.add_argument("--sizes", default="1,5", help="sizes in MB, default 1,5")
    args = parser.parse_args()
    sizes = [int(float(s) * MB) for s in args.sizes.split(",")]
    prose = corpus_path(args.corpus).read_bytes()
    while len(prose) < max(sizes):
        prose += b"\n\n" + prose
    tokens.TokenIndex("warm up")  # the encoding and its token table load once, outside the timings
    header = f"{'input':28} {'kind':5}" + "".join(f" {s / MB:>3g} MB s  MB/s  x prose" for s in sizes)
    print(header)
    print("-" * len(header))
    reference: dict[tuple[int, str], float] = {}
    for name in inputs(MB, prose):
        for suffix in (".txt", ".md"):
            cells = []
            for size in sizes:
                seconds = run(inputs(size, prose)[name], suffix)
                reference.setdefault((size, suffix), seconds)
                ratio = seconds / reference[(size, suffix)]
                cells.append(f" {seconds:8.2f} {size / MB / seconds:5.2f} {ratio:8.2f}")
            print(f"{name:28} {suffix:5}" + "".join(cells), flush=True)


if __name__ == "__main__":
    main()
