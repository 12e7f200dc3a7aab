"""The store's client contract (rag.store.contract): each client Store is given implements the calls Store makes,
Store makes no other, and the read client has exactly the read server's allow-list, so a write cannot run on it."""

from __future__ import annotations

import ast
import inspect
import threading
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from rag.embeddings import get_embedder
from rag.errors import StoreUnavailableError
from rag.store.client import Store
from rag.store.contract import READ_CALLS, WRITE_CALLS, IndexReads, StoreClient, StoreReads, members
from rag.store.edge import EdgeClient
from rag.store.open import open_store
from rag.store.reads import READS, ReadClient, endpoint, serve_reads, stop_serving, writes_elsewhere
from tests.conftest import ROOT

ENDPOINT = {"pid": 1, "port": 9, "token": "t"}


def public_methods(cls: type) -> set[str]:
    return {name for name, value in inspect.getmembers(cls, callable) if not name.startswith("_")}


def test_the_read_client_has_exactly_the_servers_reads_and_no_write() -> None:
    assert public_methods(ReadClient) == {*READS, "close", "get_collections", "get_collection"}
    client = ReadClient("/nowhere", ENDPOINT)
    try:
        for name in sorted(WRITE_CALLS | public_methods(EdgeClient) - public_methods(ReadClient)):
            with pytest.raises(AttributeError):
                getattr(client, name)
        assert {"update_collection", "copy_shard", "replace_shard", "upsert"} <= WRITE_CALLS | public_methods(
            EdgeClient) - public_methods(ReadClient)
    finally:
        client.close()


def accepted(protocol: type, name: str, implementation: type) -> None:
    """Assert implementation's method takes the Protocol's parameters: the positional ones in their places, every
    keyword one by its name (not only through **kwargs)."""
    wanted = inspect.signature(getattr(protocol, name)).parameters
    given = inspect.signature(getattr(implementation, name)).parameters
    named = [p for p in given if given[p].kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]
    positional = [p for p in wanted if wanted[p].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD]
    for place in range(1, len(positional)):  # after self; their names may differ (name / collection_name)
        assert given[named[place]].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD, (implementation, name)
    for parameter in wanted:
        if wanted[parameter].kind == inspect.Parameter.KEYWORD_ONLY:
            assert parameter in named, f"{implementation.__name__}.{name} has no parameter {parameter}"
    assert len(named) >= len(positional), (implementation, name)


@pytest.mark.parametrize(("implementation", "protocols"), [
    (QdrantClient, (StoreClient,)), (EdgeClient, (StoreClient, IndexReads)), (ReadClient, (StoreReads, IndexReads))])
def test_each_client_implements_its_part_of_the_contract(implementation: type, protocols: tuple[type, ...]) -> None:
    for protocol in protocols:
        for name in sorted(members(protocol)):
            assert callable(getattr(implementation, name, None)), f"{implementation.__name__} lacks {name}"
            accepted(protocol, name, implementation)


def test_store_calls_nothing_on_its_client_beyond_the_contract() -> None:
    called = set()
    for path in sorted((ROOT / "rag" / "store").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "client" and isinstance(node.value.value, ast.Name)
                    and node.value.value.id == "self"):
                called.add(node.attr)
    assert called, "no client call found: the scan is broken"
    assert called <= READ_CALLS | WRITE_CALLS, called - (READ_CALLS | WRITE_CALLS)


def test_a_store_on_the_read_client_reads_through_the_holder_and_refuses_writes_in_one_line(tmp_path: Path) -> None:
    folder = str(tmp_path / "qdrant")
    holder = open_store(path=folder)
    reader = None
    try:
        embedder = get_embedder("fake")
        holder._ensure_collection("c", embedder)
        assert serve_reads(holder) is not None
        found = endpoint(folder)
        reader = Store(ReadClient(folder, found), folder, local=True)
        assert reader.collections() == holder.collections()
        assert reader.index_state("c") == holder.index_state("c")
        refusal = writes_elsewhere(folder, found["pid"])
        for write in (lambda: reader.delete_collection("c"), lambda: reader.save_collection_setting("c", "k", 1),
                      lambda: reader.build_index("c")):
            with pytest.raises(StoreUnavailableError) as refused:
                write()
            assert str(refused.value) == refusal
        assert holder.has_collection("c")
    finally:
        if reader is not None:
            reader.close()
        stop_serving(holder)
        holder.close()


def test_reading_holds_the_stores_lock_and_gives_its_client(store: Store) -> None:
    with store.reading() as client:
        assert client is store.client
        taken = []
        other = threading.Thread(target=lambda: taken.append(store._lock.acquire(blocking=False)))
        other.start()
        other.join()
        assert taken == [False]
    assert store._lock.acquire(blocking=False)
    store._lock.release()


def test_store_tells_the_clients_apart_by_the_contract(tmp_path: Path) -> None:
    """Store asks isinstance(client, IndexReads) for the index and writes only through a StoreClient."""
    local, edge = QdrantClient(location=":memory:"), EdgeClient(str(tmp_path / "edge"), temporary=True)
    reader = ReadClient(str(tmp_path / "edge"), ENDPOINT)
    try:
        assert [isinstance(c, StoreClient) for c in (local, edge, reader)] == [True, True, False]
        assert [isinstance(c, IndexReads) for c in (local, edge, reader)] == [False, True, True]
        assert Store(local, "memory", local=True).index_state("c") is None  # its own engine: no index to show
    finally:
        for client in (local, edge, reader):
            client.close()
