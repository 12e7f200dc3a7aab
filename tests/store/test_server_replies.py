"""A server that is not quite Qdrant: its reply of the wrong shape is one line, not a pydantic dump."""

from __future__ import annotations

import pytest

from rag.errors import StoreError
from rag.store.open import open_store
from tests import servers


@pytest.fixture
def server():
    """A server that answers every request with 200 and JSON that looks like Qdrant's envelope but has the wrong
    shape inside."""
    with servers.recording(servers.qdrant_collections("x")) as server:
        yield server


def test_a_reply_of_the_wrong_shape_is_one_line_naming_the_field(server):
    with pytest.raises(StoreError) as error:
        open_store(url=server.url)  # the probe on open lists the collections
    message = str(error.value)
    assert "\n" not in message and "validation error" not in message
    assert "not Qdrant's" in message and "result.collections" in message and server.url in message


def test_a_reply_of_the_wrong_shape_later_is_one_line_too(server):
    from qdrant_client import QdrantClient

    from rag.store.client import Store

    store = Store(QdrantClient(url=server.url, check_compatibility=False), server.url, local=False)
    with pytest.raises(StoreError) as error:
        store.collections()
    message = str(error.value)
    assert "\n" not in message and "not Qdrant's" in message and "result.collections" in message
