"""Real embedding vectors for bench.search: German prose chunks and German questions, embedded once and cached.

    python -m bench.realvec [--points 50000] [--queries 632] [--minutes 25]    (fill or extend the cache)

Points: ~3 MB of German prose (../shared/scripts/german-corpus.sh, built into bench/out/ on first use), chunked
by rag.chunking at small sizes (SCHEDULE: 40-120 tokens, several overlaps), distinct texts only, in a fixed
shuffled order, embedded with the document prompt of the default local model (multilingual-e5-small, 384
dims). Queries: the German XQuAD questions (../shared/data/xquad-de: 632, 624 distinct) in a fixed shuffled
order, embedded with the query prompt, then sentences cut from the corpus if more are asked for; a query's
keyword text is its own text. Chunks of one passage at several sizes overlap, as in a store holding several
chunkings.

Embedding takes a while on 2 shared cores (10-20 chunks/s), so the vectors are cached under bench/out/realvec/,
one .npy file per list, named by the model id, the list's hash (corpus text + chunker + schedule) and how many
rows it holds. The lists are fixed, so N vectors are the first N rows of any longer file; a shorter file is
extended (saved every BLOCK rows, so an interrupted run keeps what it embedded).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
CACHE = OUT / "realvec"
CORPUS = OUT / "german-corpus.txt"
CORPUS_SCRIPT = ROOT.parent / "shared" / "scripts" / "german-corpus.sh"
XQUAD = ROOT.parent / "shared" / "data" / "xquad-de" / "xquad.de.dev.json"
SCHEDULE = ((40, 0), (60, 10), (80, 20), (100, 0), (120, 30), (50, 25), (70, 35), (90, 0), (110, 55))
SEED = 24
BLOCK = 1000
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def corpus_text(path: Path = CORPUS) -> str:
    """Return the German corpus, building it with the shared script if it is not there yet."""
    if not path.exists():
        if not CORPUS_SCRIPT.exists():
            raise SystemExit(f"No German corpus at {path} and no {CORPUS_SCRIPT} to build it; run "
                             "german-corpus.sh OUT and pass --corpus OUT.")
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["bash", str(CORPUS_SCRIPT), str(path)], check=True, stdout=subprocess.DEVNULL)
    return path.read_text(encoding="utf-8")


def chunk_texts(text: str, schedule=SCHEDULE) -> list[str]:
    """Return the distinct chunk texts of every (chunk_size, overlap) in schedule, in a fixed shuffled order."""
    from rag.chunking import chunk_document
    from rag.documents import Document, Page

    document = Document("corpus", "german-corpus.txt", "text", (Page(1, text),), text)
    texts = dict.fromkeys(c.content for size, overlap in schedule for c in chunk_document(document, size, overlap))
    return _shuffled(list(texts))


def question_texts(squad: Path = XQUAD) -> list[str]:
    """Return the distinct questions of a SQuAD-style file, in a fixed shuffled order."""
    from rag.evaluation.querysets import import_squad

    return _shuffled(list(dict.fromkeys(q["query"] for q in import_squad(squad.read_bytes(), str(squad)).queries)))


def sentence_texts(text: str, exclude: set[str]) -> list[str]:
    """Return distinct one-line sentences of 40-200 characters from text, in a fixed shuffled order."""
    lines = (" ".join(s.split()) for s in _SENTENCE.split(text))
    return _shuffled([s for s in dict.fromkeys(lines) if 40 <= len(s) <= 200 and s not in exclude])


def _shuffled(texts: list[str]) -> list[str]:
    order = np.random.default_rng(SEED).permutation(len(texts))
    return [texts[i] for i in order]


def list_hash(texts: list[str]) -> str:
    """Return a short hash of an ordered text list (what the cached rows are the vectors of)."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\0")
    return digest.hexdigest()[:16]


def cache_path(folder: Path, model_id: str, kind: str, digest: str, count: int) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)
    return folder / f"{slug}-{kind}-{digest}-{count}.npy"


def cached(folder: Path, model_id: str, kind: str, digest: str) -> tuple[Path | None, int]:
    """Return the largest cache file for (model, kind, list) and its row count, or (None, 0)."""
    prefix = cache_path(folder, model_id, kind, digest, 0).name[: -len("0.npy")]
    found = [(int(p.stem[len(prefix):]), p) for p in folder.glob(f"{prefix}*.npy") if p.stem[len(prefix):].isdigit()]
    return (max(found)[1], max(found)[0]) if found else (None, 0)


