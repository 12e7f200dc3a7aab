"""One cancellation family: every kind of Cancel is a rag.errors.Cancelled, so one `except Cancelled` sees them all,
and the old names (and what they were before) still catch what they caught."""

from __future__ import annotations

import pytest

from rag.embeddings import pace
from rag.errors import Cancelled, IngestCancelled, RagError, StoreError
from rag.store.edge.index import IndexCancelled
from rag.store.indexing import IndexCancelledError
from ui.jobs.sweep import SweepCancelled


@pytest.mark.parametrize("kind", [IngestCancelled, IndexCancelled, IndexCancelledError, SweepCancelled, pace.Cancelled])
def test_every_cancellation_is_caught_as_cancelled(kind):
    with pytest.raises(Cancelled):
        raise kind("cancelled")
    assert issubclass(kind, RagError)


def test_the_old_names_catch_what_they_caught():
    with pytest.raises(StoreError):  # the Store's index build said its cancel as a StoreError: it still does
        raise IndexCancelledError("cancelled")
    with pytest.raises(IndexCancelled):  # and rag.store.indexing turns the engine's into it: both names catch it
        raise IndexCancelledError("cancelled")
    assert pace.Cancelled is Cancelled  # the sweep's slices raise the base itself


def test_a_cancel_stops_a_paced_embedding_as_cancelled():
    from rag.embeddings import FakeEmbedder

    stop = pace.Stop(lambda: True)
    paced = pace.Paced(FakeEmbedder(), pace.Pace([(1, 10)], [0], []), 0, stop)
    with pytest.raises(Cancelled):
        paced.embed_documents(["ein Satz"])
