"""Command-line commands over the store: ingest, search, context, collections, documents, delete,
delete-collection."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag import pipeline
from rag.chunking import CHUNK_HEADER_CHOICES, DEFAULT_CHUNK_HEADERS
from rag.cli.chunk import common
from rag.cli.rerank import reranker_of
from rag.cli.store_options import (
    add_collection,
    add_context_options,
    add_embedder,
    add_query_options,
    dump,
    embedder_of,
    given,
    query_embedder,
    request_of,
    store_of,
    store_options,
)
from rag.documents import boxes_from_payload
from rag.embeddings import engine_facts
from rag.errors import DocumentNotFoundError
from rag.ingested import IngestOptions, Watch
from rag.rerank import SCORE_KIND, describe
from rag.retrieval import Context
from rag.runs import collection_defaults
from rag.store import LANGUAGE_CHOICES, DocumentArchive, Hit, default_archive_dir, delete_collection, delete_document
from rag.words import counted, plural


class IngestProgress:
    """A progress line on stderr: one rewritten bar on a terminal, one line per stage elsewhere."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def __call__(self, event: pipeline.Progress) -> None:
        head = f"[{event.file_index + 1}/{event.files}] {event.filename}: {event.stage}"
        if event.stage in ("embed", "store") and event.total > 1:
            filled = int(20 * event.done / event.total)
            if event.children:  # the count stays last: "done/total" of chunks and children together
                head += f" ({event.total - event.children} chunks + {event.children} children)"
            head += f" {'█' * filled}{'░' * (20 - filled)} {event.done}/{event.total}"
        if self.tty:
            end = "\n" if event.stage in ("done", "error") else ""
            print(f"\r\033[K{head}", end=end, file=sys.stderr, flush=True)
        elif event.stage != "embed" or event.done in (0, event.total):
            print(head, file=sys.stderr, flush=True)


def run_ingest(args: argparse.Namespace) -> int:
    settings = common.chunk_settings(args, args.parser)
    files = [pipeline.SourceFile(Path(p).name, None, args.password, Path(p)) for p in args.files]
    store = store_of(args)
    embedder = embedder_of(args, store, args.collection)
    archive = DocumentArchive(default_archive_dir(store.location, store.local))
    options = IngestOptions(language=args.language, child_size=args.child_size, keep_versions=args.keep_versions,
                            chunk_headers=None if args.chunk_headers is None else args.chunk_headers == "on")
    results = pipeline.ingest(files, args.collection, settings, embedder, store=store, archive=archive,
                              options=options, watch=Watch(progress=IngestProgress()))
    failed = [r for r in results if not r.ok and not r.skipped]
    for result in results:
        if result.error:
            print(f"{'note' if result.skipped else 'error'}: {result.error}", file=sys.stderr)
    if any(r.ok for r in results):
        common.after_write(store, args.collection, allowed=args.index)
    if args.json:
        dump({"collection": args.collection, "embedder": embedder.model_id, **engine_facts(embedder),
              "results": [vars(r) | {"status": r.status, "empty_pages": list(r.empty_pages), "notes": list(r.notes),
                                     "replaced": list(r.replaced)} for r in results]})
    else:
        rows = [[r.filename, r.status, str(r.pages), f"{r.characters:,}", str(r.chunks), f"{r.seconds:.1f} s"]
                for r in results]
        common.print_table(rows, ["file", "status", "pages", "characters", "chunks", "time"])
        for result in results:
            for note in result.notes:
                print(f"note: {result.filename}: {note}")
        stored = sum(r.ok for r in results)
        print(f"\n{stored} of {len(results)} files in '{args.collection}' ({embedder.model_id})")
    return 1 if failed else 0


