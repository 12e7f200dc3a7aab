"""Judging hits into a query set, the LLM judge, and query-set diffs on the command line.

    python -m rag judge "QUESTION" --collection C --chunk CHUNK_ID --grade 0|1|2 [--evidence "TEXT"] --queries FILE
    python -m rag judge --list --queries FILE [--json]
    python -m rag judge --llm SPEC --queries FILE --collection C [--top-k 10] [--json]
    python -m rag queries diff A B [--json]

A judgment names the chunk's document and the character span of its evidence (the whole chunk without
--evidence), so it holds for any chunking (rag.evaluation.querysets.judgments). Writes are atomic and take turns
with other writers of the file (a lock beside it); each saved change is a version of the query set
(FILE.versions.jsonl beside it).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rag import pipeline
from rag.cli import common
from rag.cli.store_options import add_collection, dump, embedder_of, store_of, store_options
from rag.errors import UsageError
from rag.evaluation import (
    GRADES,
    agreement,
    check_grade,
    diff_query_sets,
    diff_words,
    judge_with_llm,
    judgment_of,
    load_query_set,
    read_query_file,
    save_judgments,
    version_of,
)
from rag.generation import LLM_SPECS, get_llm
from rag.retrieval import SearchRequest
from rag.words import counted


def run_judge(args: argparse.Namespace) -> int:
    if args.list:
        return run_list(args)
    if args.llm:
        return run_llm(args)
    missing = [flag for flag, value in (("QUESTION", args.question), ("--chunk", args.chunk),
                                        ("--grade", args.grade)) if not value]
    if missing:
        raise UsageError(f"rag judge needs {', '.join(missing)}: rag judge \"QUESTION\" --collection C --chunk "
                         "CHUNK_ID --grade 0|1|2 --queries FILE (or --list, or --llm SPEC).")
    grade = check_grade(args.grade)
    read_query_file(args.queries)  # a malformed query set is said before the store is opened
    hit = store_of(args, read_only=True).chunk(args.collection, args.chunk)  # the app may hold it: reads only
    judgment = judgment_of(hit, grade, args.evidence)
    saved = save_judgments(args.queries, args.question, [judgment])
    if args.json:
        dump(saved.to_json() | {"judgment": judgment.to_json(), "queries": args.queries})
        return 0
    what = "new question" if saved.new_question else "replaced" if saved.replaced else "added"
    print(f"{GRADES[grade]} ({grade}): '{hit.document_title}' [{judgment.start}:{judgment.end}] for "
          f"{common.preview(saved.question, 60)!r} ({what}); {Path(args.queries).name} version "
          f"{saved.version['version']}, {counted(saved.version['judgments'], 'judgment')}.")
    return 0


def run_list(args: argparse.Namespace) -> int:
    _, queries = read_query_file(args.queries)
    version = {k: v for k, v in version_of(queries, args.queries).items() if k != "items"}
    agreed = agreement(queries)
    if args.json:
        dump({"queries": args.queries, "version": version, "questions": [
            {"query": q.text, "line": q.line, "documents": list(q.documents),
             "judgments": [j.to_json() for j in q.judgments]} for q in queries],
            "judgments": version["judgments"], "agreement": agreed.to_json()})
        return 0
    rows = []
    for query in queries:
        for j in query.judgments:
            rows.append([str(query.line), common.preview(query.text, 40), common.preview(j.document, 24),
                         f"{j.start}:{j.end}", f"{j.grade} {GRADES[j.grade]}", j.by,
                         common.preview(j.evidence or "", 30)])
    if rows:
        common.print_table(rows, ["line", "question", "document", "span", "grade", "by", "evidence"])
    print(f"\n{counted(version['questions'], 'question')}, {counted(version['judgments'], 'judgment')} "
          f"(version {version['version'] or 'not recorded'}). {agreed.words()}")
    return 0


def run_llm(args: argparse.Namespace) -> int:
    llm = get_llm(args.llm)  # a malformed spec is said before anything is searched
    _, queries = read_query_file(args.queries)
    if not queries:
        raise UsageError(f"{args.queries} holds no questions to judge yet; judge a hit or write questions first.")
    store = store_of(args, read_only=True)  # searches only: beside the app, through it
    request = pipeline.search_defaults(store, args.collection, SearchRequest(top_k=args.top_k))
    embedder = None if request.mode == "sparse" else embedder_of(args, store, args.collection)

    def search(question: str):
        return pipeline.search(question, args.collection, request, store=store, embedder=embedder)

    result = judge_with_llm(llm, args.queries, search,
                            progress=lambda done, total: common.progress(f"judged {done}/{total} questions"))
    _, queries = read_query_file(args.queries)
    agreed = agreement(queries)
    if args.json:
        dump(result.to_json() | {"queries": args.queries, "top_k": args.top_k, "agreement": agreed.to_json()})
        return 0
    print(f"{result.model} graded {counted(result.judged, 'unjudged hit')} of {counted(result.questions, 'question')} "
          f"(top {args.top_k}) and {counted(result.checked, 'hit')} you judged (your grade counts; they measure "
          f"agreement); {result.already} it had graded before. {agreed.words()}")
    return 0


def run_diff(args: argparse.Namespace) -> int:
    a, b = (load_query_set(common.read_file(p), p) for p in (args.a, args.b))
    diff = diff_query_sets(a, b)
    versions = [{k: v for k, v in version_of(q, p).items() if k != "items"} for q, p in ((a, args.a), (b, args.b))]
    if args.json:
        dump({"a": versions[0], "b": versions[1]} | diff)
        return 0
    print(f"A: {args.a} ({counted(versions[0]['questions'], 'question')}, "
          f"{counted(versions[0]['judgments'], 'judgment')})\n"
          f"B: {args.b} ({counted(versions[1]['questions'], 'question')}, "
          f"{counted(versions[1]['judgments'], 'judgment')})")
    print(diff_words(diff))
    for label, key in (("+", "questions_added"), ("-", "questions_removed"), ("~", "questions_changed")):
        for question in diff[key]:
            print(f"  {label} {common.preview(question, 100)}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    judge = commands.add_parser("judge", parents=[store_options()], help="judge a hit for a question into a query "
                                "set; --list; --llm: let an LLM grade the unjudged hits",
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    judge.add_argument("question", nargs="?", metavar="QUESTION", help="the question the hit is judged for")
    add_collection(judge)
    judge.add_argument("--chunk", metavar="CHUNK_ID", help="the hit's chunk_id (`rag search --json`)")
    judge.add_argument("--grade", metavar="0|1|2", help="2 relevant, 1 partly, 0 not relevant")
    judge.add_argument("--evidence", metavar="TEXT", help="the evidence: text inside the chunk (default: all of it)")
    judge.add_argument("--queries", required=True, metavar="FILE", help="the query set (JSONL; created if missing)")
    judge.add_argument("--list", action="store_true", help="list the judgments of the query set and the agreement")
    judge.add_argument("--llm", metavar="SPEC", help=f"grade every unjudged hit of the top k with an LLM: "
                       f"{', '.join(LLM_SPECS)}")
    judge.add_argument("--top-k", type=common.positive_int(1), default=10, help="with --llm: hits per question "
                       "(default 10)")
    judge.add_argument("--json", action="store_true", help="print one JSON object")
    judge.set_defaults(run=run_judge)

    queries = commands.add_parser("queries", help="query sets: diff two versions")
    actions = queries.add_subparsers(dest="action", metavar="ACTION", required=True)
    diff = actions.add_parser("diff", help="questions added and removed, judgments changed, from A to B")
    diff.add_argument("a", metavar="A", help="a query set file")
    diff.add_argument("b", metavar="B", help="another version of it")
    diff.add_argument("--json", action="store_true", help="print one JSON object")
    diff.set_defaults(run=run_diff)
