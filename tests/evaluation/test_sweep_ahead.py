"""Sweeps at full speed: one embedding per distinct chunk text across configurations, embedding ahead on a
background thread with the same rows, errors and cancels as without, and the estimate of the time left."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np
import pytest

from rag.chunking.chunker import chunk_document
from rag.embeddings import get_embedder
from rag.embeddings.cache import EmbeddingCache
from rag.embeddings.pace import SLICE, Cancelled, Pace, Paced
from rag.errors import EmbeddingError
from rag.evaluation.sweeps import sweep
from rag.evaluation.sweeps.results import SweepProgress
from rag.evaluation.sweeps.sweep import Sweep, SweepConfig, plan_pace, run_sweep
from rag.store.open import open_store

pytestmark = pytest.mark.timeout(300)  # a guard against a hung background thread, not a timing

CONFIGS = [SweepConfig(80, 0), SweepConfig(80, 20), SweepConfig(4000, 0), SweepConfig(4000, 100)]
MODES = ["dense", "sparse", "hybrid"]


class Recording:
    """Wraps an embedder: records each text it embeds and the thread it ran on; may wait or fail on a text."""

    def __init__(self, inner, wait_for: tuple[set[str], threading.Event] | None = None, fail_on: str | None = None):
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self.query_prompt, self.document_prompt = inner.query_prompt, inner.document_prompt
        self.seen: list[str] = []
        self.calls: list[int] = []  # texts per embed_documents call
        self.threads: set[str] = set()
        self.wait_for, self.fail_on = wait_for, fail_on

    def embed_documents(self, texts):
        if self.wait_for and set(texts) & self.wait_for[0]:
            assert self.wait_for[1].wait(60), "the caller never got that far while this was embedded"
        if self.fail_on in texts:
            raise EmbeddingError(f"The embedding server refused a text ({len(self.fail_on)} characters).")
        self.seen.extend(texts)
        self.calls.append(len(texts))
        self.threads.add(threading.current_thread().name)
        return self.inner.embed_documents(texts)

    def embed_query(self, texts):
        self.seen.extend(texts)
        return self.inner.embed_query(texts)



def chunk_texts(documents, config) -> list[str]:
    return [c.content for d in documents for c in chunk_document(d, config.chunk_size, config.overlap)]


def sweep_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("sweep-ahead")]


def outcome(result) -> tuple[list, np.ndarray]:
    """Return everything a sweep's rows say, seconds left out: (all but the hits' scores, the scores).

    Two collections of the same chunks give keyword scores that may differ in their last float32 digit (the
    engine's sums run in another order in another build of a shard), so scores are compared to float32 precision.
    """
    rows = [(r.short, r.collection, r.chunks, r.mean_tokens, r.reused, r.embedded, r.metrics, r.evaluation.intervals,
             [(o.rank, [(h.document_id, h.chunk_index) for h in o.hits]) for o in r.evaluation.per_query])
            for r in result.results]
    scores = [h.score for r in result.results for o in r.evaluation.per_query for h in o.hits]
    return rows, np.array(scores, dtype=np.float64)


def assert_same_outcome(one, other) -> None:
    (rows, scores), (other_rows, other_scores) = outcome(one), outcome(other)
    assert rows == other_rows
    np.testing.assert_allclose(scores, other_scores, rtol=1e-6, atol=1e-7)  # a few float32 steps (ties.TOLERANCE)


# ---- one embedding per distinct text ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("ahead", [False, True])
def test_configurations_share_the_cache_each_distinct_text_is_embedded_once(xquad, ahead):
    documents, queries = xquad
    fake = Recording(get_embedder("fake:32"))
    result = run_sweep(Sweep(documents, queries, CONFIGS, ks=[1, 5], modes=MODES), fake, store=open_store(":memory:"),
                       embed_ahead=ahead)
    chunks = [t for c in CONFIGS for t in chunk_texts(documents, c)]
    distinct = set(chunks) | {q.text for q in queries}
    assert len(fake.seen) == len(set(fake.seen)) and set(fake.seen) == distinct  # each once, none left out
    assert len(chunks) > len(set(chunks))  # the grid does share texts: 4000/0 and 4000/100 are one chunk per article
    firsts = [r for r in result.results if r.mode.label == "dense"]
    assert sum(r.embedded for r in firsts) == len(set(chunks)) and firsts[3].embedded == 0
    assert (fake.threads == {"MainThread"}) != ahead  # ahead, the chunks are embedded on the background thread


@pytest.mark.slow
def test_a_second_run_on_the_same_cache_still_says_the_time_left(xquad):
    documents, queries = xquad
    store, cache, fake = open_store(":memory:"), EmbeddingCache(), get_embedder("fake:32")
    run_sweep(Sweep(documents, queries, CONFIGS[:2], ks=[1, 5], modes=MODES), fake, store=store, cache=cache)
    events = []
    run_sweep(Sweep(documents, queries, CONFIGS[:2], ks=[1, 5], modes=MODES), fake, store=open_store(":memory:"),
              cache=cache, progress=events.append)  # every query and chunk comes from the cache
    # (while the next configuration's cache lookup is still running ahead, an early event may lack an estimate)
    estimates = [e.seconds_left for e in events if e.stage == "done"]
    assert len(estimates) == 2 and all(e is not None for e in estimates) and estimates[-1] == 0.0


# ---- embedding ahead: the same sweep, overlapped --------------------------------------------------------


@pytest.mark.slow
def test_embedding_ahead_gives_the_same_rows_and_overlaps_the_next_configuration(xquad):
    documents, queries = xquad
    plain = run_sweep(Sweep(documents, queries, CONFIGS, ks=[1, 5], modes=MODES), get_embedder("fake:32"),
                      store=open_store(":memory:"), embed_ahead=False)
    searching = threading.Event()
    second = set(chunk_texts(documents, CONFIGS[1])) - set(chunk_texts(documents, CONFIGS[0]))
    fake = Recording(get_embedder("fake:32"), wait_for=(second, searching))  # 80/20 waits until 80/0 is searched
    events, threads = [], set()

    def progress(event: SweepProgress) -> None:
        events.append(event)
        threads.add(threading.current_thread().name)
        if event.stage == "searching" and event.config_index == 0:
            searching.set()

    ahead = run_sweep(Sweep(documents, queries, CONFIGS, ks=[1, 5], modes=MODES), fake, store=open_store(":memory:"),
                      progress=progress, embed_ahead=True)
    assert_same_outcome(ahead, plain)
    assert ahead.tie_summary() == plain.tie_summary()
    assert threads == {"MainThread"}  # progress always comes on the caller's thread
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    first_second = next(i for i, e in enumerate(events) if e.config_index == 1 and e.stage == "embedding")
    last_first = max(i for i, e in enumerate(events) if e.config_index == 0 and e.config is not None)
    assert first_second < last_first  # the events of 80/20's embedding came while 80/0 was searched
    row = ahead.results[MODES.index("dense") + len(MODES)]
    assert row.seconds["embedding"] > 0 and row.embedded == len(set(chunk_texts(documents, CONFIGS[1])) - set(
        chunk_texts(documents, CONFIGS[0])))
    assert events[-1].seconds_left == 0.0 and events[-1].time_left == "a few seconds left"
    assert not sweep_threads()


class Tokenizing(Recording):
    """An embedder whose tokenizer, like Hugging Face's fast ones, fails when two threads use it at once."""

    max_input_tokens, windowed = 40, False

    def __init__(self, inner, wait_for):
        super().__init__(inner, wait_for)
        self.borrowed = threading.Lock()

    def count_tokens(self, text):
        with self._borrow():
            return len(text.split())

    def embed_documents(self, texts):
        with self._borrow():
            return super().embed_documents(texts)

    @contextmanager
    def _borrow(self):
        if not self.borrowed.acquire(blocking=False):
            raise RuntimeError("Already borrowed")
        try:
            yield
        finally:
            self.borrowed.release()


@pytest.mark.slow
def test_the_caller_never_uses_the_embedder_while_it_embeds_ahead(xquad):
    documents, queries = xquad
    searching = threading.Event()
    second = set(chunk_texts(documents, CONFIGS[1])) - set(chunk_texts(documents, CONFIGS[0]))
    model = Tokenizing(get_embedder("fake:32"), wait_for=(second, searching))  # 80/20 embeds while 80/0 is searched

    def progress(event: SweepProgress) -> None:
        if event.stage == "searching" and event.config_index == 0:
            searching.set()

    result = run_sweep(Sweep(documents, queries, CONFIGS, ks=[1, 5], modes=MODES), model, store=open_store(":memory:"),
                       progress=progress, embed_ahead=True)
    assert result.results[0].cut_share == pytest.approx(np.mean([len(t.split()) > 40 for t in chunk_texts(
        documents, CONFIGS[0])]))  # the share the model cuts was counted, on the embedding thread
    assert result.results[-1].cut_share > 0.5  # 4000-token chunks


@pytest.mark.parametrize("ahead", [False, True])
def test_an_embedding_error_surfaces_as_the_same_rag_error(xquad, ahead):
    documents, queries = xquad
    bad = chunk_texts(documents, CONFIGS[2])[1]  # embedded ahead while 80/20 is searched
    fake = Recording(get_embedder("fake:32"), fail_on=bad)
    with pytest.raises(EmbeddingError, match=rf"refused a text \({len(bad)} characters\)"):
        run_sweep(Sweep(documents, queries, CONFIGS, ks=[1, 5]), fake, store=open_store(":memory:"), embed_ahead=ahead)
    assert not sweep_threads()


class Stop(Exception):
    """What Streamlit raises inside a progress callback when the user interrupts the script run."""


def test_a_cancel_in_the_progress_callback_stops_the_embedding_ahead(xquad):
    documents, queries = xquad
    fake = Recording(get_embedder("fake:32"))

    def progress(event: SweepProgress) -> None:
        if event.stage == "searching" and event.config_index == 0:
            raise Stop()

    with pytest.raises(Stop):
        run_sweep(Sweep(documents, queries, CONFIGS, ks=[1, 5]), fake, store=open_store(":memory:"), progress=progress,
                  embed_ahead=True)
    assert not sweep_threads()  # no embedding goes on after the sweep ended
    later = set(chunk_texts(documents, CONFIGS[2])) - set(chunk_texts(documents, CONFIGS[1]))
    assert not later & set(fake.seen)  # 4000/0 was never started: only the next configuration is embedded ahead


# ---- the time left ------------------------------------------------------------------------------------------


def test_the_estimate_is_the_characters_left_at_the_rate_so_far_plus_the_searches_left():
    pace = Pace([(10, 1000), (5, 500)], [1200, 600], ["dense", "hybrid"], query_chars=100)
    assert pace.seconds_left() is None  # no rate yet
    pace.embedded(None, 100, 2.0)  # the queries: 50 characters per second, standing in for the documents
    assert pace.seconds_left() == pytest.approx(1500 / 50)
    pace.embedded(0, 1000, 10.0)  # 100 characters per second
    pace.finished_embedding(0)
    assert pace.seconds_left() == pytest.approx(500 / 100)
    pace.indexed(0, 3.0)  # 400 characters per second
    pace.searched(0, "dense", 1.0)
    pace.searched(0, "hybrid", 4.0)
    assert pace.seconds_left() == pytest.approx(500 / 100 + 600 / 400 + 1.0 + 4.0)
    pace.cached(1, 1)  # the cache holds 4 of the 5 texts: a fifth of the characters is left
    assert pace.seconds_left() == pytest.approx(100 / 100 + 600 / 400 + 5.0)
    pace.reused(1)
    assert pace.seconds_left() == pytest.approx(5.0)
    pace.searched(1, "dense", 1.0)
    pace.searched(1, "hybrid", 4.0)
    assert pace.seconds_left() == 0.0


def test_embedding_ahead_counts_the_longer_of_the_two_lines_of_work():
    pace = Pace([(10, 1000), (10, 1000), (10, 1000)], [0, 0, 0], ["dense"], ahead=True)
    pace.embedded(0, 1000, 10.0)
    pace.finished_embedding(0)
    pace.searched(0, "dense", 2.0)
    # 2000 characters at 100/s = 20 s of embedding, then the last configuration's search (2 s) cannot overlap
    assert pace.seconds_left() == pytest.approx(20 + 2)
    slow = Pace([(10, 100), (10, 100), (10, 100)], [0, 0, 0], ["dense"], ahead=True)
    slow.embedded(0, 100, 1.0)
    slow.searched(0, "dense", 30.0)
    assert slow.seconds_left() == pytest.approx(60.0)  # searching is the longer line: embedding hides behind it


def test_a_warm_sweep_is_estimated_from_its_searches_alone():
    pace = Pace([(10, 1000), (10, 1000)], [1000, 1000], ["sparse"])
    pace.reused(0)
    pace.reused(1)
    assert pace.seconds_left() is None
    pace.searched(0, "sparse", 3.0)
    assert pace.seconds_left() == pytest.approx(3.0)


def test_paced_embeds_in_slices_timed_by_the_clock_and_stops_when_cancelled():
    ticks = iter(range(100))
    pace = Pace([(20, 200)], [0], ["dense"])
    cancel, reported = threading.Event(), []
    fake = get_embedder("fake:8")
    paced = Paced(fake, pace, 0, cancel, reported.append, clock=lambda: float(next(ticks)))
    texts = [f"text {i:05d}" for i in range(SLICE * 2 + 3)]  # 10 characters each
    vectors = paced.embed_documents(texts)
    assert np.allclose(vectors, fake.embed_documents(texts)) and paced.embedded == len(texts)
    assert reported == [SLICE, 2 * SLICE, len(texts)]
    assert pace.seconds_left() == pytest.approx((200 - 190) / (190 / 3))  # 3 slices of one tick, 190 characters
    assert (paced.model_id, paced.dimension, paced.document_prompt) == (fake.model_id, 8, fake.document_prompt)
    recording = Recording(fake)
    Paced(recording, pace, 0, cancel, clock=lambda: 0.0).embed_documents([f"t{i}" for i in range(200)])
    assert recording.calls == [SLICE, 2 * SLICE, 4 * SLICE, 64, 64, 16]  # slices under a second double, up to 64
    cancel.set()
    with pytest.raises(Cancelled):
        paced.embed_documents(texts)
    assert paced.embed_documents([]).shape == (0, 8)


@pytest.mark.parametrize(("seconds", "words"), [
    (None, ""), (3, "a few seconds left"), (42, "about 40 s left"), (89, "about 90 s left"),
    (130, "about 2 min left"), (3600, "about 1 h left"), (3900, "about 1 h 5 min left")])
def test_the_time_left_in_words(seconds, words):
    event = SweepProgress("embedding", 1, 6, SweepConfig(350, 50), 40, 126, "chunk_size 350, overlap 50: embedding",
                          seconds_left=seconds)
    assert event.time_left == words
    assert event.status == "chunk_size 350, overlap 50: embedding 40/126" + (f" · {words}" if words else "")


def test_the_fraction_never_goes_below_the_share_reached():
    event = SweepProgress("searching", 0, 4, SweepConfig(80, 0), 1, 3, floor=0.4)
    assert event.fraction == 0.4
    assert SweepProgress("done", 3, 4, SweepConfig(80, 0), floor=0.4).fraction == 1.0


# ---- the plan: what the cache holds is not planned as work (issue 39, item 5) ----------------------------------


@pytest.mark.parametrize("on_disk", [False, True])
def test_the_plan_counts_only_what_the_cache_lacks(tmp_path, on_disk):
    fake, cache = get_embedder("fake:32"), EmbeddingCache(tmp_path if on_disk else None)
    first = [f"Absatz {i} über Kündigungsfristen." for i in range(10)]
    second = [*first[:5], *(f"Abschnitt {i} zur Instandhaltung der Mietsache." for i in range(10))]
    questions = [f"Frage {i}?" for i in range(5)]
    cache.embed([*first[1:], *second[7:]], fake)  # the cache holds most chunks: all but first[0], second[5:7]
    cache.embed(questions[1:], fake, query=True)
    pace = plan_pace([first, second, None], questions, [], False, cache=cache, embedder=fake)
    lacking = second[5:7]  # second's new texts the cache lacks (its first five are first's)
    assert pace.embed_texts == [1, 2, 0]
    assert pace.planned == pace.embed_left == [len(first[0]), sum(map(len, lacking)), 0]
    assert pace.query_left == len(questions[0])
    assert pace.index_left == [sum(map(len, first)), sum(map(len, second)), 0]  # every chunk is indexed
    pace.embedded(None, 100, 1.0)  # 100 characters per second: the time left is that of the uncached texts
    assert pace.seconds_left() == pytest.approx((len(first[0]) + sum(map(len, lacking))) / 100)
    uncached = plan_pace([first, second, None], questions, [], False)  # no cache: everything counts
    assert uncached.embed_texts == [10, 10, 0]


@pytest.mark.slow
def test_a_sweep_over_mostly_cached_chunks_plans_only_the_uncached_ones(xquad, monkeypatch):
    documents, queries = xquad
    store, cache, fake = open_store(":memory:"), EmbeddingCache(), get_embedder("fake:32")
    run_sweep(Sweep(documents, queries, CONFIGS[:2], ks=[1, 5], modes=["dense"]), fake, store=store, cache=cache)
    made = []
    monkeypatch.setattr(sweep, "Pace", lambda *args, **kwargs: made.append(Pace(*args, **kwargs)) or made[-1])
    run_sweep(Sweep(documents, queries, CONFIGS[:3], ks=[1, 5], modes=["dense"]), fake, store=open_store(":memory:"),
              cache=cache)  # the first two configurations' chunks and every query are cached
    known = set(chunk_texts(documents, CONFIGS[0])) | set(chunk_texts(documents, CONFIGS[1]))
    new = set(chunk_texts(documents, CONFIGS[2])) - known
    assert new and made[0].planned == [0, 0, sum(map(len, new))]
    assert made[0].embed_texts == [0, 0, len(new)]
