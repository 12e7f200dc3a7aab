"""Chunking speed on ~3 MB of German prose, next to plain tiktoken encoding of the same text.

    python -m bench.chunking [CORPUS.txt] [--runs 5] [--chunk-size 600] [--overlap 80]

Without CORPUS, builds it with ../shared/scripts/german-corpus.sh into bench/out/. Prints MB/s of
chunk_document (both strategies) and of plain `encode_ordinary`, the ratio, and, for any of chonkie,
langchain-text-splitters and semchunk that is installed, the same figures plus chunk count, mean tokens
and mid-word cuts. Our chunker runs on one thread (the like-for-like comparison with plain encoding)
and, on a machine with more cores, with its default of encoding long texts on several threads.
Cold is each chunker's first run on the text (what a user sees); warm is the median of the further
--runs runs (memoising chunkers get faster on text they have seen).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from rag.chunking import tokens
from rag.chunking.chunker import chunk_document
from rag.documents.loader import load_document

ROOT = Path(__file__).resolve().parents[1]


def corpus_path(given: str | None) -> Path:
    if given:
        return Path(given)
    out = ROOT / "bench" / "out" / "german-corpus.txt"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["bash", str(ROOT.parent / "shared" / "scripts" / "german-corpus.sh"), str(out)], check=True)
    return out


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float, object]:
    """Return the seconds of fn's first (cold) run, the median of the others (warm), and its last result.

    Cold is the fair figure: chunkers that memoise token counts (semchunk, and our edge-word cache) get
    faster on repeated runs over the same text, which a user chunking a new document never sees.
    """
    seconds, result = [], None
    for _ in range(max(runs, 2)):
        started = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - started)
    return seconds[0], statistics.median(seconds[1:]), result


def mid_word_cuts(text: str, pieces: list[str]) -> tuple[int, int]:
    """Return (mid-word cuts, pieces not found verbatim) for chunk strings located in text in order."""
    cuts = missing = 0
    cursor = 0
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        found = text.find(piece, max(cursor - len(piece), 0))
        if found < 0:
            missing += 1
            continue
        end = found + len(piece)
        if found > 0 and not text[found - 1].isspace() and not text[found].isspace():
            cuts += 1
        if end < len(text) and not text[end].isspace() and not text[end - 1].isspace():
            cuts += 1
        cursor = end
    return cuts, missing


def others(chunk_size: int, overlap: int) -> dict[str, Callable[[str], list[str]]]:
    """Return the installed third-party chunkers, configured like ours (cl100k, same size/overlap)."""
    found: dict[str, Callable[[str], list[str]]] = {}
    encoding = tokens.encoding()
    try:
        from chonkie import RecursiveChunker

        chonkie = RecursiveChunker(tokenizer=encoding, chunk_size=chunk_size)
        found["chonkie RecursiveChunker"] = lambda text: [c.text for c in chonkie.chunk(text)]
    except Exception as error:  # not installed, or an API this version lacks
        print(f"  (chonkie skipped: {type(error).__name__}: {error})")
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        splitter = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
            encoding_name=encoding.name, chunk_size=chunk_size, chunk_overlap=overlap)
        found["langchain RecursiveCharacter"] = splitter.split_text
    except Exception as error:
        print(f"  (langchain-text-splitters skipped: {type(error).__name__}: {error})")
    try:
        import semchunk

        semchunker = semchunk.chunkerify(encoding, chunk_size)
        found["semchunk"] = lambda text: semchunker(text, overlap=overlap)
    except Exception as error:
        print(f"  (semchunk skipped: {type(error).__name__}: {error})")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunk-size", type=int, default=600)
    parser.add_argument("--overlap", type=int, default=80)
    args = parser.parse_args()
    path = corpus_path(args.corpus)
    data = path.read_bytes()
    document = load_document(data, path.name)
    text = document.text
    megabytes = len(text.encode("utf-8")) / 1e6
    print(f"corpus: {path} ({megabytes:.2f} MB, {len(text):,} characters, {len(document.headings)} headings)")
    print(f"chunk_size {args.chunk_size}, overlap {args.overlap}, median of {args.runs} runs\n")
    encoding = tokens.encoding()
    tokens.TokenIndex("warm-up")  # builds the per-token byte-length table once per process (not per text)
    base, base_warm, ids = timed(lambda: encoding.encode_ordinary(text), args.runs)
    rows = [("tiktoken encode_ordinary (reference)", base, base_warm, None, None, None)]
    threads = tokens.encoding_threads()
    runs = [("structure", 1), ("tokens", 1)] + ([("structure", threads)] if threads > 1 else [])
    for strategy, count in runs:
        os.environ["RAG_TOKENIZER_THREADS"] = str(count)
        seconds, warm, chunks = timed(lambda s=strategy: chunk_document(document, args.chunk_size, args.overlap, s),
                                      args.runs)
        counts = [c.token_count for c in chunks]
        cuts, _ = mid_word_cuts(text, [c.content for c in chunks])
        label = f"rag chunk_document {strategy}, {count} thread{'s' if count > 1 else ''}"
        rows.append((label, seconds, warm, len(chunks), statistics.mean(counts), cuts))
    os.environ.pop("RAG_TOKENIZER_THREADS")
    for name, chunker in others(args.chunk_size, args.overlap).items():
        seconds, warm, pieces = timed(lambda c=chunker: c(text), args.runs)
        counts = [tokens.count(p) for p in pieces]
        cuts, missing = mid_word_cuts(text, pieces)
        rows.append((name + (f" ({missing} chunks not verbatim)" if missing else ""), seconds, warm, len(pieces),
                     statistics.mean(counts), cuts))
    print(f"{'':44} {'cold s':>7} {'MB/s':>6} {'x tiktoken':>10} {'warm s':>7} {'x tiktoken':>10} "
          f"{'chunks':>7} {'mean tok':>8} {'mid-word':>8}")
    for name, seconds, warm, n, mean, cuts in rows:
        extra = "" if n is None else f"{n:>7} {mean:8.0f} {cuts:>8}"
        print(f"{name:44} {seconds:7.3f} {megabytes / seconds:6.2f} {base / seconds:10.2f} {warm:7.3f} "
              f"{base_warm / warm:10.2f} {extra}")
    print(f"\n{len(ids):,} tokens in the corpus")


if __name__ == "__main__":
    main()
