"""The `make-queries` command: a synthetic query set (JSONL) made from documents, for `rag eval` and `rag sweep`.

    python -m rag make-queries FILE... --out Q.jsonl [--count 50] [--llm SPEC] [--seed 0] [--json]

Without --llm, sentences of the documents are rewritten as queries; with it, the LLM writes a question per
passage and quotes its answer (rag.evaluation.synthetic.sets). Each line holds query, document, answer,
answer_start, "synthetic": true and method. A file that cannot be read is an error line and the others go on
(exit 1 at the end, as `rag ingest`); a document without usable text (a scan, an empty file) is a note. The
summary goes to stdout (--json: one object, SyntheticSet.summary, with "out"), notes and progress to stderr.
With --llm, questions not in their passage's language are dropped and counted ("wrong_language").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rag.cli import common
from rag.documents import Document, load_document
from rag.errors import DocumentError, EmptyDocumentError, NoTextLayerError, SyntheticQueriesError, UsageError
from rag.evaluation import DEFAULT_COUNT, SENTENCE_BIAS, SyntheticSet, make_queries
from rag.files import write_atomic
from rag.generation import LLM_SPECS, get_llm
from rag.words import counted


def register(commands: argparse._SubParsersAction) -> None:
    make = commands.add_parser("make-queries", help="a synthetic query set made from documents (sentences or an LLM)")
    make.add_argument("files", nargs="+", metavar="FILE")
    make.add_argument("--out", required=True, metavar="Q.jsonl", help="the query set to write (JSONL)")
    make.add_argument("--count", type=common.positive_int(1), default=DEFAULT_COUNT,
                      help=f"queries in all, spread over the documents by their length (default {DEFAULT_COUNT})")
    make.add_argument("--llm", metavar="SPEC", default=None,
                      help=f"let a chat model write the questions: {', '.join(LLM_SPECS)} (default: none, sentences "
                      "are rewritten)")
    make.add_argument("--seed", type=int, default=0, help="which sentences are picked and how they are rewritten")
    make.add_argument("--password", help="password for encrypted PDFs")
    make.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    make.set_defaults(run=run_make_queries)


def run_make_queries(args: argparse.Namespace) -> int:
    out = common.output_file(args.out)
    llm = get_llm(args.llm) if args.llm else None  # a malformed spec is said before any file is read
    documents, failed = read_documents(args.files, args.password)
    if not documents:
        raise SyntheticQueriesError(f"No synthetic query could be made: none of the {counted(len(args.files), 'file')} "
                                    "could be read or has text (see above).")
    progress = Progress()
    try:
        result = make_queries(documents, args.count, seed=args.seed, llm=llm, progress=progress)
    finally:
        progress.end()
    for note in result.notes:
        common.progress(f"note: {note}")
    if llm is None:
        common.progress(f"note: {SENTENCE_BIAS}")
    write(out, result)
    if args.json:
        print(json.dumps(result.summary() | {"out": str(out)}, ensure_ascii=False, indent=2))
        return 1 if failed else 0
    used = sum(1 for n in result.counts().values() if n)
    print(f"{len(result.queries)} synthetic queries ({result.method}) from {used} of "
          f"{counted(len(args.files), 'file')} written to {out}")
    if llm is not None:
        print(f"{result.wrong_language} of {result.asked} questions rejected: not in the passage's language")
    return 1 if failed else 0


def read_documents(paths: list[str], password: str | None) -> tuple[list[Document], int]:
    """Return the documents of paths and how many files failed; a failed or textless file is said on stderr."""
    documents, failed = [], 0
    for path in paths:
        try:
            documents.append(load_document(common.read_file(path), Path(path).name, password))
        except (NoTextLayerError, EmptyDocumentError) as error:
            common.progress(f"note: {error} No queries from it.")
        except (DocumentError, UsageError) as error:
            common.progress(f"error: {error}")
            failed += 1
    return documents, failed


def write(path: Path, result: SyntheticSet) -> None:
    """Write the set to path whole or not at all (rag.files.write_atomic)."""
    text = result.jsonl()  # checks every span once more
    try:
        write_atomic(path, text)
    except OSError as error:
        raise UsageError(f"--out {path}: cannot write it ({error.strerror}).") from error


class Progress:
    """One line per LLM question on stderr (rewritten in place on a terminal)."""

    def __init__(self) -> None:
        self.tty, self.shown = sys.stderr.isatty(), False

    def __call__(self, done: int, total: int, message: str) -> None:
        line = f"[{done}/{total}] {message}"
        self.shown = True
        if self.tty:
            print(f"\r\033[K{common.preview(line, 100)}", end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)

    def end(self) -> None:
        """End the rewritten line, so what follows starts on a line of its own."""
        if self.tty and self.shown:
            print(file=sys.stderr, flush=True)
