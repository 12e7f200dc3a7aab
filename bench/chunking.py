"""Chunking speed on ~3 MB of German prose, next to plain tiktoken encoding of the same text.

    python -m bench.chunking [CORPUS.txt] [--runs 5] [--settings 350/50 512/64] [--wall] [--profile]

Without CORPUS, builds it with ../shared/scripts/german-corpus.sh into bench/out/. For each chunk_size/overlap
(default: the defaults and 512/64) prints MB/s of chunk_document (both strategies) and of plain
`encode_ordinary`, the ratio, the time of the table-of-contents check (one pass, and the line-by-line check
per chunk it replaced) and, for any of chonkie, langchain-text-splitters and semchunk that is installed,
the same figures plus chunk count, mean tokens and mid-word cuts. Our chunker runs on one thread (the
like-for-like comparison with plain encoding) and, with --wall on a machine with more cores, with its
default of encoding long texts on several threads. Times are CPU time of the process unless --wall: on a
shared machine other work hardly changes them. Runs alternate with plain encoding, so load hits both alike.
Cold runs start with an empty edge-word cache (a new document: what a user sees); warm runs keep it
(memoising chunkers get faster on text they have seen). Everything else the chunker keeps (boundaries, edge counts,
look-up blocks) is built per document, so cold and warm differ only in that cache. One more pair runs each as the
first work of a new process, where also the token byte-length table is still to build (both after loading
tiktoken's ranks, which they share). Seconds are medians over --runs; "x tiktoken" is
the median over the runs of (plain encoding's seconds / the run's seconds) of each pair.
--profile prints where a cold structure run spends its time (cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from rag.chunking import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP, chunk_document, toc, tokens
from rag.documents import load_document

ROOT = Path(__file__).resolve().parents[1]


def corpus_path(given: str | None) -> Path:
    if given:
        return Path(given)
    out = ROOT / "bench" / "out" / "german-corpus.txt"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["bash", str(ROOT.parent / "shared" / "scripts" / "german-corpus.sh"), str(out)], check=True)
    return out


CLOCK = time.process_time  # CPU time: what a run costs, the same on a busy shared machine (--wall: elapsed)


def seconds_of(fn: Callable[[], object]) -> tuple[float, object]:
    started = CLOCK()
    result = fn()
    return CLOCK() - started, result


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


@dataclass
class Row:
    name: str
    cold: float  # median seconds of cold runs
    cold_ratio: float  # median of (plain encoding's seconds / this run's seconds) over the pairs
    warm: float
    warm_ratio: float
    chunks: list[str] = field(default_factory=list)


def timed_pairs(text: str, run: Callable[[], list[str]], runs: int, name: str) -> Row:
    """Return the Row of run: each cold run (empty edge-word cache) and each warm run right after plain encoding."""
    encoding = tokens.encoding()
    times: dict[str, list[float]] = {"cold": [], "warm": []}
    ratios: dict[str, list[float]] = {"cold": [], "warm": []}
    pieces: list[str] = []
    for _ in range(max(runs, 1)):
        for kind in ("cold", "warm"):
            if kind == "cold":
                tokens._count_short.cache_clear()
            base = seconds_of(lambda: encoding.encode_ordinary(text))[0]
            seconds, pieces = seconds_of(run)
            times[kind].append(seconds)
            ratios[kind].append(base / seconds)
    median = statistics.median
    return Row(name, median(times["cold"]), median(ratios["cold"]), median(times["warm"]), median(ratios["warm"]),
               pieces)


def encoding_row(text: str, runs: int) -> Row:
    """Return the reference row: plain encode_ordinary, cold being its first run."""
    seconds = [seconds_of(lambda: tokens.encoding().encode_ordinary(text))[0] for _ in range(max(runs, 2))]
    return Row("tiktoken encode_ordinary (reference)", seconds[0], 1.0, statistics.median(seconds[1:]), 1.0)


def measure(document, chunk_size: int, overlap: int, runs: int) -> list[Row]:
    """Return the rows of our chunker (both strategies, 1 and the default threads) and of the others installed."""
    threads = tokens.encoding_threads() if CLOCK is time.perf_counter else 1  # CPU time would add threads up
    configs = [("structure", 1), ("tokens", 1)] + ([("structure", threads)] if threads > 1 else [])
    rows = []
    for strategy, count in configs:
        os.environ["RAG_TOKENIZER_THREADS"] = str(count)
        name = f"rag chunk_document {strategy}, {count} thread{'s' if count > 1 else ''}"
        run = partial(chunk_contents, document, chunk_size, overlap, strategy)
        rows.append(timed_pairs(document.text, run, runs, name))
    os.environ.pop("RAG_TOKENIZER_THREADS")
    for name, chunker in others(chunk_size, overlap).items():
        rows.append(timed_pairs(document.text, partial(chunker, document.text), runs, name))
    return rows


def chunk_contents(document, chunk_size: int, overlap: int, strategy: str) -> list[str]:
    return [c.content for c in chunk_document(document, chunk_size, overlap, strategy)]


def toc_share(document, chunk_size: int, overlap: int, runs: int) -> tuple[float, float, float]:
    """Return the median seconds of chunking (structure, one thread), of its table-of-contents check in one pass,
    and of the check line by line per chunk that it replaced, each run alternating with the others."""
    os.environ["RAG_TOKENIZER_THREADS"] = "1"
    text, times = document.text, {"chunking": [], "one pass": [], "per chunk": []}
    for _ in range(max(runs, 1)):
        tokens._count_short.cache_clear()
        seconds, chunks = seconds_of(partial(chunk_document, document, chunk_size, overlap))
        times["chunking"].append(seconds)
        spans = [(c.start, c.end) for c in chunks]
        times["one pass"].append(seconds_of(partial(toc.toc_flags, text, spans))[0])
        contents = [c.content for c in chunks]
        times["per chunk"].append(seconds_of(lambda c=contents: [toc.is_table_of_contents(x) for x in c])[0])
    os.environ.pop("RAG_TOKENIZER_THREADS")
    return tuple(statistics.median(times[key]) for key in ("chunking", "one pass", "per chunk"))


FRESH = """
import sys, time
from pathlib import Path
from rag.chunking import tokens
from rag.chunking.chunker import chunk_document
from rag.documents.loader import load_document
path, mode, chunk_size, overlap = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
document = load_document(Path(path).read_bytes(), Path(path).name)
encoding = tokens.encoding()  # loading tiktoken's ranks is shared by both: not timed
started = time.process_time()
if mode == "encode":
    encoding.encode_ordinary(document.text)
