"""The `answer` command: the context of a query, the prompt built from it, and what an LLM answers with it.

The answer streams to stdout as it comes; what was cited, unused or unknown, and how full the context was,
goes to stderr. --json prints one object: answer, citations, unknown_citations, unused_sources, context (as
`rag context --json`), prompt_tokens, model, preset, language, context_window, rerank (as `rag search --json`:
null, or the reranker's spec, depth and scale). --rerank SPEC|off as on `rag context` (default: the collection's
saved reranker).
"""

from __future__ import annotations

import argparse
import sys

from rag import pipeline
from rag.cli import common
from rag.cli.rerank import reranker_of
from rag.cli.store import print_context_summary
from rag.cli.store_options import (
    add_context_options,
    add_query_options,
    dump,
    query_embedder,
    request_of,
    store_of,
    store_options,
)
from rag.generation import LLM_SPECS, PRESETS, answer_with, get_llm, load_template
from rag.rerank import describe
from rag.retrieval import CHAT_MAX_TOKENS, GENERATION_MAX_TOKENS

BUDGETS = {"chat": CHAT_MAX_TOKENS, "generation": GENERATION_MAX_TOKENS}


def register(commands: argparse._SubParsersAction) -> None:
    answer = commands.add_parser("answer", parents=[store_options()],
                                 help="what an LLM answers with the context, and which sources it cites")
    add_query_options(answer, "print answer, citations, context, prompt_tokens and model as one JSON object")
    answer.add_argument("--llm", metavar="SPEC", default=None,
                        help=f"chat model: {', '.join(LLM_SPECS)} (default $RAG_LLM); Ollama on OLLAMA_HOST, "
                        "OpenAI-compatible on OPENAI_BASE_URL")
    answer.add_argument("--preset", choices=PRESETS, default="chat",
                        help="chat (a short answer, ~3000 context tokens) or generation (a text, ~5000)")
    add_context_options(answer, default_tokens=0)
    answer.add_argument("--template", metavar="FILE", default=None,
                        help='a JSON file {"system": "...", "user": "... {context} ... {question} ..."}')
    answer.add_argument("--context-window", type=common.positive_int(256), default=None,
                        help="the model's context window in tokens (default: known for common models, else 8192)")
    answer.set_defaults(run=run_answer)


def run_answer(args: argparse.Namespace) -> int:
    llm = get_llm(args.llm)  # a missing or malformed spec is said before anything is searched
    template = load_template(args.template) if args.template else None
    store = store_of(args, read_only=True)
    request = pipeline.search_defaults(store, args.collection, request_of(args))
    args.mode, args.fusion = request.mode, request.fusion
    reranker = reranker_of(args, store, args.collection)  # as `rag context`: --rerank, else the collection's saved
    context = pipeline.retrieve(args.query, args.collection, request, args.max_tokens or BUDGETS[args.preset],
                                store=store, embedder=query_embedder(args, store), reranker=reranker,
                                label=args.label, overflow=args.overflow)

    def show(piece: str) -> None:
        print(piece, end="", flush=True)

    result = answer_with(llm, args.query, context, args.preset, template, args.label,
                         on_text=None if args.json else show, window=args.context_window)
    if args.json:
        dump(result.to_dict() | {"rerank": describe(reranker, args.rerank_depth)})
        return 0
    print()
    cited = result.citations
    print(f"\n{result.model}, {result.prompt.token_count} prompt tokens of {result.context_window}; "
          f"cited: {', '.join(f'[{args.label} {s.number}] {s.document_title}' for s in cited.cited) or 'nothing'}",
          file=sys.stderr)
    if cited.unknown:
        print(f"  cited but not in the context: {', '.join(str(n) for n in cited.unknown)}", file=sys.stderr)
    if cited.unused:
        print(f"  never cited: {', '.join(str(s.number) for s in cited.unused)}", file=sys.stderr)
    print_context_summary(context)
    return 0
