"""The store's client contract: exactly the calls rag.store.client.Store makes on the client it is given.

Three clients implement it: qdrant-client's QdrantClient (a server by URL, or its old local mode), EdgeClient (an
embedded Qdrant Edge folder, rag.store.edge) and ReadClient (the reads of a folder another process holds,
rag.store.reads). They share no base class; these Protocols are what they share (qdrant-client's congruence
idea in its light form: tests/store/test_contract.py checks each client against them).

    StoreReads    what every client answers: collections, their configuration, points, counts, searches
    StoreClient   StoreReads and the writes; ReadClient has none of them (an AttributeError by construction,
                  which Store turns into the one line saying where writes go)
    IndexReads    StoreReads and the HNSW index of the embedded engine (EdgeClient and ReadClient only)

Positional parameters are the ones Store passes by position (QdrantClient and EdgeClient put their other
parameters in different orders, e.g. scroll's offset); everything after them is passed by keyword.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class StoreReads(Protocol):
    """The reads Store makes (a read-only client implements these and close)."""

    def close(self) -> None: ...

    def collection_exists(self, collection_name: str) -> bool: ...

    def get_collections(self) -> Any: ...  # .collections: [.name]

    def get_collection(self, collection_name: str) -> Any: ...  # .config: .params.vectors, .sparse_vectors, .metadata

    def retrieve(self, collection_name: str, ids: list[Any], *, with_payload: Any = True,
                 with_vectors: Any = False) -> list[Any]: ...

    def scroll(self, collection_name: str, *, scroll_filter: Any = None, limit: int = 10, offset: Any = None,
               with_payload: Any = True, with_vectors: Any = False) -> tuple[list[Any], Any]: ...

    def count(self, collection_name: str, *, count_filter: Any = None, exact: bool = True) -> Any: ...  # .count

    def query_batch_points(self, collection_name: str, requests: list[Any]) -> list[Any]: ...  # [.points]


@runtime_checkable
class StoreClient(StoreReads, Protocol):
    """The reads and the writes Store makes: what a Store that ingests and deletes is given."""

    def create_collection(self, collection_name: str, *, vectors_config: Any = None,
                          sparse_vectors_config: Any = None, metadata: Any = None) -> bool: ...

    def create_payload_index(self, collection_name: str, field_name: str, field_schema: Any = None) -> Any: ...

    def delete_collection(self, collection_name: str) -> bool: ...

    def upsert(self, collection_name: str, points: list[Any], *, wait: bool = True) -> Any: ...

    def delete(self, collection_name: str, points_selector: Any, *, wait: bool = True) -> Any: ...

    def set_payload(self, collection_name: str, payload: dict, *, points: list[Any], wait: bool = True) -> Any: ...

    def delete_payload(self, collection_name: str, keys: list[str], *, points: list[Any],
                       wait: bool = True) -> Any: ...


@runtime_checkable
class IndexReads(StoreReads, Protocol):
    """The reads of the embedded engine's HNSW index (rag.store.edge.index.state)."""

    def collection_config(self, name: str) -> dict: ...

    def index_state(self, collection_name: str) -> dict[str, Any]: ...


def members(protocol: type) -> frozenset[str]:
    """Return the method names a Protocol declares, its bases' included."""
    return frozenset(name for cls in protocol.__mro__ if cls not in (object, Protocol) and cls.__name__ != "Generic"
                     for name, value in vars(cls).items() if callable(value) and not name.startswith("_"))


READ_CALLS = members(StoreReads)
WRITE_CALLS = members(StoreClient) - READ_CALLS
