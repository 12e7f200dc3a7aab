"""Which default chunk_size fits the default model: the share of chunks longer than it reads at once.

    python -m bench.defaults [--sizes 200,250,...] [--overlap-share 0.15] [--embedder SPEC]

Chunks ~20 real German documents (texlive-lang-german manuals, the shared PDFs and the OWASP ASVS
Markdown) with the structure strategy at each chunk_size (overlap = overlap-share x chunk_size), counts
each chunk in the embedder's own tokens, and prints per chunk_size: chunks, mean cl100k tokens, mean
model tokens, the model/cl100k ratio, and the share of chunks over the model's input (the default must
keep that at or under 5 %), for all documents together and for the worst document.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from bench.material import SHARED, german_markdown, german_pdfs
from rag.chunking import chunk_document
from rag.documents import load_document
from rag.embeddings import get_embedder
from rag.errors import RagError

ROOT = Path(__file__).resolve().parents[1]


def documents() -> list:
    paths = [*german_pdfs(), SHARED / "pdfs" / "hausarbeit-jura.pdf", *german_markdown()]
    loaded = []
    for path in paths:
        try:
            loaded.append(load_document(path.read_bytes(), path.name))
        except RagError as error:
            print(f"(skipped {path.name}: {error})")
    return loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,250,300,350,400,450,500,600")
    parser.add_argument("--overlap-share", type=float, default=0.15)
    parser.add_argument("--embedder", default=None)
    args = parser.parse_args()
    embedder = get_embedder(args.embedder)
    limit = embedder.max_input_tokens
    docs = documents()
    print(f"{len(docs)} documents, {sum(len(d.text) for d in docs):,} characters; {embedder.model_id} reads "
          f"{limit} tokens at once\n")
    print(f"{'chunk_size':>10} {'overlap':>7} {'chunks':>6} {'cl100k':>6} {'model':>6} {'ratio':>5} "
          f"{'over limit':>10} {'worst document':>28}")
    for size in (int(s) for s in args.sizes.split(",")):
        overlap = int(size * args.overlap_share)
        counts, over, worst = [], 0, (0.0, "")
        for document in docs:
            chunks = chunk_document(document, size, overlap)
            model = [embedder.count_tokens(c.content) for c in chunks]
            counts += [(c.token_count, m) for c, m in zip(chunks, model, strict=True)]
            share = sum(m > limit for m in model) / max(len(model), 1)
            over += sum(m > limit for m in model)
            worst = max(worst, (share, document.title))
        ratio = statistics.fmean(m / t for t, m in counts if t)
        print(f"{size:>10} {overlap:>7} {len(counts):>6} {statistics.fmean(t for t, _ in counts):>6.0f} "
              f"{statistics.fmean(m for _, m in counts):>6.0f} {ratio:>5.2f} {over / len(counts):>9.1%} "
              f"{worst[0]:>6.1%} {worst[1][:21]:>21}", flush=True)


if __name__ == "__main__":
    main()