def hit_json(hit: Hit, mode: str = "dense") -> dict:
    """Return a hit as JSON: score (of the mode, kind in score_kind), per-mode scores and ranks, location."""
    return {
        "score": hit.score,
        "score_kind": hit.score_kind,
        "mode": mode,
        "dense_score": hit.dense_score,
        "sparse_score": hit.sparse_score,
        "dense_rank": hit.dense_rank,
        "sparse_rank": hit.sparse_rank,
        "document_title": hit.document_title,
        "document_id": hit.document_id,
        "chunk_index": hit.chunk_index,
        "heading_path": list(hit.heading_path),
        "page_start": hit.page_start,
        "page_end": hit.page_end,
        "content": hit.content,
        "chunk_id": hit.chunk_id, **({"child": hit.child.to_json()} if hit.child else {}),  # parent–child only
        "boxes": [box.as_dict() for box in boxes_from_payload(hit.payload)],  # [] for text, or ingested before
    } | ({"retrieved_rank": hit.retrieved_rank, "retrieved_score": hit.retrieved_score}
         if hit.score_kind == SCORE_KIND else {})


def rank_label(rank: int | None, score: float | None) -> str:
    """Return "3 (0.812)" for a candidate-list position, "-" when the chunk was not in that list."""
    return "-" if rank is None or score is None else f"{rank} ({score:.3f})"


def run_search(args: argparse.Namespace) -> int:
    store = store_of(args, read_only=True)
    request = pipeline.search_defaults(store, args.collection, request_of(args))
    args.mode, args.fusion = request.mode, request.fusion
    if args.explain is not None:
        from rag.cli.explain import run_explain  # the funnel's imports only when asked

        return run_explain(args, store)
    reranker = reranker_of(args, store, args.collection)
    hits = pipeline.search(args.query, args.collection, request, store=store,
                           embedder=(embedder := query_embedder(args, store)), reranker=reranker)
    if args.json:
        dump({"hits": [hit_json(h, args.mode) for h in hits], "rerank": describe(reranker, args.rerank_depth),
              **engine_facts(embedder)})
        return 0
    hybrid = args.mode == "hybrid"
    rows = []
    for rank, h in enumerate(hits, 1):
        explain = [rank_label(h.dense_rank, h.dense_score), rank_label(h.sparse_rank, h.sparse_score)] if hybrid else []
        before = [rank_label(h.retrieved_rank, h.retrieved_score)] if reranker else []
        rows.append([str(rank), "-" if h.score is None else f"{h.score:.3f}", *before, *explain,
                     common.preview(h.document_title, 30), common.pages_label(h.page_start, h.page_end),
                     common.preview(" › ".join(h.heading_path), 30), common.preview(h.content, 60)])
    kind = f"reranker: {reranker.scale}" if reranker else hits[0].score_kind if hits else args.mode
    explain = ["dense rank (cosine)", "keyword rank (bm25)"] if hybrid else []
    before = [f"{args.mode} rank (score)"] if reranker else []
    common.print_table(rows, ["rank", f"score ({kind})", *before, *explain, "document", "pages", "heading path",
                              "content"])
    if len(hits) < args.top_k:
        why = "no more chunks contain a query term." if args.mode == "sparse" else "the collection has no more."
        print(f"\n{len(hits)} of top_k {args.top_k}: "
              + ("the threshold removed the rest." if args.threshold is not None else why))
    return 0


def run_context(args: argparse.Namespace) -> int:
    store = store_of(args, read_only=True)
    request = pipeline.search_defaults(store, args.collection, request_of(args))
    args.mode, args.fusion = request.mode, request.fusion
    context = pipeline.retrieve(args.query, args.collection, request, args.max_tokens, store=store,
                                embedder=query_embedder(args, store),
                                reranker=reranker_of(args, store, args.collection), label=args.label,
                                overflow=args.overflow)
    if args.json:
        dump(context.to_dict())
        return 0
    print(context.text)
    print_context_summary(context)
    return 0


