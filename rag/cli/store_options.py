"""What the store commands share: the store and the embedder named by the options, the options themselves (--store,
--qdrant-url, --collection, --embedder, --fusion, a query's, a context's), and JSON on stdout."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from rag import pipeline
from rag.cli.chunk import common
from rag.cli.rerank import add_rerank_options
from rag.embeddings import EMBEDDER_SPECS
from rag.errors import RagError
from rag.retrieval import CHAT_MAX_TOKENS, DEFAULT_OVERFLOW, GENERATION_MAX_TOKENS, OVERFLOWS, SearchRequest
from rag.settings import load as load_settings
from rag.store import DEFAULT_FUSION, MODES, Store, open_store, parse_fusion, reading_note, size_note


def store_of(args: argparse.Namespace, read_only: bool = False) -> Store:
    """Return the store named by --store / --qdrant-url (else RAG_QDRANT_PATH / QDRANT_URL); note its size once.
    read_only: a folder the app holds is read through the app (rag.store.reads), said on stderr."""
    store = open_store(path=getattr(args, "store", None), url=getattr(args, "qdrant_url", None), read_only=read_only)
    if note := reading_note(store) or size_note(store):
        common.progress(f"note: {note}")
    return store


def embedder_of(args: argparse.Namespace, store: Store, collection: str):
    """Return --embedder's embedder, else the one the collection was made with (or the default).

    --query-prompt / --document-prompt (ingest) apply to a new collection; an existing one keeps its own.
    """
    prompts = {"query_prompt": getattr(args, "query_prompt", None),
               "document_prompt": getattr(args, "document_prompt", None)}
    return pipeline.embedder_for(store, collection, getattr(args, "embedder", None), **prompts)


def query_embedder(args: argparse.Namespace, store: Store):
    """Return the embedder a query needs: None for --mode sparse (keyword search embeds nothing)."""
    return None if args.mode == "sparse" else embedder_of(args, store, args.collection)


def dump(data: object) -> None:
    json.dump(data, sys.stdout, ensure_ascii=False)
    print()


def add_context_options(parser: argparse.ArgumentParser, default_tokens: int = CHAT_MAX_TOKENS) -> None:
    default = f"default {default_tokens}" if default_tokens else "default: by --preset"
    parser.add_argument("--max-tokens", type=common.positive_int(1), default=default_tokens or None,
                        help=f"token budget of the context ({default}; {CHAT_MAX_TOKENS} chat, "
                        f"{GENERATION_MAX_TOKENS} content generation)")
    parser.add_argument("--overflow", choices=OVERFLOWS, default=DEFAULT_OVERFLOW,
                        help="a chunk that does not fit: truncate it at a sentence and stop (default), skip it and "
                        "try the next, or stop")
    parser.add_argument("--label", default="Quelle", help="source label in the headers (default Quelle)")


def given(what: str) -> Callable[[str], str]:
    """Return an argparse type that refuses an empty value (an unset $ID in a script) as a usage error."""
    def parse(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"{what} is empty (an unset variable in a script?); give one")
        return value

    return parse


def store_options() -> argparse.ArgumentParser:
    """Return the options every store command takes, accepted before or after the command name."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--store", metavar="PATH", default=argparse.SUPPRESS,
                        help="embedded Qdrant folder (default $RAG_QDRANT_PATH or ./data/qdrant)")
    parent.add_argument("--qdrant-url", metavar="URL", default=argparse.SUPPRESS,
                        help="a Qdrant server or cluster instead (default $QDRANT_URL); key from $QDRANT_API_KEY")
    return parent


def add_query_options(parser: argparse.ArgumentParser, json_help: str) -> None:
    parser.add_argument("query", metavar="QUERY")
    add_collection(parser)
    parser.add_argument("--top-k", type=common.positive_int(1), default=5, help="chunks to retrieve (default 5)")
    parser.add_argument("--threshold", type=common.finite_float, default=None,
                        help="minimum score of the mode: cosine (dense), BM25 (sparse) or fused (hybrid)")
    parser.add_argument("--mode", choices=MODES, default=None,
                        help="dense: embeddings; sparse: BM25 keywords; hybrid: both, fused (default: hybrid when "
                        "the collection has keyword vectors, else dense)")
    add_fusion(parser)
    parser.add_argument("--include-toc", action="store_true",
                        help="also search chunks flagged as a table of contents (left out by default)")
    add_embedder(parser)
    add_rerank_options(parser)
    parser.add_argument("--json", action="store_true", help=json_help)


def request_of(args: argparse.Namespace) -> SearchRequest:
    """Return the search the query options ask for (add_query_options; --document where the command has it)."""
    return SearchRequest(mode=args.mode, fusion=args.fusion, top_k=args.top_k, score_threshold=args.threshold,
                         document_ids=getattr(args, "document", None) or None, include_toc=args.include_toc,
                         rerank_depth=args.rerank_depth)


def fusion_option(text: str) -> str:
    """Return a fusion spec after checking it (rag.retrieval.fusion); a usage error names the valid forms."""
    try:
        return parse_fusion(text).spec
    except RagError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_fusion(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fusion", type=fusion_option, default=None, metavar="SPEC",
                        help="how hybrid fuses the dense and keyword lists: rrf, rrf:k=10:w=0.7, dbsf, convex:w=0.6 "
                        f"(default: the collection's saved fusion, else {DEFAULT_FUSION})")


def add_collection(parser: argparse.ArgumentParser, required: bool = False) -> None:
    default = None if required else load_settings().collection
    parser.add_argument("--collection", required=required, default=default, type=given("the collection name"),
                        help="Qdrant collection" + ("" if required else f" (default {default})"))


def add_embedder(parser: argparse.ArgumentParser, prompts: bool = False) -> None:
    parser.add_argument("--embedder", metavar="SPEC",
                        help="embedder spec: " + ", ".join(EMBEDDER_SPECS) + " (default: the collection's own)")
    if prompts:
        parser.add_argument("--query-prompt", metavar="TEXT", default=None,
                            help="put before each query (default: the model's own, e.g. e5 'query: '); recorded "
                            "with a new collection, whose searches use it")
        parser.add_argument("--document-prompt", metavar="TEXT", default=None,
                            help="put before each chunk (default: the model's own, e.g. e5 'passage: ')")
