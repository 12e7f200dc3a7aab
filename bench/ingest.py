"""PDF text from pypdf and from pdfium side by side, then a German PDF end to end, cold and warm, per stage.

    python -m bench.ingest [PDF] [--folder DIR ...] [--embedder local] [--chunk-size 600] [--overlap 80]
                           [--runs 1] [--no-ingest]

Part 1 reads every PDF of ../shared/data/pdfs (or $RAG_SHARED_DATA/pdfs) and of each --folder, searched
recursively (the texlive-lang-german manuals: `apt-get download texlive-lang-german && dpkg -x
texlive-lang-german*.deb /tmp/texde`, then --folder /tmp/texde), with both engines, interleaved file by
file: seconds of read_pdf (pages and outline) and of load_document (the text and its headings),
characters, glued words (>= 22 letters with a capital inside, "EsgibtauchBefehlederForm"), headings
found, heading paths of the chunks, and headings that land on another page than with pypdf.

Part 2 ingests PDF (default: l2kurz.pdf from texlive-lang-german, fetched once into bench/out, else
hausarbeit-jura.pdf) into a fresh embedded Qdrant folder: cold (a new process: model load, first read) and
warm (model loaded), once per engine, the engines interleaved; stage seconds extract/chunk/embed/store.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rag import pipeline
from rag.chunking import ChunkSettings, chunk_document
from rag.documents import load_document, read_pdf
from rag.embeddings import get_embedder
from rag.errors import DocumentError
from rag.ingested import STAGES
from rag.store import open_store

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
SHARED_PDFS = Path(os.environ.get("RAG_SHARED_DATA") or ROOT.parent / "shared" / "data") / "pdfs"
ENGINES = ("pypdf", "pdfium")
GLUED = re.compile(r"[^\W\d_]{22,}")


def glued_words(text: str) -> int:
    """Return how many words of 22 or more letters have a capital inside (glued words, not German compounds)."""
    return sum(any(ch.isupper() for ch in word[1:]) for word in GLUED.findall(text))


def default_pdf() -> Path:
    """Return l2kurz.pdf from texlive-lang-german (fetched once into bench/out), else hausarbeit-jura.pdf."""
    target = OUT / "l2kurz.pdf"
    if target.exists():
        return target
    work = Path(tempfile.mkdtemp())
    try:
        subprocess.run(["apt-get", "download", "texlive-lang-german"], cwd=work, check=True, capture_output=True)
        deb = next(work.glob("*.deb"))
        subprocess.run(["dpkg", "-x", str(deb), str(work / "root")], check=True)
        found = next((work / "root").rglob("l2kurz.pdf"))
        OUT.mkdir(parents=True, exist_ok=True)
        target.write_bytes(found.read_bytes())
        return target
    except (OSError, subprocess.CalledProcessError, StopIteration) as error:
        print(f"(could not fetch l2kurz.pdf: {error}; using hausarbeit-jura.pdf)")
        return SHARED_PDFS / "hausarbeit-jura.pdf"


# ---- part 1: the two extractors on many PDFs ----------------------------------------------------------------

def measure(data: bytes, name: str, engine: str, settings: ChunkSettings) -> dict | None:
    """Return one engine's figures for one PDF; None when it refuses the file (encrypted, damaged, no text)."""
    started = time.perf_counter()
    try:
        read_pdf(data, name, None, 10_000, engine=engine)
        extracted = time.perf_counter()
        document = load_document(data, name, pdf_engine=engine)
    except DocumentError:
        return None
    seconds, loaded = extracted - started, time.perf_counter() - extracted
    chunks = chunk_document(document, settings.chunk_size, settings.overlap)
    return {"seconds": seconds, "loaded": loaded, "characters": len(document.text), "glued": glued_words(document.text),
            "headings": len(document.headings), "paths": len({c.heading_path for c in chunks if c.heading_path}),
            "pages": len(document.pages), "heading_pages": {h.title: document.page_at(h.start)
                                                            for h in document.headings}}