def print_context_summary(context: Context) -> None:
    """Print to stderr how full the context is and every chunk that was cut or left out, with why."""
    print(f"\n{context.token_count} of {context.max_tokens} tokens, {counted(len(context.included), 'chunk')} "
          f"included, "
          f"{len(context.truncated)} cut, {len(context.dropped)} dropped", file=sys.stderr)
    for cut in context.truncated:
        print(f"  cut {cut.hit.document_title} #{cut.hit.chunk_index}: {cut.reason}", file=sys.stderr)
    for dropped in context.dropped:
        print(f"  dropped {dropped.hit.document_title} #{dropped.hit.chunk_index}: {dropped.reason}", file=sys.stderr)


def run_collections(args: argparse.Namespace) -> int:
    store = store_of(args, read_only=True)
    infos = store.collections()
    if args.json:
        dump([{"name": c.name, "points": c.points, "embedder": c.embedder, "dimension": c.dimension,
               "foreign": c.foreign, "sparse": c.sparse, "chunk_headers": c.chunk_headers, "child_size": c.child_size,
               "children": c.children,
               "defaults": None if c.foreign else collection_defaults(store, c.name),
               "index": index.as_json() if (index := store.index_state(c.name)) else None} for c in infos])
        return 0
    rows = [[c.name, str(c.points), c.embedder or "(not made by RAG Lab)", str(c.dimension),
             "yes" if c.sparse else "no" if c.foreign else "re-ingest to enable"] for c in infos]
    common.print_table(rows, ["collection", "points", "embedder", "dimension", "keyword search"])
    return 0


def run_documents(args: argparse.Namespace) -> int:
    infos = store_of(args, read_only=True).documents(args.collection)
    if args.json:
        dump([{"title": d.title, "document_id": d.document_id, "chunks": d.chunks, "pages": d.pages,
               "chunk_size": d.chunk_size, "overlap": d.overlap, "strategy": d.strategy,
               "embedder": d.embedder, "ingested_at": d.ingested_at, "complete": d.complete,
               "interrupted_chunks": d.interrupted, "missing_chunks": d.missing} for d in infos])
        return 0
    rows = [[common.preview(d.title, 40), d.document_id[:12], str(d.chunks), str(d.pages or ""),
             str(d.chunk_size or ""), str(d.overlap if d.overlap is not None else ""),
             "yes" if d.complete else "NO (interrupted)"] for d in infos]
    common.print_table(rows, ["title", "id", "chunks", "pages", "chunk_size", "overlap", "complete"])
    incomplete = [d for d in infos if not d.complete]
    if incomplete:
        were = plural(len(incomplete), "was", "were")
        print(f"\n{counted(len(incomplete), 'document')} {were} not written completely (an ingest was interrupted); "
              "searches do not see those chunks. Ingest the file again to repair it, or delete it with "
              f"python -m rag delete --collection {args.collection} --document ID --interrupted")
    if cut := [d for d in incomplete if d.missing]:
        print(f"{len(cut)} of them lost chunks to a delete that was cut short: ingest the file again, or finish the "
              f"delete with python -m rag delete --collection {args.collection} --document ID")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    if args.interrupted and args.document is None:
        args.parser.error("--interrupted needs --document ID: it deletes what an interrupted ingest left of one "
                          f"document (list them with python -m rag documents --collection {args.collection})")
    if args.all:
        return run_delete_collection(args)
    if args.document is None:
        args.parser.error(f"say what to delete: --document ID (one document), or the whole collection with "
                          f"python -m rag delete-collection {args.collection}")
    store = store_of(args)
    matches = [d for d in store.documents(args.collection)
               if d.document_id == args.document or d.document_id.startswith(args.document)]
    if len(matches) != 1:
        found = "no document" if not matches else f"{len(matches)} documents"
        raise DocumentNotFoundError(f"'{args.collection}' has {found} with id {args.document!r}. "
                                    f"List them with: python -m rag documents --collection {args.collection}")
    archive = DocumentArchive(default_archive_dir(store.location, store.local))
    removed = delete_document(store, archive, args.collection, matches[0].document_id,
                              only_interrupted=args.interrupted)
    what = "the unfinished write of " if args.interrupted else ""
    print(f"deleted {what}'{matches[0].title}' ({counted(removed, 'chunk')}) from '{args.collection}'")
    common.after_write(store, args.collection)
    return 0


