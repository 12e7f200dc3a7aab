"""Orchestration only: files -> chunks -> vectors -> Qdrant (ingest, reingest); query -> hits (search) -> context
(retrieve), which rag.searching holds and this module re-exports, so `pipeline` names the whole pipeline."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from rag import chunking
from rag.chunking import ChunkSettings, children, headers
from rag.documents import Document, SourceFile, expected_size, load_document
from rag.embeddings import Embedder, EmbeddingCache, Pace, embed_chunks, store_cache
from rag.errors import (
    DocumentError,
    EncryptedDocumentError,
    IngestCancelled,
    RagError,
)
from rag.ingested import IngestOptions, IngestResult, Progress, Watch
from rag.searching import embedder_for, retrieve, search, search_defaults
from rag.settings import DEFAULT_COLLECTION
from rag.store import DocumentArchive, DocumentInfo, Store, document_from_chunks, open_store
from rag.urls import redact_urls

log = logging.getLogger(__name__)
__all__ = ["IngestOptions", "IngestResult", "Progress", "SourceFile", "Watch", "embedder_for", "ingest",
           "load_document", "reingest", "retrieve", "search", "search_defaults"]


def ingest(
    files: Iterable[SourceFile],
    collection: str = DEFAULT_COLLECTION,
    settings: ChunkSettings = ChunkSettings(),  # noqa: B008 (frozen dataclass)
    embedder: Embedder | None = None,
    *,
    store: Store | None = None,
    options: IngestOptions = IngestOptions(),  # noqa: B008 (frozen dataclass)
    archive: DocumentArchive | None = None,
    watch: Watch = Watch(),  # noqa: B008 (frozen dataclass)
) -> list[IngestResult]:
    """Return one result per file; a bad file is reported and the others go on.

    A file is written only after it was read, chunked and embedded in full, and becomes searchable whole
    or not at all (see Store.upsert_document). A file whose name is already in the collection replaces
    that document unless options.keep_versions; the same content under another name is skipped (never renamed);
    the same file with the same settings is left as it is. The embedder is checked against the collection
    before anything is embedded. archive, when given, keeps each document for re-ingesting later.
    options (IngestOptions): a new collection's keyword analysis (language: "auto", the default, detects it per
    document; "de", "en" or "none", rag.store.keywords), chunk headers (embed and keyword-index the chunks with
    their title and heading path, rag.chunking.headers) and child size (tokens per child, parent–child search,
    rag.chunking.children; 0 = off); an existing collection keeps its own. options.cache: the embedding cache
    (default: the store's, which sweeps and evaluations share), so a chunk text embedded once with this model and
    prompt is never embedded again. store: default open_store() (RAG_QDRANT_PATH / QDRANT_URL, else ./data/qdrant).
    watch.cancel: asked before each file and embedding batch; once it says True, the file at hand and every later
    one end as IngestCancelled, never inside the store stage (a file is stored whole or not at all).
    """
    files = list(files)
    setup = _Setup.of(store, collection, settings, embedder, options, archive)
    # a file's work is planned once it is chunked, every other's by its pages or bytes: the time left covers them all
    sizes = [expected_size(f) for f in files]
    contents: dict[str, bytes] = {}  # the file at hand's bytes, kept (archive) once its document is in the collection

    def load(report: Callable[..., None], file: SourceFile) -> Document:
        contents.clear()  # one file's bytes at a time, also after a file that failed
        contents[file.name] = file.read()
        return load_document(contents[file.name], file.name, password=file.password, boxes=True,
                             pages_read=lambda done, pages: report("extract", done, pages))

    def keep(document: Document, file: SourceFile) -> None:
        archive.keep_original(document, contents.pop(file.name), file.password)

    return setup.run([f.name for f in files], sizes, [partial(load, file=f) for f in files], watch, "",
                     None if archive is None else [partial(keep, file=f) for f in files])


def reingest(
    document_ids: Iterable[str],
    collection: str,
    settings: ChunkSettings,
    embedder: Embedder | None = None,
    *,
    store: Store,
    archive: DocumentArchive,
    source: str | None = None,
    options: IngestOptions = IngestOptions(),  # noqa: B008 (frozen dataclass)
    watch: Watch = Watch(),  # noqa: B008 (frozen dataclass)
) -> list[IngestResult]:
    """Return one result per document: chunked again with settings and written to collection.

    The text comes from the archive; a document ingested before the archive existed is rebuilt from its
    stored chunks in `source` (default: collection), which is exact for the text the chunks cover. options
    (chunk headers, child size, cache) and watch: as for ingest (only chunk texts the cache lacks are embedded).
    """
    ids = list(document_ids)
    source = source or collection
    setup = _Setup.of(store, collection, settings, embedder, replace(options, language=None, keep_versions=False),
                      archive)
    titles = {d.document_id: d for d in store.documents(source)} if store.has_collection(source) else {}
    infos = [titles.get(i) for i in ids]

    def read(report: Callable[..., None], i: str, info: DocumentInfo | None) -> Document:
        saved = archive.load(i)
        if saved is not None:
            return _with_boxes(saved, archive)
        if info is None or not info.complete:
            raise DocumentError(
                f"'{info.title if info else i}' was not kept in the document archive and its stored "
                "chunks are incomplete: upload the file again.")
        return document_from_chunks(i, info.title, store.document_chunks(source, i))

    sizes = [("chunks", float(info.chunks if info else 0)) for info in infos]  # until each is chunked again
    return setup.run([info.title if info else i[:12] for i, info in zip(ids, infos, strict=True)], sizes,
                     [partial(read, i=i, info=info) for i, info in zip(ids, infos, strict=True)], watch,
                     " of this re-ingest")


@dataclass(frozen=True)
class _Setup:
    """What ingest and reingest share: the checked collection, its embedder, chunk headers, child size and cache,
    and the loop that takes each item through a _Job with progress, time left and cancel."""

    collection: str
    settings: ChunkSettings
    embedder: Embedder
    store: Store
    options: IngestOptions
    archive: DocumentArchive | None
    chunk_headers: bool
    child_size: int
    cache: EmbeddingCache

    @classmethod
    def of(cls, store: Store | None, collection: str, settings: ChunkSettings, embedder: Embedder | None,
           options: IngestOptions, archive: DocumentArchive | None) -> _Setup:
        """Return the setup after checking settings, and the embedder against the collection (nothing embedded);
        store None: open_store()."""
        chunking.validate_settings(settings)
        store = store if store is not None else open_store()
        embedder = embedder or embedder_for(store, collection)
        store.check_writable(collection, embedder, options.language, options.chunk_headers, options.child_size)
        return cls(collection, settings, embedder, store, options, archive,
                   store.chunk_headers(collection, options.chunk_headers),
                   store.child_size(collection, options.child_size),
                   options.cache if options.cache is not None else store_cache(store))

    def run(self, names: list[str], sizes: list[tuple[str, float]], reads: list[Callable[..., Document]],
            watch: Watch, cancelled: str, keeps: list[Callable[[Document], None]] | None = None
            ) -> list[IngestResult]:
        """Return one result per item (its name, planned size and reader); cancelled: what a cancel left unwritten
        besides the item (" of this re-ingest"); keeps: per item, what keeps its file once its document is in the
        collection (_Job.run)."""
        pace = Pace([(0, 0)] * len(names), [0] * len(names), [])
        pace.plan_rest(sizes, -1)
        results = []
        for index, (name, read) in enumerate(zip(names, reads, strict=True)):
            def report(stage: str, done: int = 0, total: int = 1, children: int = 0, i=index, n=name) -> None:
                if stage in ("extract", "chunk", "embed") and watch.cancelled:
                    raise IngestCancelled(f"'{n}' was cancelled before it was stored: nothing{cancelled or ' of it'} "
                                          f"{'was written' if cancelled else 'is searchable'}.")
                watch.report(Progress(i, len(names), n, stage, done, total, pace.seconds_left(), children))

            job = _Job(self, report, pace, index, sizes)
            results.append(job.run(name, partial(read, report), keeps[index] if keeps else None))
            results[-1].notes += tuple(self.cache.take_notices())  # a damaged cache file set aside: said with it
            pace.reused(index)  # nothing of it is left to do (also when it failed or was skipped before its plan)
            pace.plan_rest(sizes, index)
        return results


@dataclass
class _Job:
    """One file or saved document through extract, chunk, embed and store, with progress and timings."""

    setup: _Setup  # the collection, settings, embedder, store, options, archive, headers, child size and cache
    report: Callable[..., None]
    pace: Pace  # the ingest's: each file's work, rates
    index: int = 0  # this file's place in the ingest (its configuration in pace)
    sizes: Sequence[tuple[str, float]] = ()  # every file's (unit, amount) in pace: the later ones are planned again

    def run(self, name: str, read: Callable[[], Document], keep: Callable[[Document], None] | None = None
            ) -> IngestResult:
        """Return the result of reading, chunking, embedding and storing one document; keep(document), when given,
        runs once the document is in the collection (stored, or found unchanged): its file is kept for its pages."""
        result = IngestResult(name)
        started = time.perf_counter()
        stage = "extract"
        try:
            self.report(stage)
            document = read()
            self._describe(result, document)
            if self.setup.archive is not None:
                self.setup.archive.save(document)
            if self._planned_skip(result, document):
                _keep(keep, document, result)
                self.report("done", result.chunks, result.chunks)
                result.seconds = time.perf_counter() - started
                return result
            stage = _lap(result, stage, "chunk", started)
            self.report(stage)
            settings = self.setup.settings
            chunks = chunking.chunk_document(document, settings.chunk_size, settings.overlap, settings.strategy)
            stage = _lap(result, stage, "embed", started)
            texts = [headers.indexed_text(c.model_text, document.title, c.heading_path, self.setup.chunk_headers)
                     for c in chunks]
            kids = children.children_of(chunks, self.setup.child_size)
            texts += children.indexed_texts(document, chunks, kids, self.setup.chunk_headers)
            born = len(texts) - len(chunks)  # the children among the texts: progress names them apart
            self.pace.plan(self.index, len(texts), sum(map(len, texts)), sum(map(len, texts)))
            if self.sizes:  # the characters per page or byte of this file: the files after it are planned by it
                self.pace.plan_rest(self.sizes, self.index)
            self.report(stage, 0, len(texts), born)  # said before the first batch: it may wait for the model to load
            setup = self.setup
            vectors = embed_chunks(texts, setup.embedder, lambda done: self.report("embed", done, len(texts), born),
                                   pace=self.pace, index=self.index, cache=setup.cache)
            stage = _lap(result, stage, "store", started)
            self.report(stage, 0, len(texts), born)
            result.chunks = setup.store.upsert_document(
                setup.collection, document, chunks, vectors[: len(chunks)], settings, setup.embedder,
                keep_versions=setup.options.keep_versions,
                progress=lambda done, total: self.report("store", done, total, born),
                language=setup.options.language, chunk_headers=setup.chunk_headers, child_size=setup.child_size,
                kids=kids if setup.child_size else None, kid_vectors=vectors[len(chunks):],
            )
            _lap(result, stage, "done", started)
            self.pace.indexed(self.index, result.stage_seconds["store"])
            result.ok = True
            _keep(keep, document, result)
            self.report("done", len(chunks), len(chunks))
        except RagError as error:
            result.error, result.error_type = redact_urls(str(error)), type(error).__name__
            result.needs_password = isinstance(error, EncryptedDocumentError)
            result.wrong_password = result.needs_password and error.wrong_password
            self.report("cancelled" if isinstance(error, IngestCancelled) else "error")
        except Exception as error:  # a bug must not cost the user the other files; it is logged in full
            log.exception("ingesting %s failed at %s", name, stage)
            result.error = f"{name}: unexpected error while {stage} ({type(error).__name__}: {error}). " \
                           "This is a bug in RAG Lab; the other files were not affected."
            result.error_type = type(error).__name__
            self.report("error")
        result.seconds = time.perf_counter() - started
        return result

    @staticmethod
    def _describe(result: IngestResult, document: Document) -> None:
        result.document_id, result.kind, result.pages = document.id, document.kind, len(document.pages)
        result.characters, result.empty_pages, result.notes = len(document.text), document.empty_pages, document.notes

    def _planned_skip(self, result: IngestResult, document: Document) -> bool:
        """Return True (result filled in) when the document is not to be written; note what it replaces."""
        store, collection = self.setup.store, self.setup.collection
        plan = store.plan_ingest(collection, document, self.setup.settings, self.setup.options.keep_versions)
        if plan.duplicate_of is not None:
            result.skipped = True
            result.error = (f"'{document.title}' has the same content as '{plan.duplicate_of}', which is already in "
                            f"'{collection}'; nothing was stored. Delete '{plan.duplicate_of}' first to keep it "
                            "under the new name.")
            return True
        if plan.unchanged:
            existing = next(d for d in store.documents(collection) if d.document_id == document.id)
            result.ok, result.unchanged, result.chunks = True, True, existing.chunks
            result.notes += (f"Already in '{collection}' with these settings: nothing was embedded again.",)
            return True
        others = [d.title for d in plan.replaces if d.document_id != document.id]
        if others:
            result.replaced = tuple(others)
            result.notes += (f"Replaces the earlier version of '{document.title}' in '{self.setup.collection}' "
                             f"({sum(d.chunks for d in plan.replaces if d.document_id != document.id)} chunks).",)
        return False


def _with_boxes(saved: Document, archive: DocumentArchive) -> Document:
    """Return a saved PDF with its words' rectangles read from its kept file (so its chunks carry boxes again), when
    the file gives the same text; else the saved document as it is (its chunks then carry no boxes)."""
    path = archive.original_path(saved.id) if saved.kind == "pdf" else None
    if path is None or not path.exists():
        return saved
    try:
        read = load_document(archive.original(saved.id, saved.title), saved.title, boxes=True)
    except RagError:
        return saved
    return replace(saved, pages=read.pages) if read.text == saved.text else saved


def _keep(keep: Callable[[Document], None] | None, document: Document, result: IngestResult) -> None:
    """Keep the document's file when it is in the collection; a file that cannot be kept is a note, not a failure."""
    if keep is None or not result.ok:
        return
    try:
        keep(document)
    except RagError as error:
        result.notes += (f"{error} Its pages cannot be drawn until then.",)


def _lap(result: IngestResult, stage: str, next_stage: str, started: float) -> str:
    """Record the seconds of stage (since the last lap) and return next_stage."""
    elapsed = time.perf_counter() - started
    result.stage_seconds[stage] = elapsed - sum(result.stage_seconds.values())
    return next_stage