def compare_extractors(folders: list[Path], settings: ChunkSettings) -> None:
    files = sorted({p for folder in folders for p in folder.rglob("*.pdf")})
    print(f"PDF text: {len(files)} PDFs in {', '.join(str(f) for f in folders)}\n")
    totals = {e: dict.fromkeys(("seconds", "loaded", "characters", "glued", "headings", "paths"), 0.0) for e in ENGINES}
    worse_pages = fewer_headings = refused = 0
    rows = []
    for path in files:
        data = path.read_bytes()
        read = {engine: measure(data, path.name, engine, settings) for engine in ENGINES}
        old, new = read["pypdf"], read["pdfium"]
        if old is None or new is None:
            refused += (old is None) != (new is None)
            if (old is None) != (new is None):
                print(f"  {path.name}: only {'pdfium' if old is None else 'pypdf'} reads it")
            continue
        for engine in ENGINES:
            for key in totals[engine]:
                totals[engine][key] += read[engine][key]
        moved = sum(new["heading_pages"].get(t, p) != p for t, p in old["heading_pages"].items())
        worse_pages += moved + (new["pages"] != old["pages"])
        fewer_headings += new["paths"] < old["paths"] or new["headings"] < old["headings"]
        rows.append((path.name, old, new, moved))
    print(f"{'file':34} {'pages':>5} {'pypdf s':>8} {'pdfium s':>8} {'glued':>11} {'headings':>9} {'paths':>9}")
    for name, old, new, moved in sorted(rows, key=lambda r: -r[1]["seconds"])[:20]:
        print(f"{name[:34]:34} {old['pages']:5} {old['seconds']:8.3f} {new['seconds']:8.3f} "
              f"{old['glued']:5} {new['glued']:5} {old['headings']:4} {new['headings']:4} "
              f"{old['paths']:4} {new['paths']:4}" + (f"  {moved} heading(s) on another page" if moved else ""))
    old, new = totals["pypdf"], totals["pdfium"]
    print(f"\n{len(rows)} PDFs both read (the 20 slowest for pypdf listed; columns: pypdf then pdfium)")
    print(f"  extraction  pypdf {old['seconds']:7.2f} s   pdfium {new['seconds']:7.2f} s   "
          f"{old['seconds'] / max(new['seconds'], 1e-9):5.1f}x faster")
    print(f"  load_document (text + headings) pypdf {old['loaded']:7.2f} s   pdfium {new['loaded']:7.2f} s   "
          f"{old['loaded'] / max(new['loaded'], 1e-9):5.1f}x faster")
    print(f"  glued words pypdf {old['glued']:7.0f}     pdfium {new['glued']:7.0f}     "
          f"{old['glued'] / max(new['glued'], 1):5.1f}x fewer")
    print(f"  characters  pypdf {old['characters']:9,.0f} pdfium {new['characters']:9,.0f}")
    print(f"  headings    pypdf {old['headings']:7.0f}     pdfium {new['headings']:7.0f}; heading paths of the "
          f"chunks {old['paths']:.0f} vs {new['paths']:.0f}")
    print(f"  PDFs with fewer headings or paths under pdfium: {fewer_headings}; headings or page counts that "
          f"moved: {worse_pages}; read by one engine only: {refused}\n")


# ---- part 2: one PDF end to end -------------------------------------------------------------------------------

def ingest_once(path: Path, settings: ChunkSettings, embedder, engine: str) -> pipeline.IngestResult:
    """Return the result of ingesting path into a fresh embedded store, its PDF read by engine."""
    original = pipeline.load_document
    pipeline.load_document = functools.partial(load_document, pdf_engine=engine)
    try:
        with tempfile.TemporaryDirectory() as folder:
            store = open_store(folder)
            (result,) = pipeline.ingest([pipeline.SourceFile(path.name, path.read_bytes())], "bench", settings,
                                        embedder, store=store)
            store.close()
    finally:
        pipeline.load_document = original
    if not result.ok:
        raise SystemExit(f"ingest failed: {result.error}")
    return result


def cold(path: Path, settings: ChunkSettings, spec: str, engine: str) -> dict:
    """Return the stage seconds of a first ingest in a new process (model load included in 'load')."""
    code = (f"import json, sys, time; t = time.perf_counter(); from bench import ingest; from rag.embeddings import "
            f"get_embedder; from rag.chunking.chunker import ChunkSettings; from pathlib import Path; "
            f"e = get_embedder({spec!r}); r = ingest.ingest_once(Path({str(path)!r}), "
            f"ChunkSettings({settings.chunk_size}, {settings.overlap}), e, {engine!r}); "
            f"print(json.dumps(dict(r.stage_seconds, total=time.perf_counter() - t, chunks=r.chunks)))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def end_to_end(path: Path, settings: ChunkSettings, spec: str, runs: int) -> None:
    print(f"{path.name} end to end (embedder {spec}, chunk_size {settings.chunk_size}, overlap {settings.overlap})")
    colds = {engine: cold(path, settings, spec, engine) for engine in ENGINES}
    embedder = get_embedder(spec)
    embedder.embed_documents(["Aufwärmen"])
    warm: dict[str, list[pipeline.IngestResult]] = {engine: [] for engine in ENGINES}
    for _ in range(runs):  # interleaved, so drift on a shared machine hits both alike
        for engine in ENGINES:
            warm[engine].append(ingest_once(path, settings, embedder, engine))
    print(f"{'':16} {'extract':>8} {'chunk':>7} {'embed':>7} {'store':>7} {'total':>7} {'chunks':>6}")
    for engine in ENGINES:
        c = colds[engine]
        print(f"{'cold ' + engine:16} {c['extract']:8.2f} {c['chunk']:7.2f} {c['embed']:7.2f} {c['store']:7.2f} "
              f"{c['total']:7.2f} {c['chunks']:6}  (new process, model load included in total)")
    for engine in ENGINES:
        stages = {s: statistics.median(r.stage_seconds.get(s, 0.0) for r in warm[engine]) for s in STAGES}
        total = statistics.median(r.seconds for r in warm[engine])
        print(f"{'warm ' + engine:16} {stages['extract']:8.2f} {stages['chunk']:7.2f} {stages['embed']:7.2f} "
              f"{stages['store']:7.2f} {total:7.2f} {warm[engine][0].chunks:6}  (median of {runs})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pdf", nargs="?")
    parser.add_argument("--folder", action="append", type=Path, default=[])
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--chunk-size", type=int, default=600)
    parser.add_argument("--overlap", type=int, default=80)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-ingest", action="store_true", help="part 1 only")
    args = parser.parse_args()
    settings = ChunkSettings(args.chunk_size, args.overlap)
    with open("/proc/loadavg") as load:
        print(f"load average: {load.read().split()[0]}\n")
    compare_extractors([f for f in [SHARED_PDFS, *args.folder] if f.is_dir()], settings)
    if not args.no_ingest:
        end_to_end(Path(args.pdf) if args.pdf else default_pdf(), settings, args.embedder, args.runs)


if __name__ == "__main__":
    main()