else:
    chunk_document(document, chunk_size, overlap)
print(time.process_time() - started)
"""


def fresh_process(path: Path, chunk_size: int, overlap: int, runs: int) -> tuple[float, float, float]:
    """Return the median seconds of plain encoding and of chunking as the first work of a new process (every table
    and cache still to build), and the median ratio of the pairs; each pair runs in two new processes."""
    env = {**os.environ, "RAG_TOKENIZER_THREADS": "1", "PYTHONPATH": str(ROOT)}
    times: dict[str, list[float]] = {"encode": [], "chunk": []}
    for _ in range(max(runs, 1)):
        for mode in ("encode", "chunk"):
            done = subprocess.run([sys.executable, "-c", FRESH, str(path), mode, str(chunk_size), str(overlap)],
                                  env=env, capture_output=True, text=True, check=True)  # fmt: skip
            times[mode].append(float(done.stdout.split()[-1]))
    ratios = [e / c for e, c in zip(times["encode"], times["chunk"], strict=True)]
    median = statistics.median
    return median(times["encode"]), median(times["chunk"]), median(ratios)


def print_table(text: str, rows: list[Row], megabytes: float) -> None:
    print(f"{'':44} {'cold s':>7} {'MB/s':>6} {'x tiktoken':>10} {'warm s':>7} {'x tiktoken':>10} "
          f"{'chunks':>7} {'mean tok':>8} {'mid-word':>8}")
    for row in rows:
        extra = ""
        if row.chunks:
            cuts, missing = mid_word_cuts(text, row.chunks)
            mean = statistics.mean(tokens.count(c) for c in row.chunks)
            extra = f"{len(row.chunks):>7} {mean:8.0f} {cuts:>8}" + (f" ({missing} not verbatim)" if missing else "")
        print(f"{row.name:44} {row.cold:7.3f} {megabytes / row.cold:6.2f} {row.cold_ratio:10.2f} "
              f"{row.warm:7.3f} {row.warm_ratio:10.2f} {extra}")


def profile(document, chunk_size: int, overlap: int) -> None:
    """Print the functions a cold structure run on one thread spends most time in."""
    os.environ["RAG_TOKENIZER_THREADS"] = "1"
    tokens._count_short.cache_clear()
    profiler = cProfile.Profile()
    profiler.runcall(chunk_document, document, chunk_size, overlap)
    os.environ.pop("RAG_TOKENIZER_THREADS")
    print(f"\ncProfile of one cold run at {chunk_size}/{overlap}, by own time:")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--settings", nargs="+", default=[f"{DEFAULT_CHUNK_SIZE}/{DEFAULT_OVERLAP}", "512/64"],
                        help="chunk_size/overlap pairs")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--wall", action="store_true", help="elapsed time instead of CPU time; adds a row with "
                        "the default tokenizer threads")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.perf_counter if args.wall else time.process_time
    path = corpus_path(args.corpus)
    document = load_document(path.read_bytes(), path.name)
    text = document.text
    megabytes = len(text.encode("utf-8")) / 1e6
    print(f"corpus: {path} ({megabytes:.2f} MB, {len(text):,} characters, {len(document.headings)} headings)")
    print(f"{os.cpu_count()} cores, load {' '.join(f'{x:.1f}' for x in os.getloadavg())}; median of {args.runs} runs, "
          f"{'elapsed' if args.wall else 'CPU'} time")
    tokens.TokenIndex("warm-up")  # builds the per-token byte-length table once per process (not per text)
    for setting in args.settings:
        chunk_size, overlap = (int(x) for x in setting.split("/"))
        print(f"\nchunk_size {chunk_size}, overlap {overlap}")
        print_table(text, [encoding_row(text, args.runs), *measure(document, chunk_size, overlap, args.runs)],
                    megabytes)
        chunking, one_pass, per_chunk = toc_share(document, chunk_size, overlap, args.runs)
        print(f"table-of-contents check (structure, 1 thread, cold): {1000 * one_pass:.1f} ms in one pass, "
              f"{100 * one_pass / chunking:.1f} % of the chunking's {1000 * chunking:.0f} ms; "
              f"line by line per chunk, as before: {1000 * per_chunk:.0f} ms")
        encode, chunk, ratio = fresh_process(path, chunk_size, overlap, max(args.runs // 2, 1))
        print(f"first work of a new process (structure, 1 thread; tables and caches empty): chunking {chunk:.3f} s, "
              f"plain encoding {encode:.3f} s, {ratio:.2f} x tiktoken")
        if args.profile:
            profile(document, chunk_size, overlap)
    print(f"\n{len(tokens.encode(text)):,} tokens in the corpus")


if __name__ == "__main__":
    main()
