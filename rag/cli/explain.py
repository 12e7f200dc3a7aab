"""`rag search "..." --explain CHUNK_ID`: one chunk's way through the stages of a search (rag.evaluation.funnel.stages).

Text: a table of the stages (rank and score, or why not), then where the chunk was lost; --json: one object
{"query", "k", "mode", "stages", "lost_at"} with "stages" as each query of `rag eval --json` carries them.
"""

from __future__ import annotations

import argparse
import json
import sys

from rag import pipeline
from rag.cli import common
from rag.errors import UsageError
from rag.evaluation import ChunkStages, Explanation, absent_note, explain_chunk, verdict
from rag.retrieval import SearchRequest
from rag.store import CANDIDATES, Store


def run_explain(args: argparse.Namespace, store: Store) -> int:
    """Print the chunk's stages for the query at --top-k: its ranks in every mode, lost_at in the search's mode."""
    if args.document or args.include_toc or args.threshold is not None:
        raise UsageError("--explain ranks over the whole collection, as `rag eval` does: leave out --document, "
                         "--include-toc and --threshold.")
    request = SearchRequest(mode=args.mode, fusion=args.fusion, top_k=args.top_k)
    embedder = pipeline.embedder_for(store, args.collection, args.embedder)  # the dense ranks, in every mode
    chunk = store.chunk(args.collection, args.explain)
    explanation = explain_chunk(args.query, chunk, args.collection, request, store=store, embedder=embedder)
    if args.json:
        json.dump(explanation.to_json(), sys.stdout, ensure_ascii=False)
        print()
        return 0
    print_explanation(explanation)
    return 0


def stage_rows(stages: ChunkStages, mode: str, reranked: bool = False,
               explanation: Explanation | None = None) -> list[list[str]]:
    """Return the rows of the stage table: stage, rank, score, note (rag.evaluation.absent_note with explanation)."""
    rows = []
    for stage, kind in (("dense", "cosine"), ("keyword", "bm25"), ("fused", mode), ("reranked", "reranker's own")):
        place = getattr(stages, stage)
        note = f"not among the {CANDIDATES} candidates" if stage in ("dense", "keyword") else "not in this ranking"
        note = "no reranker" if stage == "reranked" and not reranked else note
        note = absent_note(explanation, stage) if explanation is not None else note
        rows.append([stage, str(place.rank), f"{place.score:.3f} ({kind})", place.child_words] if place else
                    [stage, "-", "-", note])
    rows.append(["context", "-", "-", stages.context])
    read = "unknown" if stages.read is None else "yes" if stages.read == "whole" else f"no ({stages.read})"
    rows.append(["read whole", "-", "-", read])
    return rows


def print_explanation(explanation: Explanation) -> None:
    stages, k = explanation.stages, explanation.k
    hit = stages.chunk
    print(f"Chunk {hit.chunk_id} ({common.preview(hit.document_title, 40)}, chunk {hit.chunk_index}) for "
          f"\"{common.preview(explanation.query, 60)}\" ({explanation.mode} search, top {k}):\n")
    common.print_table(stage_rows(stages, explanation.mode, explanation.reranked, explanation),
                       ["stage", "rank", "score", "note"])
    print(f"\n{verdict(explanation)}")
