"""The documents of a collection: list them, read their chunks, plan and write an ingest (deleting: versions).

A document is identified by the sha256 of its file (document_id) and shown by its title (the file name).
Writing goes through generations (rag.store.versions), so a crash never leaves a half-written document
searchable. Writing a file whose name is already in the collection replaces that document, unless the
caller keeps versions; the same content under a new name is not written at all (IngestPlan.duplicate_of),
so an old document is never silently renamed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from qdrant_client import models

import rag.store.children as family
import rag.store.keywords as keywords
from rag.chunking import TOC, Child, Chunk, ChunkSettings, headers
from rag.documents import Document
from rag.embeddings import Embedder
from rag.errors import ChunkNotFoundError, EmbedderMismatchError, StoreError
from rag.retrieval import DocumentInfo, Hit, Layout, hit_from_point, payload_int, point_id
from rag.store.children import IS_CHILD
from rag.store.keywords import Analyzer
from rag.store.versions import HIDDEN, NOT_REGISTRY, RETIRED, WRITING, hidden_filter

UPSERT_BATCH = 256
_WITHOUT_TEXT = models.PayloadSelectorExclude(exclude=["content", "heading_path"])


@dataclass(frozen=True)
class IngestPlan:
    """What writing a document into a collection will do, known before anything is embedded."""

    replaces: tuple[DocumentInfo, ...] = ()  # documents (versions) the new one replaces
    duplicate_of: str | None = None  # title of a document with the same content under another name
    unchanged: bool = False  # the same file with the same settings is already there, complete


def _by_id(document_id: str) -> models.FieldCondition:
    return models.FieldCondition(key="document_id", match=models.MatchValue(value=document_id))


def _like_filter(document: Document | None) -> models.Filter | None:
    """Return the points of document's id or title (both fields carry a payload index), or None: every point."""
    if document is None:
        return None
    return models.Filter(should=[_by_id(document.id), models.FieldCondition(
        key="document_title", match=models.MatchValue(value=document.title))])


