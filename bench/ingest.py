"""A real German PDF end to end: time per stage, next to the embedder's raw encode of the same texts.

    python -m bench.ingest [PDF] [--embedder local] [--chunk-size 600] [--overlap 80] [--runs 2]

Without PDF, takes l2kurz.pdf (58 pages, "LaTeX2e-Kurzbeschreibung") from Debian's texlive-lang-german
(apt-get download), falling back to ../shared/data/pdfs/hausarbeit-jura.pdf. The pipeline runs into a
fresh embedded Qdrant folder each run. The raw reference calls the same sentence-transformers model's
encode() on the same chunk texts with the same batch size: the pipeline's overhead is everything it
spends beyond that (reading, chunking, batching, writing to Qdrant).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rag import pipeline
from rag.chunking.chunker import ChunkSettings, chunk_document
from rag.documents.loader import load_document
from rag.embeddings import get_embedder
from rag.store.open import open_store

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "bench" / "out"


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
        return ROOT.parent / "shared" / "data" / "pdfs" / "hausarbeit-jura.pdf"


def run_pipeline(path: Path, settings: ChunkSettings, embedder) -> pipeline.IngestResult:
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(folder)
        (result,) = pipeline.ingest([pipeline.SourceFile(path.name, path.read_bytes())], "bench", settings, embedder,
                                    store=store)
        store.close()
    if not result.ok:
        raise SystemExit(f"ingest failed: {result.error}")
    return result


def run_raw(texts: list[str], embedder) -> float:
    """Return the seconds the bare model takes to encode texts (same batch size, normalised)."""
    started = time.perf_counter()
    embedder.model.encode(texts, batch_size=embedder.batch_size, normalize_embeddings=True,
                          convert_to_numpy=True, show_progress_bar=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pdf", nargs="?")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--chunk-size", type=int, default=600)
    parser.add_argument("--overlap", type=int, default=80)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    path = Path(args.pdf) if args.pdf else default_pdf()
    settings = ChunkSettings(args.chunk_size, args.overlap)
    embedder = get_embedder(args.embedder)
    started = time.perf_counter()
    embedder.embed_documents(["Aufwärmen"])  # model load is a one-time cost per process, reported apart
    print(f"model {embedder.model_id}: loaded in {time.perf_counter() - started:.1f} s")
    document = load_document(path.read_bytes(), path.name)
    texts = [c.content for c in chunk_document(document, settings.chunk_size, settings.overlap)]
    print(f"{path.name}: {len(document.pages)} pages, {len(document.text):,} characters, {len(texts)} chunks "
          f"(chunk_size {settings.chunk_size}, overlap {settings.overlap}); median of {args.runs} runs\n")
    raws, results = [], []
    for _ in range(args.runs):  # interleaved, so drift on a shared machine hits both alike
        raws.append(run_raw(texts, embedder))
        results.append(run_pipeline(path, settings, embedder))
    raw = statistics.median(raws)
    stages = {s: statistics.median(r.stage_seconds.get(s, 0.0) for r in results) for s in pipeline.STAGES}
    total = statistics.median(r.seconds for r in results)
    print(f"{'stage':28} {'seconds':>8} {'share':>6}")
    for stage, seconds in stages.items():
        print(f"{'pipeline ' + stage:28} {seconds:8.2f} {seconds / total:6.1%}")
    print(f"{'pipeline total':28} {total:8.2f}")
    print(f"{'raw model.encode (reference)':28} {raw:8.2f}")
    print(f"\noverhead over raw encoding: {(total - raw) / raw:+.1%} "
          f"(embed stage alone: {(stages['embed'] - raw) / raw:+.1%}); {len(texts) / total:.1f} chunks/s end to end")


if __name__ == "__main__":
    main()
