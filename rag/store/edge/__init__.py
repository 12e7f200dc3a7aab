"""The embedded store on Qdrant Edge: EdgeClient (QdrantClient's methods on Edge shards in a folder), the
move of qdrant-client local-mode folders to it (migrate), api, the one module importing qdrant_edge, and
RemoteReads (remote, over wire), the reads of a folder another process holds."""

from rag.store.edge.client import EdgeClient, FolderInUseError

__all__ = ["EdgeClient", "FolderInUseError"]
