"""Stage 4, the store: Qdrant (embedded folder by default, or a server/cluster by URL).

open       open_store: one cached Store per folder or URL     client     Store: collections, layout, upsert
documents  list, plan and write documents                   versions   crash-safe generations; deleting documents
keywords   Qdrant's BM25 vectors (stemmed, per language)      legacy_keywords  the analyzer of old collections
children   child points beside their parents, the fanout      indexing   the vector index of a collection
archive    documents as read, kept by id                      rebuild    a stored document rebuilt from its chunks
reads      the folder's reads served to the CLI

children, keywords and legacy_keywords are public namespaces too (the benchmarks measure their parts).

Searching is the retrieval stage's (rag.retrieval): Store mixes in its SearchMixin (Store.search, search_batch,
search_many) and hands out its records (Hit, CollectionInfo, DocumentInfo), re-exported here.

Why Store is one class of mixins (documents, versions, search, indexing, children: one module each) and not
composed of parts: every method needs the same client, lock, folder guard (`_guard`) and layout cache, so each
part would hold a back reference to the Store and add a hop without separating any state. The mixins split the
code by responsibility for the reader, while that state and its rules stay in one place, client.py.
"""

from __future__ import annotations

from rag.retrieval import (
           CANDIDATES,
           DEFAULT_FUSION,
           FUSIONS,
           MODES,
           CollectionInfo,
           DocumentInfo,
           Fusion,
           Hit,
           candidate_limit,
           parse_fusion,
)
from rag.settings import DEFAULT_COLLECTION
from rag.store import children, keywords, legacy_keywords
from rag.store.archive import DocumentArchive, default_archive_dir, delete_collection, delete_document
from rag.store.client import SYSTEM_COLLECTION, Store
from rag.store.edge import EdgeClient
from rag.store.edge.index import MIN_RECALL, IndexState
from rag.store.edge.ties import TOLERANCE
from rag.store.indexing import IndexCancelledError
from rag.store.keywords import LANGUAGE_CHOICES, Analyzer
from rag.store.open import close_stores, migrate_folder, open_store, reading_note, size_note
from rag.store.reads import serve_reads
from rag.store.rebuild import ChunkLike, document_from_chunks, walk_sections

__all__ = ["Analyzer", "CANDIDATES", "ChunkLike", "CollectionInfo", "DEFAULT_COLLECTION", "DEFAULT_FUSION",
           "DocumentArchive", "DocumentInfo", "EdgeClient", "FUSIONS", "Fusion", "Hit", "IndexCancelledError",
           "IndexState", "LANGUAGE_CHOICES", "MIN_RECALL", "MODES", "SYSTEM_COLLECTION", "Store", "TOLERANCE",
           "candidate_limit", "children", "close_stores", "default_archive_dir", "delete_collection",
           "delete_document", "document_from_chunks", "keywords", "legacy_keywords", "migrate_folder", "open_store",
           "parse_fusion", "reading_note", "serve_reads", "size_note", "walk_sections"]
