"""The HNSW index of an embedded collection: its state, and a build that never stops the app (rag.store.edge.index).

A Qdrant server indexes its collections itself (its optimizers, in the background); there index_state is None and
build_index says so. The embedded engine searches exactly until a collection reaches the size the settings give
(RAG_INDEX_MIN_POINTS, default rag.store.edge.index.MIN_POINTS); then `rag index`, `rag ingest` and the app's
job queue build the index.
"""

from __future__ import annotations

from collections.abc import Callable

from rag.errors import StoreError
from rag.settings import load
from rag.store.edge import EdgeClient
from rag.store.edge import index as edge_index
from rag.store.edge.index import IndexBuildError, IndexCancelled, IndexState


class IndexCancelledError(StoreError):
    """An index build was cancelled; the collection is as it was."""


class IndexMixin:
    """Store methods for the embedded engine's HNSW index."""

    def index_state(self, collection: str) -> IndexState | None:
        """Return a collection's index state; None on a server (which indexes by itself) or the old local engine."""
        if not isinstance(self.client, EdgeClient):
            return None
        self._layout(collection)  # CollectionNotFoundError
        with self._guard(f"reading the index of '{collection}'"):
            return edge_index.state(self.client, collection, min_points())

    def index_due(self, collection: str) -> bool:
        """Return whether collection is large enough and not (or no longer fully) indexed."""
        state = self.index_state(collection)
        return state is not None and state.due

    def build_index(self, collection: str, cancel: Callable[[], bool] | None = None) -> IndexState:
        """Build a collection's HNSW index in a child process, check its recall and put it in place (blocks for
        the build: minutes at 100,000 chunks; searches and other sessions go on meanwhile)."""
        if not isinstance(self.client, EdgeClient):
            raise StoreError(f"Qdrant at {self.location} builds its HNSW index itself; there is nothing to build here.")
        self._layout(collection)
        try:
            with self._guard(f"indexing '{collection}'", hold=False):
                return edge_index.build_index(self.client, collection, cancel, min_points())
        except IndexCancelled as e:
            raise IndexCancelledError(str(e)) from e
        except IndexBuildError as e:
            raise StoreError(str(e)) from e


def min_points() -> int:
    """Return the size from which collections are indexed (RAG_INDEX_MIN_POINTS)."""
    return load().index_min_points or edge_index.MIN_POINTS
