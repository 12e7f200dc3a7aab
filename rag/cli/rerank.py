"""The reranking options of search, context, eval and sweep: --rerank SPEC, --rerank-depth N, --rerank-modes."""

from __future__ import annotations

import argparse
from dataclasses import replace

from rag.cli.common import progress
from rag.errors import UsageError
from rag.evaluation import SearchMode
from rag.rerank import DEFAULT_DEPTH, MAX_DEPTH, RERANK_SPECS, Reranker, get_reranker
from rag.store import Store

RERANK_MODES = ("off", "on")
OFF = ("off", "none")  # --rerank off: no reranker, not even the collection's default


def add_rerank_options(parser: argparse.ArgumentParser, sweep: bool = False) -> None:
    parser.add_argument("--rerank", metavar="SPEC", default=None,
                        help=f"reorder the candidates with a reranker: {RERANK_SPECS}, or off (default: the "
                        "collection's saved default, else off; no reranker model ships with RAG Lab, see "
                        "docs/reranking.md)")
    parser.add_argument("--rerank-depth", type=depth_option, default=DEFAULT_DEPTH, metavar="N",
                        help=f"candidates the reranker reads per query (default {DEFAULT_DEPTH}, at most {MAX_DEPTH})")
    if sweep:
        parser.add_argument("--rerank-modes", type=rerank_modes_option, default=None, metavar="off,on",
                            help="with --rerank: rows without (off) and with (on) the reranker for every mode "
                            "(default off,on: the paired test then says whether reranking helps)")


def depth_option(text: str) -> int:
    """Return a rerank depth from 1 to MAX_DEPTH; a usage error otherwise."""
    try:
        depth = int(text)
    except ValueError:
        depth = 0
    if not 1 <= depth <= MAX_DEPTH:
        raise argparse.ArgumentTypeError(f"give a whole number from 1 to {MAX_DEPTH}, e.g. {DEFAULT_DEPTH}")
    return depth


def rerank_modes_option(text: str) -> tuple[str, ...]:
    """Return the distinct values of "off,on" in order; a usage error for anything else."""
    values = tuple(dict.fromkeys(v.strip().lower() for v in text.split(",") if v.strip()))
    if not values or any(v not in RERANK_MODES for v in values):
        raise argparse.ArgumentTypeError("give off, on or off,on")
    return values


def reranker_of(args: argparse.Namespace, store: Store | None = None, collection: str | None = None
                ) -> Reranker | None:
    """Return the reranker --rerank names; without --rerank the one saved as the collection's default (sweep
    --apply-best), said on stderr; None for --rerank off or when there is neither."""
    spec = (getattr(args, "rerank", None) or "").strip()
    if not spec and store is not None and collection and store.has_collection(collection):
        spec = store.collection_setting(collection, "rerank") or ""
        if spec:
            progress(f"note: reranking with {spec}, the default saved with '{collection}' (--rerank off: without)")
    return get_reranker(spec) if spec and spec.lower() not in OFF else None


def with_rerank(modes: list[SearchMode], args: argparse.Namespace) -> list[SearchMode]:
    """Return each mode off and/or on rerank, by --rerank-modes (default off,on); modes as given without --rerank."""
    if (getattr(args, "rerank", None) or "off").strip().lower() in OFF:
        if getattr(args, "rerank_modes", None):
            raise UsageError("--rerank-modes needs a reranker: give --rerank SPEC too (e.g. tei:http://localhost:8080).")
        return modes
    return [replace(m, rerank=value == "on") for m in modes for value in args.rerank_modes or RERANK_MODES]
