"""Does German compound splitting pay for itself in keyword search? Measured on XQuAD-de, same chunks, both ways.

    python -m bench.compounds [--chunk-size 350] [--overlap 50]

Keyword (BM25) retrieval of the 632 XQuAD-de dev questions, scored in memory with Qdrant's formula (the
collection's IDF, the chunk weights rag.store.keywords stores), once with the terms as they are and once with
every long word also split into known parts ("Steuererklärung" -> also "steuer", "erklär"): a part counts
when it is at least 4 letters and itself a word stem of the collection, the split of Snowball's stems,
greedy from the left, a linking "s" allowed. Prints hit@1/5/10 and MRR@10 of both, and how many terms a
chunk and a query gain.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
from collections import Counter
from pathlib import Path

from py_rust_stemmers import SnowballStemmer

from rag.chunking import chunk_document
from rag.evaluation.metrics import covered_unit, query_metrics
from rag.evaluation.querysets import import_squad, sweep_input
from rag.evaluation.sweeps import prepare_queries
from rag.retrieval import Hit
from rag.store import keywords

ROOT = Path(__file__).resolve().parents[1]

SQUAD = ROOT.parent / "shared" / "data" / "xquad-de" / "xquad.de.dev.json"
WORD = re.compile(r"[^\W\d_]+")
MIN_PART = 4
STEM = SnowballStemmer("german")


def parts(word: str, vocabulary: set[str]) -> list[str]:
    """Return the known stems a compound word is made of ([] when it is not split)."""
    word = word.lower()
    found, start = [], 0
    while start < len(word):
        for end in range(len(word), start + MIN_PART - 1, -1):
            stem = STEM.stem_word(word[start:end])
            if len(word[start:end]) >= MIN_PART and stem in vocabulary and end - start < len(word):
                found.append(stem)
                start = end + (1 if word[end : end + 1] == "s" and len(word) - end > MIN_PART else 0)
                break
        else:
            return []
    return found if len(found) > 1 else []


def vectors(texts: list[str], split: bool, vocabulary: set[str]) -> list[dict[int, float]]:
    analyzer = keywords.Analyzer(keywords.ANALYZER, ("de",))
    out = []
    for text in texts:
        indices, values = analyzer.document_vector(text, "de")
        weights = dict(zip(indices, values, strict=True))
        if split:
            extra = Counter(p for w in WORD.findall(text) if len(w) >= 2 * MIN_PART for p in parts(w, vocabulary))
            norm = keywords.K * (1 - keywords.B + keywords.B * len(WORD.findall(text)) / keywords.AVG_LEN)
            for stem, tf in extra.items():
                weights.setdefault(keywords.term_id(stem), tf * (keywords.K + 1) / (tf + norm))
        out.append(weights)
    return out


def query_terms(text: str, split: bool, vocabulary: set[str]) -> set[int]:
    terms = keywords.Analyzer(keywords.ANALYZER, ("de",)).query_ids(text)
    if split:
        long_words = [w for w in WORD.findall(text) if len(w) >= 2 * MIN_PART]
        terms |= {keywords.term_id(p) for w in long_words for p in parts(w, vocabulary)}
    return terms


def run(chunks, queries, split: bool, vocabulary: set[str]) -> dict[str, float]:
    docs = vectors([c.content for c in chunks], split, vocabulary)
    n = len(docs)
    frequency = Counter(i for d in docs for i in d)
    idf = {i: math.log((n - f + 0.5) / (f + 0.5) + 1) for i, f in frequency.items()}
    totals: Counter[str] = Counter()
    for query in queries:
        terms = query_terms(query.text, split, vocabulary)
        scores = [(sum(idf.get(t, 0) * d.get(t, 0.0) for t in terms), i) for i, d in enumerate(docs)]
        ranked = [i for s, i in sorted(scores, key=lambda x: (-x[0], x[1]))[:10] if s > 0]
        covers = [covered_unit(query, hit_of(chunks[i])) for i in ranked]
        totals.update(query_metrics(covers, len(query.documents), [1, 5, 10]))
    return {k: v / len(queries) for k, v in totals.items()} | {"terms": statistics.fmean(map(len, docs))}


def hit_of(chunk) -> Hit:
    return Hit(None, chunk.content, chunk.document_id, "", "", chunk.chunk_index, (), None, None, chunk.start,
               chunk.end)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk-size", type=int, default=350)
    parser.add_argument("--overlap", type=int, default=50)
    args = parser.parse_args()
    documents, queries = sweep_input(import_squad(SQUAD.read_bytes(), str(SQUAD)))
    queries = prepare_queries(queries, documents)
    chunks = [c for d in documents for c in chunk_document(d, args.chunk_size, args.overlap)]
    vocabulary = {STEM.stem_word(w.lower()) for c in chunks for w in WORD.findall(c.content) if len(w) >= MIN_PART}
    print(f"{len(chunks)} chunks, {len(queries)} questions, {len(vocabulary)} stems of {MIN_PART}+ letters")
    print(f"{'keywords':28} {'hit@1':>6} {'hit@5':>6} {'hit@10':>6} {'mrr@10':>7} {'terms/chunk':>11}")
    for split in (False, True):
        m = run(chunks, queries, split, vocabulary)
        name = "stemmed + compound parts" if split else "stemmed (rag.store.keywords)"
        print(f"{name:28} {m['hit@1']:>6.3f} {m['hit@5']:>6.3f} {m['hit@10']:>6.3f} {m['mrr@10']:>7.3f} "
              f"{m['terms']:>11.1f}", flush=True)


if __name__ == "__main__":
    main()
