"""Stage 4, store and search: Qdrant (embedded folder by default, or a server/cluster by URL).

open       open_store: one cached Store per folder or URL     client     Store: collections, layout, upsert
documents  list, plan and write documents                   versions   crash-safe generations; deleting documents
search     dense, keyword and hybrid search                   fusion     how hybrid fuses the two lists
keywords   Qdrant's BM25 vectors (stemmed, per language)      legacy_keywords  the analyzer of old collections
records    Hit, CollectionInfo, DocumentInfo, point ids       archive    documents as read, kept by id
rebuild    a stored document rebuilt from its chunks           reads      the folder's reads served to the CLI
"""

from rag.settings import DEFAULT_COLLECTION
from rag.store.client import SYSTEM_COLLECTION, Store
from rag.store.open import open_store
from rag.store.records import CollectionInfo, DocumentInfo, Hit

__all__ = ["DEFAULT_COLLECTION", "SYSTEM_COLLECTION", "CollectionInfo", "DocumentInfo", "Hit", "Store", "open_store"]