def run_delete_collection(args: argparse.Namespace) -> int:
    store = store_of(args)
    delete_collection(store, DocumentArchive(default_archive_dir(store.location, store.local)), args.collection)
    print(f"deleted collection '{args.collection}'")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    parent = store_options()
    ingest = commands.add_parser("ingest", parents=[parent], help="chunk, embed and store files")
    ingest.add_argument("files", nargs="+", metavar="FILE")
    add_collection(ingest)
    common.add_chunk_options(ingest)
    add_embedder(ingest, prompts=True)
    ingest.add_argument("--password", help="password for encrypted PDFs")
    ingest.add_argument("--language", choices=LANGUAGE_CHOICES, default=None,
                        help="keyword (BM25) stemming and stop words of a new collection: auto (detected per "
                        "document, the default), de, en or none")
    ingest.add_argument("--chunk-headers", choices=CHUNK_HEADER_CHOICES, default=None,
                        help="embed and keyword-index each chunk of a new collection with its title and heading path "
                        f"before the text (default {'on' if DEFAULT_CHUNK_HEADERS else 'off'}); text kept")
    common.add_child_size(ingest)
    ingest.add_argument("--keep-versions", action="store_true",
                        help="keep a document whose file name is already in the collection (default: replace it)")
    ingest.add_argument("--no-index", dest="index", action="store_false",
                        help="do not build the HNSW index now even if the collection has grown large enough for one "
                        "(RAG_INDEX_MIN_POINTS; `rag index` builds it later)")
    ingest.add_argument("--json", action="store_true", help="print the per-file results as JSON")
    ingest.set_defaults(run=run_ingest, parser=ingest)

    search = commands.add_parser("search", parents=[parent], help="similarity search in a collection")
    add_query_options(search, "print {\"hits\": [...]}")
    search.add_argument("--document", action="append", metavar="ID", help="only this document id (repeatable)")
    search.add_argument("--explain", metavar="CHUNK_ID", type=given("the chunk id"),
                        help="why (not) this chunk: its rank and score in the dense, keyword, fused and reranked "
                        "rankings, in the context of the top-k or not, and whether the model read it whole")
    search.set_defaults(run=run_search)

    context = commands.add_parser("context", parents=[parent], help="the context an LLM would receive")
    add_query_options(context, "print text, token_count, sources, included, dropped, truncated")
    add_context_options(context)
    context.set_defaults(run=run_context)

    collections = commands.add_parser("collections", parents=[parent], help="list collections")
    collections.add_argument("--json", action="store_true")
    collections.set_defaults(run=run_collections)

    documents = commands.add_parser("documents", parents=[parent], help="list the documents of a collection")
    add_collection(documents)
    documents.add_argument("--json", action="store_true")
    documents.set_defaults(run=run_documents)

    delete = commands.add_parser("delete", parents=[parent], help="delete a document (a collection: delete-collection)")
    add_collection(delete, required=True)
    target = delete.add_mutually_exclusive_group()
    target.add_argument("--document", metavar="ID", type=given("the document id"),
                        help="the document id (or a unique prefix) to delete")
    target.add_argument("--all", action="store_true",
                        help="delete the whole collection with every document (the same as delete-collection)")
    delete.add_argument("--interrupted", action="store_true",
                        help="with --document: delete only what an interrupted ingest left, keep the complete version")
    delete.set_defaults(run=run_delete, parser=delete)

    whole = commands.add_parser("delete-collection", parents=[parent], help="delete a whole collection")
    whole.add_argument("collection", metavar="COLLECTION", type=given("the collection name"))
    whole.set_defaults(run=run_delete_collection)