class DocumentsMixin:
    """The documents half of Store (it needs Store's _layout, _guard, _ensure_collection, registry and client)."""

    def _scroll(self, collection: str, flt: models.Filter | None, payload: Any, children: bool = False
                ) -> Iterator[Any]:
        """Yield every point matching flt (payload as selected, never vectors, never the registry), page by page;
        the chunks only, unless children (rag.store.children: deletes take those with their parents)."""
        flt = flt or models.Filter()
        excluded = [NOT_REGISTRY, *([] if children else [IS_CHILD])]
        flt = flt.model_copy(update={"must_not": [*(flt.must_not or []), *excluded]})
        offset = None
        while True:
            with self._guard(f"reading points of '{collection}'"):
                points, offset = self.client.scroll(
                    collection, scroll_filter=flt, limit=1024, offset=offset, with_payload=payload, with_vectors=False
                )
            yield from points
            if offset is None:
                return

    def point_ids(self, collection: str) -> list[Any]:
        """Return the id of every searchable point in collection (unfinished and replaced writes left out)."""
        flt = models.Filter(must_not=hidden_filter(self.hidden_generations(collection)))
        return [point.id for point in self._scroll(collection, flt, False)]

    def _document_filter(self, layout: Layout, document_ids: list[str]) -> models.Filter:
        match = models.MatchAny(any=list(document_ids))
        by_id = models.FieldCondition(key="document_id", match=match)
        if not layout.foreign:
            return models.Filter(must=[by_id])
        # foreign payloads may lack document_id; Hit.document_id falls back to the title
        return models.Filter(should=[by_id, models.FieldCondition(key="document_title", match=match)])

    def search_filter(self, layout: Layout, document_ids: list[str] | None, include_toc: bool = False
                      ) -> models.Filter | None:
        """Return the filter of a search: the chosen documents, without unfinished or replaced writes, and
        without tables of contents unless include_toc."""
        flt = self._document_filter(layout, document_ids) if document_ids else None
        if layout.child_size and not family.WITH_PARENTS:  # children only (rag.store.children)
            flt = (flt or models.Filter()).model_copy(update={"must": [*((flt.must or []) if flt else []), IS_CHILD]})
        hidden = [] if layout.foreign else self.hidden_generations(layout.name)
        excluded = hidden_filter(hidden, registry=False)
        toc = models.FieldCondition(key="flags", match=models.MatchAny(any=[TOC]))
        if not include_toc and not layout.foreign and self._any(layout.name, toc):
            excluded.append(toc)  # a condition checked on every point a search compares: only where one matches
        if not excluded:
            return flt
        flt = flt or models.Filter()
        return flt.model_copy(update={"must_not": excluded})

    def _any(self, collection: str, condition: models.FieldCondition) -> bool:
        """Return whether a point of collection meets condition (a payload index answers: microseconds)."""
        with self._guard(f"counting in '{collection}'"):
            return self.client.count(collection, count_filter=models.Filter(must=[condition]), exact=True).count > 0

    def holds_document(self, document_id: str) -> bool:
        """Return whether any collection of the store has a point of document_id (its kept file is still needed)."""
        return any(self._any(name, _by_id(document_id)) for name in self._names())

    def documents(self, collection: str, *, like: Document | None = None) -> list[DocumentInfo]:
        """Return one entry per document (foreign collection: per document_title), sorted by title.

        An entry describes the document's searchable version; `complete` is False when a write of it did not
        finish (it may still be running in another process, or it was interrupted) and `interrupted` counts
        the chunks that write left. A document with only an unfinished write is listed with those chunks.
        like: only the documents with like's id or title (what an ingest of like replaces), read through the
        payload index instead of every point: an ingest into a collection of 100,000 chunks read them all.
        """
        self._layout(collection)
        return self.stable_read(collection, lambda: self._documents(collection, like))

    def _documents(self, collection: str, like: Document | None) -> list[DocumentInfo]:
        registry = self._collected_registry(collection)
        groups: dict[str, dict[str | None, list[dict]]] = {}
        for point in self._scroll(collection, _like_filter(like), _WITHOUT_TEXT):
            p = point.payload or {}
            key = str(p.get("document_id") or p.get("document_title") or "")
            groups.setdefault(key, {}).setdefault(p.get("generation"), []).append(p)
        for generation, entry in registry.items():  # a write interrupted before its first chunk
            if like is not None and like.id != entry.get("document_id") and like.title != entry.get("title"):
                continue
            if entry.get("state") == WRITING and entry.get("document_id"):
                versions = groups.setdefault(str(entry["document_id"]), {})
                versions.setdefault(generation, [])
        infos = [self._document_info(key, versions, registry) for key, versions in groups.items()]
        return sorted((i for i in infos if i is not None), key=lambda d: (d.title.lower(), d.document_id))

    @staticmethod
    def _document_info(key: str, versions: dict[str | None, list[dict]], registry: dict) -> DocumentInfo | None:
        state = {g: (registry.get(g) or {}).get("state") for g in versions}
        live = [g for g in versions if state[g] not in HIDDEN]
        unfinished = [g for g in versions if state[g] == WRITING]
        if not live and not unfinished:
            return None  # only replaced versions, about to be deleted
        listed = live[-1] if live else unfinished[-1]
        payloads = versions[listed]
        entry = registry.get(listed) or {}
        first = payloads[0] if payloads else {}
        last_try = (registry.get(unfinished[-1]) or {}) if unfinished else {}
        tried = (last_try.get("chunk_size"), last_try.get("overlap"), last_try.get("strategy"))
        stamps = [str(p["ingested_at"]) for p in payloads if p.get("ingested_at")]
        # a delete cut short before deletes were committed first (older versions of RAG Lab) left gaps
        indexes = {payload_int(p.get("chunk_index")) for p in payloads if p.get("embedder")} - {None} if live else ()
        missing = max(indexes) + 1 - len(indexes) if indexes else 0
        return DocumentInfo(
            document_id=key,
            title=str(first.get("document_title") or entry.get("title") or key),
            chunks=len(payloads),
            pages=payload_int(first.get("document_pages")),
            chunk_size=payload_int(first.get("chunk_size", entry.get("chunk_size"))),
            overlap=payload_int(first.get("overlap", entry.get("overlap"))),
            strategy=first.get("strategy", entry.get("strategy")),
            embedder=first.get("embedder"),
            ingested_at=max(stamps) if stamps else entry.get("started_at"),
            complete=not unfinished and not missing,
            generation=listed,
            interrupted=sum(len(versions[g]) for g in unfinished if g != listed),
            unfinished_settings=tried if None not in tried else None,
            missing=missing,
        )

    def document_chunks(self, collection: str, document_id: str) -> list[Hit]:
        """Return a document's chunks ordered by chunk_index (score None); [] for an unknown id.

        The searchable version's chunks; for a document that only has an unfinished write, that write's (a
        deleted or replaced version's never).
        """
        layout = self._layout(collection)
        registry = {} if layout.foreign else self.registry(collection)
        state = {g: e.get("state") for g, e in registry.items()}
        points = list(self._scroll(collection, self._document_filter(layout, [document_id]), True))
        visible = [p for p in points if state.get((p.payload or {}).get("generation")) not in HIDDEN]
        unfinished = [p for p in points if state.get((p.payload or {}).get("generation")) == WRITING]
        hits = [hit_from_point(p, None) for p in (visible or unfinished)]
        return sorted(hits, key=lambda h: (h.chunk_index is None, h.chunk_index or 0, h.chunk_id))

    def chunk(self, collection: str, chunk_id: str) -> Hit:
        """Return the searchable chunk with this id (as search returns it, score None); ChunkNotFoundError if none."""
        layout = self._layout(collection)
        text = str(chunk_id).strip()
        # a point id is a UUID or a whole number below 2**64; anything else is a string the engine refuses below
        whole = text.isascii() and text.isdigit() and len(text) <= 20 and int(text) < 2**64
        key: Any = int(text) if whole else text
        try:
            flt = models.Filter(must=[models.HasIdCondition(has_id=[key])])
            flt.must_not = (self.search_filter(layout, None, include_toc=True) or models.Filter()).must_not
            found = next(iter(self._scroll(collection, flt, True)), None)
        except (StoreError, ValueError):  # not an id Qdrant takes (a UUID or a whole number)
            found = None
        if found is None:
            shown = text if len(text) <= 60 else text[:59] + "…"
            raise ChunkNotFoundError(f"Collection '{collection}' has no chunk '{shown}'. Take a chunk_id from "
                                     "`rag search ... --json` (or the Search page).")
        return hit_from_point(found, None)

    def _delete_ids(self, collection: str, ids: list[str]) -> None:
        for i in range(0, len(ids), UPSERT_BATCH):
            with self._guard(f"deleting points from '{collection}'"):
                self.client.delete(collection, models.PointIdsList(points=ids[i : i + UPSERT_BATCH]), wait=True)

    def plan_ingest(self, collection: str, document: Document, settings: ChunkSettings, keep_versions: bool = False
                    ) -> IngestPlan:
        """Return what writing document would do: which documents it replaces, or why it is not written."""
        if not self.has_collection(collection):
            return IngestPlan()
        same = [d for d in self.documents(collection, like=document)
                if d.document_id == document.id or d.title == document.title]
        renamed = next((d for d in same if d.document_id == document.id and d.title != document.title and d.complete),
                       None)
        if renamed is not None:
            return IngestPlan(duplicate_of=renamed.title)
        mine = [d for d in same if d.document_id == document.id]
        if any(d.complete and (d.chunk_size, d.overlap, d.strategy) == (settings.chunk_size, settings.overlap,
                                                                        settings.strategy) for d in mine):
            return IngestPlan(unchanged=True)
        replaced = mine + ([] if keep_versions else [d for d in same if d.document_id != document.id])
        return IngestPlan(replaces=tuple(replaced))

    def upsert_document(
        self,
        collection: str,
        document: Document,
        chunks: list[Chunk],
        vectors: np.ndarray,
        settings: ChunkSettings,
        embedder: Embedder,
        *,
        keep_versions: bool = False,
        progress: Callable[[int, int], None] | None = None,
        language: str | None = None,
        chunk_headers: bool | None = None,
        child_size: int | None = None,
        kids: list[list[Child]] | None = None,
        kid_vectors: np.ndarray | None = None,
    ) -> int:
        """Write a document's chunks as a new generation; return the point count (see rag.store.versions).

        The new version becomes searchable at once, with every chunk, when all are written; until then
        searches see the document's previous version (other chunk settings, or the file before an edit,
        matched by title unless keep_versions). A failed write removes what it wrote and raises StoreError;
        a crash leaves it hidden and listed as incomplete. progress(done, total) after each batch.
        language: the keyword language of a new collection (rag.store.keywords; default "auto"). chunk_headers:
        whether a new collection indexes chunks with their title and heading path (rag.chunking.headers; an
        existing one keeps its own): the vectors must have been embedded from those texts. child_size: tokens per
        child of a new collection (rag.chunking.children; None: the default, or 0 when no kids are given; an
        existing one keeps its own); kids: each chunk's children
        and kid_vectors their vectors in that order (rag.store.children), required when the collection has children.
        """
        vectors = np.asarray(vectors, dtype=np.float32)
        if chunks and (vectors.ndim != 2 or len(vectors) != len(chunks) or vectors.shape[1] != embedder.dimension):
            raise EmbedderMismatchError(
                f"{len(chunks)} chunks of '{document.title}' came with vectors of shape {vectors.shape}, "
                f"but {embedder.model_id} should give {embedder.dimension} dimensions per chunk."
            )
        if child_size is None and kids is None and not self.has_collection(collection):
            child_size = 0  # no children given: a new collection without them (an ingest passes its size)
        layout = self._ensure_collection(collection, embedder, language, chunk_headers, child_size)
        kids = family.check_kids(layout, document, chunks, kids, kid_vectors, embedder)
        self.collect(collection)  # what an interrupted delete or replacement left
        analyzer = self._analyzer(layout)
        setting = layout.meta.get("language", keywords.DEFAULT_LANGUAGE)
        doc_language = keywords.document_language(setting, document.text) if not analyzer.legacy else None
        replaced = {document.id}
        if not keep_versions:
            replaced |= {d.document_id for d in self.documents(collection, like=document) if d.title == document.title}
        shape = {"chunk_size": settings.chunk_size, "overlap": settings.overlap, "strategy": settings.strategy}
        generation = self.begin_generation(collection, document.id, document.title, shape)
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        points = [self._point(document, c, v, settings, embedder, layout, generation, stamp, analyzer, doc_language)
                  for c, v in zip(chunks, vectors, strict=True)]
        parents = len(points)
        if kids:
            per_parent = self._kid_points(points, kids, kid_vectors, document, layout, analyzer, doc_language)
            family.add_child_boxes(points, chunks, kids, document)
            points = [p for parent, group in zip(points, per_parent, strict=True) for p in (parent, *group)]
            self._raise_fanout(collection, max(map(len, kids)))  # before the commit: searches must fetch enough
        self._write_points(collection, points, generation, document.title, progress)
        if doc_language is not None and setting == "auto":
            self._add_language(collection, doc_language)  # before the commit: queries must know it first
        old = self._generations(collection, sorted(replaced))
        if None in old:  # points from before generations existed get one, so that the commit retires them too
            old = (old - {None}) | {self.tag_legacy(collection, self._legacy_ids(collection, sorted(replaced)))}
        self.commit_generation(collection, generation, sorted(g for g in old if g), document.title)
        return parents

    def _generations(self, collection: str, document_ids: list[str]) -> set[str | None]:
        """Return every generation holding chunks of these documents (None: points without one)."""
        if not document_ids:
            return set()
        flt = models.Filter(must=[models.FieldCondition(key="document_id", match=models.MatchAny(any=document_ids))])
        found = {(p.payload or {}).get("generation") for p in self._scroll(collection, flt, ["generation"])}
        unfinished = {g for g, e in self.registry(collection).items() if e.get("document_id") in document_ids}
        return found | unfinished

    def _legacy_ids(self, collection: str, document_ids: list[str]) -> list[str]:
        legacy = models.IsEmptyCondition(is_empty=models.PayloadField(key="generation"))
        by_id = models.FieldCondition(key="document_id", match=models.MatchAny(any=document_ids))
        return [str(p.id) for p in self._scroll(collection, models.Filter(must=[by_id, legacy]), False)]

    def _write_points(self, collection: str, points: list[models.PointStruct], generation: str, title: str,
                      progress: Callable[[int, int], None] | None) -> None:
        """Upsert points in batches; on failure hide and delete what was written, then raise."""
        try:
            for i in range(0, len(points), UPSERT_BATCH):
                with self._guard(f"writing chunks of '{title}' to '{collection}'"):
                    self.client.upsert(collection, points[i : i + UPSERT_BATCH], wait=True)
                if progress:
                    progress(min(i + UPSERT_BATCH, len(points)), len(points))
        except StoreError as e:
            raise type(e)(f"{e} {self._abandon(collection, generation, title)}") from e

    def _abandon(self, collection: str, generation: str, title: str) -> str:
        """Hide, then delete what a failed write wrote (as far as Qdrant lets it); return what the user should know."""
        try:
            self.retire(collection, {generation: ""})
            return f"Nothing of '{title}' was changed; try again."
        except StoreError:  # the original failure is the one to report
            pass
        try:
            hidden = (self.registry(collection).get(generation) or {}).get("state") == RETIRED
        except StoreError:
            hidden = False
        if hidden:
            return (f"Nothing of '{title}' was changed; the chunks written so far are hidden, and the next ingest or "
                    "listing of the collection deletes them.")
        return (f"The chunks written so far stay hidden from searches; ingest '{title}' again once Qdrant works, "
                "or delete what the interrupted ingest left in the Library.")

    @staticmethod
    def _point(document: Document, chunk: Chunk, vector: np.ndarray, settings: ChunkSettings, embedder: Embedder,
               layout: Layout, generation: str, stamp: str, analyzer: Analyzer, language: str | None
               ) -> models.PointStruct:
        pid = point_id(document.id, settings, chunk.chunk_index, generation)
        payload = {"content": chunk.content, "document_id": document.id, "document_title": document.title}
        payload |= {"chunk_id": pid, "chunk_index": chunk.chunk_index, "heading_path": list(chunk.heading_path)}
        payload |= {"token_count": chunk.token_count, "page_start": chunk.page_start, "page_end": chunk.page_end}
        payload |= {"start": chunk.start, "end": chunk.end, "chunk_size": settings.chunk_size}
        payload |= {"overlap": settings.overlap, "strategy": settings.strategy, "embedder": embedder.model_id}
        payload |= {"document_kind": document.kind, "document_pages": len(document.pages)}
        payload |= {"generation": generation, "ingested_at": stamp, "flags": list(chunk.flags)}
        payload["boxes"] = [box.as_dict() for box in chunk.boxes]  # a PDF's: where the text is on its pages
        if chunk.table_header:  # the LLM context repeats it before the chunk (rag.retrieval.context)
            payload["table_header"] = chunk.table_header
        if language is not None:
            payload["language"] = language
        vectors: dict[str, Any] = {layout.vector: vector.tolist()}
        if layout.sparse:  # older collections have no keyword vector to fill
            text = headers.indexed_text(chunk.model_text, document.title, chunk.heading_path, layout.chunk_headers)
            indices, values = analyzer.document_vector(text, language or "none")
            vectors[layout.sparse] = models.SparseVector(indices=indices, values=values)
        return models.PointStruct(id=pid, vector=vectors, payload=payload)

