"""A sweep's Cancel (issue 34.5): the embedder is called in slices of about a second, as an ingest's batches, and a
cancel asked by the caller stops the sweep within the slice under way, also while it embeds ahead."""

from __future__ import annotations

import html
import threading
import time

import pytest

from rag.embeddings import get_embedder
from rag.embeddings.pace import Cancelled
from rag.evaluation.sweeps.sweep import Sweep, SweepConfig, run_sweep
from rag.runs.db import RunLog, runs_path_of
from rag.runs.keep import keep_sweep
from rag.store.open import open_store
from tests.evaluation.test_sweep_ahead import Recording, sweep_threads

pytestmark = pytest.mark.timeout(300)
PER_TEXT = 0.04  # seconds the slow model takes per text: sleeping, so the CPU's load does not change it


class Slow(Recording):
    """A model that takes PER_TEXT seconds per text, and notes when each call ended."""

    def __init__(self, inner):
        super().__init__(inner)
        self.ended: list[float] = []

    def embed_documents(self, texts):
        time.sleep(PER_TEXT * len(texts))
        vectors = super().embed_documents(texts)
        self.ended.append(time.monotonic())
        return vectors


@pytest.mark.slow
@pytest.mark.parametrize("ahead", [False, True])
def test_a_cancel_stops_the_sweep_within_the_slice_under_way(xquad, ahead):
    documents, queries = xquad
    slow = Slow(get_embedder("fake:32"))
    clicked = threading.Event()  # Cancel, pressed on another thread (a page) once the model has done 4 slices
    asked: list[float] = []

    def watch() -> None:
        while len(slow.calls) < 4:
            time.sleep(0.01)
        asked.append(time.monotonic())
        clicked.set()

    threading.Thread(target=watch, daemon=True).start()
    configs = [SweepConfig(40, 0), SweepConfig(60, 0)]
    with pytest.raises(Cancelled):
        run_sweep(Sweep(documents, queries, configs, ks=[1, 5], modes=["dense"]), slow, store=open_store(":memory:"),
                  embed_ahead=ahead, cancel=clicked.is_set)
    assert not sweep_threads()
    assert max(slow.calls[1:]) * PER_TEXT <= 1.5, slow.calls  # slices of about a second (after the first)
    assert all(end <= asked[0] + 1.5 for end in slow.ended), "a slice began after the cancel was asked"
    assert sum(slow.calls) < sum(len(d.text) for d in documents)  # it stopped long before the end


def test_a_sweeps_total_time_is_its_wall_time_in_the_result_the_report_and_the_kept_run(xquad, tmp_path):
    documents, queries = xquad
    store = open_store(path=str(tmp_path / "qdrant"))
    embedder = get_embedder("fake:32")
    started = time.perf_counter()
    sweep = Sweep(documents, queries, [SweepConfig(200, 0), SweepConfig(300, 0)], ks=[1, 5], modes=["dense"])
    result = run_sweep(sweep, embedder, store=store)
    wall = time.perf_counter() - started
    assert result.seconds is not None and 0 < result.seconds <= wall
    assert result.to_json()["seconds"] == round(result.seconds, 3)
    run_id, warning = keep_sweep(store, result, queries, embedder=embedder, query_set="q.jsonl", seconds=wall + 30)
    assert warning is None
    log = RunLog(runs_path_of(store))
    assert log.run(run_id)["seconds"] == round(result.seconds, 3)  # not what the caller measured around it
    assert f"{result.seconds:.1f} s in all (the run's wall time)" in html.unescape(log.report(run_id))
