"""Fixtures of the report tests."""

from __future__ import annotations

import pytest

from rag.store.client import Store
from rag.store.open import open_store
from tests.conftest import ingest_paragraphs


@pytest.fixture(scope="module")
def collection() -> Store:
    """Return an in-memory store whose collection "c" holds the Berlin/Wien PARAGRAPHS, 30-token chunks (fake:64)."""
    store = open_store(":memory:")
    ingest_paragraphs(store, "c", chunk_size=30)
    return store
