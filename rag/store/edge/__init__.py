"""The embedded store on Qdrant Edge: EdgeClient (QdrantClient's methods on Edge shards in a folder), the
move of qdrant-client local-mode folders to it (migrate), api, the one module importing qdrant_edge, and wire,
the JSON in which another process reads a folder this one holds (rag.store.reads)."""

from rag.store.edge.client import EdgeClient, FolderInUseError

__all__ = ["EdgeClient", "FolderInUseError"]