def vectors(texts: list[str], count: int, embed, model_id: str, kind: str, folder: Path = CACHE,
            deadline: float | None = None, log=None) -> np.ndarray:
    """Return the vectors of texts[:count]: cached rows, extended by embed(texts) (saved every BLOCK rows) until
    count rows or the deadline (time.monotonic()); fewer than count rows only when the deadline passed."""
    if count > len(texts):
        raise SystemExit(f"Only {len(texts)} distinct texts for {kind}; ask for at most that many.")
    digest = list_hash(texts)
    path, have = cached(folder, model_id, kind, digest)
    rows = np.load(path) if path else np.zeros((0, 0), np.float32)
    if len(rows) != have:
        raise SystemExit(f"{path} holds {len(rows)} rows, not {have}; delete it and run again.")
    started, first = time.monotonic(), have
    while have < count and (deadline is None or time.monotonic() < deadline):
        block = np.asarray(embed(texts[have : min(have + BLOCK, count)]), dtype=np.float32)
        rows = block if not have else np.concatenate([rows, block])
        have = len(rows)
        folder.mkdir(parents=True, exist_ok=True)
        _save(cache_path(folder, model_id, kind, digest, have), rows, path)
        path = cache_path(folder, model_id, kind, digest, have)
        if log:
            rate = (have - first) / (time.monotonic() - started)
            log(f"{kind}: {have}/{count} embedded ({rate:.1f}/s, {time.monotonic() - started:.0f} s)")
    return rows[:count]


def _save(path: Path, rows: np.ndarray, previous: Path | None) -> None:
    partial = path.with_suffix(".part")
    with partial.open("wb") as handle:
        np.save(handle, rows)
    partial.replace(path)
    if previous and previous != path:
        previous.unlink(missing_ok=True)


def query_list(corpus: str, chunks: list[str]) -> list[str]:
    """Return the query texts: the XQuAD questions, then corpus sentences (for more queries than questions)."""
    return question_texts() + sentence_texts(corpus, set(chunks))


def real_data(size: int, queries: int, embedder=None, deadline: float | None = None, log=None
              ) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Return (vectors, query vectors, chunk texts, query texts) as bench.search's data() does; embeds only
    what the cache lacks (the model loads only then)."""
    from rag.embeddings import e5

    corpus = corpus_text()
    chunks = chunk_texts(corpus)
    asked = query_list(corpus, chunks)
    model, model_id = _Lazy(embedder), embedder.model_id if embedder else e5.MODEL_ID
    points = vectors(chunks, size, lambda t: model.get().embed_documents(t), model_id, "documents",
                     deadline=deadline, log=log)
    found = vectors(asked, queries, lambda t: model.get().embed_query(t), model_id, "queries", log=log)
    return points, found, chunks[: len(points)], asked[:queries]


def prepare(size: int, queries: int, dim: int, log=None) -> Path:
    """Embed what the cache lacks for `size` points and `queries` queries, then write them (vectors and texts) to
    a bundle folder the benchmark's worker processes read (so they load no model and chunk no corpus)."""
    points, found, texts, asked = real_data(size, queries, log=log)
    if points.shape[1] != dim:
        raise SystemExit(f"The real vectors have {points.shape[1]} dimensions, not {dim}; leave out --dim.")
    bundle = CACHE / f"bundle-{list_hash(texts)}-{list_hash(asked)}"
    if not (bundle / "texts.json").exists():
        bundle.mkdir(parents=True, exist_ok=True)
        np.save(bundle / "points.npy", points)
        np.save(bundle / "queries.npy", found)
        (bundle / "texts.json.part").write_text(json.dumps({"texts": texts, "asked": asked}), encoding="utf-8")
        (bundle / "texts.json.part").replace(bundle / "texts.json")
    return bundle


def read_bundle(bundle: str | Path, size: int, queries: int) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Return the first `size` points and `queries` queries of a bundle written by prepare()."""
    folder = Path(bundle)
    texts = json.loads((folder / "texts.json").read_text(encoding="utf-8"))
    points, found = np.load(folder / "points.npy", mmap_mode="r"), np.load(folder / "queries.npy")
    if size > len(points) or queries > len(found):
        raise SystemExit(f"{folder} holds {len(points)} points and {len(found)} queries; fewer were asked for.")
    return np.array(points[:size]), found[:queries], texts["texts"][:size], texts["asked"][:queries]


class _Lazy:
    def __init__(self, embedder=None):
        self.embedder = embedder

    def get(self):
        if self.embedder is None:
            from rag.embeddings import get_embedder

            self.embedder = get_embedder("local")
        return self.embedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=632)
    parser.add_argument("--minutes", type=float, help="stop embedding points after this long (what is done stays)")
    parser.add_argument("--bundle", type=int, metavar="DIM", help="also write the bundle bench.search's workers read "
                        "(the vectors must have DIM dimensions); its folder is printed as 'bundle'")
    args = parser.parse_args()
    started = time.monotonic()
    deadline = started + args.minutes * 60 if args.minutes else None
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    if args.bundle:  # bench.search runs this in a process of its own: the workers inherit no peak RSS of it
        print(json.dumps({"bundle": str(prepare(args.points, args.queries, args.bundle, log))}))
        return
    points, queries, _, _ = real_data(args.points, args.queries, deadline=deadline, log=log)
    print(json.dumps({"points": len(points), "queries": len(queries), "seconds": round(time.monotonic() - started)}))


if __name__ == "__main__":
    main()
