"""Crash-safe writes: every ingest of a document is a new *generation*, searchable only once it is complete.

Qdrant has no transactions, and a process can die (kill -9, power loss) between any two writes. So a
collection made here keeps one *registry* point (a fixed id, no vectors, never a search result) whose
payload says which generations are not (or no longer) to be seen:

    {"rag_lab_registry": 1, "g<hex>": {"state": "writing" | "retired" | "live", "document_id", "title", ...}}

Writing a document (Store.upsert_document):
  1. registry: g<new> = writing                        (one point update: atomic in both engines)
  2. the chunk points, with payload "generation": <new> (many writes; a crash leaves them hidden)
  3. registry: g<new> = live, g<old...> = retired      (one update: the commit)
  4. delete the points of the retired generations, then their registry entries and g<new>
Searches leave out generations that are "writing" or "retired", so a reader sees the old version until
the commit and the new one after it, never a part of either. A read is several engine calls (the registry, the
query, the payloads) and writes of another thread or process may fall between them: every registry update
writes a new STAMP_KEY, and a search or listing runs again when the stamp changed while it ran (stable_read).
A document whose generation is still "writing" after a crash is listed as incomplete (DocumentInfo.complete
False); the next ingest of that file retires it. Points written before generations existed carry none and are
always visible.

Deleting a document (Store.delete_document) is the same commit without a new version:
  1. points without a generation (written before generations existed) get a fresh one, still visible
  2. registry: every generation of the document = retired   (one update: it is gone from listings and searches)
  3. delete the points of the retired generations, then their registry entries
A crash after step 2 leaves only hidden points; the next ingest, delete or listing of the collection deletes
them (collect), and an ingest of the same file writes it anew, never finding it "unchanged".
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from qdrant_client import models

from rag.errors import DocumentNotFoundError, StoreError

WRITING, LIVE, RETIRED = "writing", "live", "retired"
HIDDEN = (WRITING, RETIRED)
REGISTRY_ID = str(uuid.uuid5(uuid.UUID("6f1d9c2e-6a0b-5c1e-9d4f-2b7a8e3c5d10"), "rag-lab:registry"))
REGISTRY_FLAG = "rag_lab_registry"
LANGUAGES_KEY = "languages"  # the keyword languages documents were analysed in (a collection set to "auto")
SETTINGS_KEY = "settings"  # settings saved with a collection, e.g. {"fusion": "convex:w=0.6"}
NOT_REGISTRY = models.HasIdCondition(has_id=[REGISTRY_ID])  # for must_not: every listing leaves it out
STAMP_KEY = "stamp"  # a new random value with every registry update: a reader compares it before and after
STABLE_ATTEMPTS = 50  # reads of a collection that changed while they ran, before stable_read gives up
T = TypeVar("T")


def new_generation() -> str:
    return uuid.uuid4().hex


def registry_key(generation: str) -> str:
    return f"g{generation}"


class VersionsMixin:
    """The registry half of Store, and deleting documents through it (it needs Store's _guard, _layout, _scroll,
    _document_filter, _delete_ids and client)."""

    def _registry_payload(self, collection: str) -> dict[str, Any]:
        with self._guard(f"reading the registry of '{collection}'"):
            found = self.client.retrieve(collection, [REGISTRY_ID], with_payload=True, with_vectors=False)
        return (found[0].payload or {}) if found else {}

    def registry(self, collection: str) -> dict[str, dict[str, Any]]:
        """Return generation -> its registry entry (state, document_id, title, ...); {} when there are none."""
        payload = self._registry_payload(collection)
        return {key[1:]: value for key, value in payload.items() if key.startswith("g") and isinstance(value, dict)}

    def document_languages(self, collection: str) -> list[str]:
        """Return the keyword languages of the collection's documents (rag.store.keywords), as recorded at ingest."""
        languages = self._registry_payload(collection).get(LANGUAGES_KEY)
        return [str(x) for x in languages] if isinstance(languages, list) else []

    def collection_setting(self, collection: str, key: str) -> Any:
        """Return a setting saved with the collection (e.g. "fusion", a tuned fusion spec), or None."""
        return self._registry_payload(collection).get(SETTINGS_KEY, {}).get(key)

    def save_collection_setting(self, collection: str, key: str, value: Any) -> None:
        """Save a setting with the collection (one point update; the collection must exist)."""
        settings = dict(self._registry_payload(collection).get(SETTINGS_KEY) or {}) | {key: value}
        self._mark(collection, {})  # creates the registry point of an older collection
        with self._guard(f"updating the registry of '{collection}'"):
            self.client.set_payload(collection, {SETTINGS_KEY: settings}, points=[REGISTRY_ID], wait=True)

    def _add_language(self, collection: str, language: str) -> None:
        known = self.document_languages(collection)
        if language not in known:
            with self._guard(f"updating the registry of '{collection}'"):
                self.client.set_payload(collection, {LANGUAGES_KEY: sorted({*known, language})}, points=[REGISTRY_ID],
                                        wait=True)

    def stable_read(self, collection: str, read: Callable[[], T]) -> T:
        """Return read() from a run during which the registry did not change (no write was committed, begun or
        cleaned up between its engine calls): run again when it did (see module); StoreError after STABLE_ATTEMPTS."""
        for _ in range(STABLE_ATTEMPTS):
            before = self._registry_payload(collection).get(STAMP_KEY)
            result = read()
            if self._registry_payload(collection).get(STAMP_KEY) == before:
                return result
        raise StoreError(f"'{collection}' changed during each of {STABLE_ATTEMPTS} reads (documents are being "
                         "written); try again when the ingest is done.")

    def hidden_generations(self, collection: str) -> list[str]:
        """Return the generations searches must leave out: being written (or interrupted), or replaced."""
        return sorted(g for g, entry in self.registry(collection).items() if entry.get("state") in HIDDEN)

    def _mark(self, collection: str, entries: dict[str, dict[str, Any]]) -> None:
        """Set registry entries (generation -> entry) in one point update, creating the registry if needed."""
        payload = {registry_key(g): entry for g, entry in entries.items()} | {STAMP_KEY: new_generation()}
        with self._guard(f"updating the registry of '{collection}'"):
            if self.client.retrieve(collection, [REGISTRY_ID], with_payload=False, with_vectors=False):
                self.client.set_payload(collection, payload, points=[REGISTRY_ID], wait=True)
            else:
                point = models.PointStruct(id=REGISTRY_ID, vector={}, payload={REGISTRY_FLAG: 1, **payload})
                self.client.upsert(collection, [point], wait=True)

    def _unmark(self, collection: str, generations: list[str]) -> None:
        if generations:
            with self._guard(f"updating the registry of '{collection}'"):
                self.client.delete_payload(collection, [registry_key(g) for g in generations], points=[REGISTRY_ID],
                                           wait=True)
                self.client.set_payload(collection, {STAMP_KEY: new_generation()}, points=[REGISTRY_ID], wait=True)

    def begin_generation(self, collection: str, document_id: str, title: str, settings: dict[str, Any]) -> str:
        """Return a new generation for a document, registered as being written (step 1)."""
        generation = new_generation()
        started = datetime.now(UTC).isoformat(timespec="seconds")
        entry = {"state": WRITING, "document_id": document_id, "title": title, "started_at": started, **settings}
        self._mark(collection, {generation: entry})
        return generation

    def commit_generation(self, collection: str, generation: str, replaced: list[str], title: str = "") -> None:
        """Make generation visible and retire the replaced ones in one update (step 3), then delete those (step 4).

        StoreError when the generation is no longer being written: deleted meanwhile (by another process).
        """
        if (self.registry(collection).get(generation) or {}).get("state") != WRITING:
            self.collect(collection)
            raise StoreError(f"'{title or generation}' was deleted from '{collection}' while it was being written, "
                             "so it was not stored. Ingest it again to store it.")
        retired = [g for g in replaced if g != generation]
        self._mark(collection, {generation: {"state": LIVE}} | {g: {"state": RETIRED} for g in retired})
        self.collect(collection)

    def retire(self, collection: str, generations: dict[str, str]) -> None:
        """Hide generations (generation -> its document_id) from listings and searches in one registry update
        (the commit of a delete), then delete their points (collect)."""
        if generations:
            self._mark(collection, {g: {"state": RETIRED} | ({"document_id": d} if d else {})
                                    for g, d in generations.items()})
        self.collect(collection)

    def tag_legacy(self, collection: str, ids: list[str]) -> str:
        """Return a new generation given to points written before generations existed (they stay visible: the
        registry does not know it), so that one registry update can retire them."""
        generation = new_generation()
        for i in range(0, len(ids), 256):
            with self._guard(f"updating points of '{collection}'"):
                self.client.set_payload(collection, {"generation": generation}, points=ids[i : i + 256], wait=True)
        return generation

    def collect(self, collection: str, registry: dict[str, dict[str, Any]] | None = None) -> None:
        """Delete the points of retired generations and forget finished entries (cleanup after a commit or crash)."""
        done = []
        for generation, entry in (self.registry(collection) if registry is None else registry).items():
            if entry.get("state") == RETIRED:
                self._delete_generation(collection, generation)
            if entry.get("state") in (RETIRED, LIVE):
                done.append(generation)
        self._unmark(collection, done)

    def _collected_registry(self, collection: str) -> dict[str, dict[str, Any]]:
        """Return the registry after deleting what an interrupted delete or replacement left (best effort: those
        points are hidden anyway, and a listing must work on a full disk)."""
        registry = self.registry(collection)
        if any(entry.get("state") == RETIRED for entry in registry.values()):
            try:
                self.collect(collection, registry)
            except StoreError:
                return registry
            registry = self.registry(collection)
        return registry

    def delete_document(self, collection: str, document_id: str, only_interrupted: bool = False) -> int:
        """Delete a document's chunks (every version, or only its unfinished writes); return how many points.

        All or nothing (rag.store.versions): one registry update takes the document out of listings and
        searches, then its points are deleted; a crash in between leaves only hidden points, deleted by the next
        ingest, delete or listing. A foreign collection has no registry: its points are deleted one batch at a time.
        """
        if not document_id.strip():
            raise DocumentNotFoundError(f"No document id was given to delete from '{collection}'.")
        layout = self._layout(collection)
        if not layout.foreign:
            self.collect(collection)  # finish an earlier interrupted delete first
        points = list(self._scroll(collection, self._document_filter(layout, [document_id]), ["generation"]))
        if layout.foreign:
            self._delete_ids(collection, [str(p.id) for p in points])
            return len(points)
        generations = {g for g, e in self.registry(collection).items()
                       if e.get("document_id") == document_id and e.get("state") == WRITING}
        if only_interrupted:
            points = [p for p in points if (p.payload or {}).get("generation") in generations]
        else:
            generations |= {str(g) for p in points if (g := (p.payload or {}).get("generation"))}
            legacy = [str(p.id) for p in points if not (p.payload or {}).get("generation")]
            if legacy:
                generations.add(self.tag_legacy(collection, legacy))
        self.retire(collection, dict.fromkeys(sorted(generations), document_id))
        return len(points)

    def _delete_generation(self, collection: str, generation: str) -> None:
        condition = models.FieldCondition(key="generation", match=models.MatchValue(value=generation))
        ids = [str(p.id) for p in self._scroll(collection, models.Filter(must=[condition]), False, children=True)]
        self._delete_ids(collection, ids)


def hidden_filter(hidden: list[str], registry: bool = True) -> list[models.Condition]:
    """Return the must_not conditions that keep hidden generations (and the registry) out of a listing.

    A search needs no condition for the registry: it has no vectors, so it is never a result.
    """
    conditions: list[models.Condition] = [NOT_REGISTRY] if registry else []
    if hidden:
        conditions.append(models.FieldCondition(key="generation", match=models.MatchAny(any=hidden)))
    return conditions
