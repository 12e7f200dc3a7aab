"""How long a sweep has left, and the embedder wrapper that measures it: rates so far times the work still to do.

A cold sweep is dominated by embedding, so the estimate counts the characters still to embed (each distinct
chunk text of the configurations not yet embedded, not reused, that the embedding cache lacks: a sweep asks the
cache before it starts, rag.evaluation.sweeps.sweep.plan_pace) at the characters per second embedded so far, plus
the indexing left (characters at the indexing rate so far) and the searches left (at the mean time of one
search in that mode so far). Before any document is embedded the queries' rate stands in; parts whose rate
is still unknown count as 0, so an early estimate errs low. With embedding ahead (rag.evaluation.sweeps.ahead), the
embedding runs next to the indexing and searching: the time left is then the longer of the two, plus the
last configuration's indexing and searching, which nothing can overlap.

Pace is shared by the sweep's two threads (a lock guards it); Paced wraps the embedder for one call of
EmbeddingCache.embed: it embeds in slices, tells the Pace each slice's characters and seconds, reports
progress, and stops between slices once the sweep is cancelled (Stop: also when its caller asks). A sweep and
an ingest give it `seconds` (BATCH_SECONDS): the first slice holds FIRST_BATCH texts, each later one what the
embedder did in that long before, up to the cache's batch (so a fast HTTP embedder still gets requests of 64
texts), and a Cancel is seen within about a second. Without it, a slice starts at SLICE texts (about 3 s of
the local e5 model on 2 cores) and doubles while slices take under SLICE_SECONDS.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rag import errors
from rag.embeddings.base import Embedder
from rag.embeddings.cache import EMBED_BATCH, EmbeddingCache

SLICE = 8  # texts of the first embedder call: the unit of progress, of the rate, and of how soon a cancel is seen
SLICE_SECONDS = 1.0  # a slice faster than this doubles the next one
# characters to embed per unit of a file not read yet (plan_rest), until a file of that unit was chunked: a text
# file's bytes (UTF-8, and the overlap adds about a tenth), a PDF page (1,350-1,700 characters of text in the German
# LaTeX manuals and guides measured), a stored chunk of a document chunked again
CHARS_PER = {"bytes": 1.1, "pages": 1700.0, "chunks": 1500.0}
Clock = Callable[[], float]


Cancelled = errors.Cancelled  # the sweep stopped (an error or a cancel): embedding ahead ends between slices


class Stop:
    """A sweep's cancel flag: set by the sweep when it leaves (an error), or asked of its caller (a job's Cancel).
    Paced checks it before every slice, so a cancel is seen within the slice under way (about a second)."""

    def __init__(self, asked: Callable[[], bool] | None = None):
        self._event, self._asked = threading.Event(), asked or (lambda: False)

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set() or self._asked()


class Pace:
    """The sweep's rates and the work it has left; seconds_left() is the estimate (None before any rate)."""

    def __init__(self, embed: Sequence[tuple[int, int]], index_chars: Sequence[int], modes: Sequence[str], *,
                 query_chars: int = 0, ahead: bool = False):
        """embed: per configuration (texts, characters) to embed (distinct, not embedded by an earlier one);
        index_chars: per configuration the characters to index (0 when reused); modes: searched per configuration."""
        self.embed_texts = [texts for texts, _ in embed]
        self.planned = [chars for _, chars in embed]  # per configuration: characters to embed, as planned
        self.embed_left = [chars for _, chars in embed]  # per configuration: characters still to embed (at most)
        self.index_left = list(index_chars)  # per configuration: characters still to index
        self.searches_left = [list(modes) for _ in embed]  # per configuration: modes still to search
        self.query_left = query_chars
        self.ahead = ahead
        self._lock = threading.Lock()
        self._embedded = [0.0, 0.0]  # document characters, seconds
        self._queries = [0.0, 0.0]  # query characters, seconds
        self._indexed = [0.0, 0.0]
        self._searched: dict[str, list[float]] = {}  # mode -> [searches, seconds]

    def plan(self, index: int, texts: int, chars: int, index_chars: int) -> None:
        """Configuration index's work is known now (an ingest learns a file's chunks once it has read it)."""
        with self._lock:
            self.embed_texts[index], self.embed_left[index], self.index_left[index] = texts, chars, index_chars
            self.planned[index] = chars

    def plan_rest(self, sizes: Sequence[tuple[str, float]], after: int) -> None:
        """Plan the configurations after index `after` (an ingest's files not read yet) by their sizes, each (unit,
        amount) as rag.documents.loader.expected_size gives it: at the characters per unit of those of the same unit
        planned up to `after`, else CHARS_PER[unit]. after = -1 plans every one (an ingest's start)."""
        with self._lock:
            learned: dict[str, list[float]] = {}
            for i in range(after + 1):
                unit, amount = sizes[i]
                if self.planned[i] and amount:
                    tally = learned.setdefault(unit, [0.0, 0.0])
                    tally[0], tally[1] = tally[0] + self.planned[i], tally[1] + amount
            for later in range(after + 1, len(sizes)):
                unit, amount = sizes[later]
                ratio = learned[unit][0] / learned[unit][1] if unit in learned else CHARS_PER.get(unit, 1.0)
                self.embed_left[later] = self.index_left[later] = round(ratio * amount)

    def reused(self, index: int) -> None:
        """Configuration index's collection is reused: nothing of it is embedded or indexed."""
        with self._lock:
            self.embed_left[index] = self.index_left[index] = 0

    def cached(self, index: int, todo: int) -> None:
        """Configuration index has todo texts the cache lacks: only their share of the planned ones is left."""
        with self._lock:
            planned = self.embed_texts[index]
            self.embed_left[index] = round(self.embed_left[index] * min(todo / planned, 1.0)) if planned else 0

    def embedded(self, index: int | None, chars: int, seconds: float) -> None:
        """Texts of configuration index (None: the queries) were embedded, chars characters in seconds."""
        with self._lock:
            if index is None:
                self._queries[0] += chars
                self._queries[1] += seconds
                self.query_left = max(self.query_left - chars, 0)
                return
            self._embedded[0] += chars
            self._embedded[1] += seconds
            self.embed_left[index] = max(self.embed_left[index] - chars, 0)

    def finished_embedding(self, index: int | None) -> None:
        """Configuration index's texts (None: the queries) are all embedded, also when the cache held them."""
        with self._lock:
            if index is None:
                self.query_left = 0
            else:
                self.embed_left[index] = 0

    def indexed(self, index: int, seconds: float) -> None:
        with self._lock:
            self._indexed[0] += self.index_left[index]
            self._indexed[1] += seconds
            self.index_left[index] = 0

    def searched(self, index: int, mode: str, seconds: float) -> None:
        with self._lock:
            tally = self._searched.setdefault(mode, [0.0, 0.0])
            tally[0] += 1
            tally[1] += seconds
            self.searches_left[index].remove(mode)

    def seconds_left(self) -> float | None:
        """Return the estimated seconds the sweep has left; None while no rate is known for work still to do."""
        with self._lock:
            embed_rate = _rate(self._embedded) or _rate(self._queries)
            index_rate = _rate(self._indexed)
            left = sum(self.embed_left) + self.query_left
            if left and not embed_rate or not left and not (self._searched or index_rate):
                return None
            embedding = left / embed_rate if left else 0.0
            rest = [self._indexing(c, index_rate) + self._searching(c) for c in range(len(self.embed_left))]
            if not self.ahead:
                return embedding + sum(rest)
            last = next((r for r in reversed(rest) if r), 0.0)
            return max(embedding + last, sum(rest))

    def _indexing(self, index: int, rate: float | None) -> float:
        return self.index_left[index] / rate if rate else 0.0

    def _searching(self, index: int) -> float:
        means = {mode: seconds / count for mode, (count, seconds) in self._searched.items()}
        fallback = sum(means.values()) / len(means) if means else 0.0
        return sum(means.get(mode, fallback) for mode in self.searches_left[index])


def _rate(tally: list[float]) -> float | None:
    return tally[0] / tally[1] if tally[0] and tally[1] > 0 else None


class Paced:
    """An embedder for one EmbeddingCache.embed call: embeds in slices, timing each for the Pace, reporting
    progress(texts embedded so far) after each slice, raising Cancelled between slices once cancel is set."""

    def __init__(self, embedder: Embedder, pace: Pace, index: int | None, cancel: threading.Event | Stop,
                 progress: Callable[[int], None] | None = None, clock: Clock = time.perf_counter, *,
                 first: int = SLICE, seconds: float | None = None):
        """first: texts of the first slice; seconds: when given, each later slice holds the characters the
        embedder did in that many seconds on the slice before (at least one text, at most EMBED_BATCH)
        instead of doubling, so a slow model's progress and cancel come every `seconds`."""
        self.inner, self.pace, self.index, self.cancel, self.clock = embedder, pace, index, cancel, clock
        self.seconds = seconds
        self.progress = progress or (lambda done: None)
        self.model_id, self.query_prompt, self.document_prompt = (
            embedder.model_id, embedder.query_prompt, embedder.document_prompt)
        self.embedded = 0  # texts this call gave the embedder (the cache's misses)
        self.slice = first

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # dimension, max_input_tokens, ... as the wrapped embedder has them

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.inner.embed_documents)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.inner.embed_query)

    def _embed(self, texts: Sequence[str], embed: Callable[[Sequence[str]], np.ndarray]) -> np.ndarray:
        parts, start = [], 0
        while start < len(texts):
            if self.cancel.is_set():
                raise Cancelled()
            part = list(texts[start : start + self.slice])
            clock = self.clock()
            parts.append(np.asarray(embed(part), dtype=np.float32))
            seconds = self.clock() - clock
            self.pace.embedded(self.index, sum(len(t) for t in part), seconds)
            self.embedded += len(part)
            start += len(part)
            self.progress(self.embedded)
            if self.seconds is not None:
                self.slice = _fitting(texts, start, sum(len(t) for t in part) / max(seconds, 1e-9) * self.seconds)
            elif seconds < SLICE_SECONDS:
                self.slice = min(self.slice * 2, EMBED_BATCH)
        return np.vstack(parts) if parts else np.zeros((0, self.inner.dimension), dtype=np.float32)


def _fitting(texts: Sequence[str], start: int, chars: float) -> int:
    """Return how many texts from start hold about chars characters: at least 1, at most EMBED_BATCH."""
    count, total = 0, 0
    for text in texts[start : start + EMBED_BATCH]:
        total += len(text)
        if count and total > chars:
            break
        count += 1
    return max(count, 1)


def time_left(seconds: float | None) -> str:
    """Return an estimate in words, e.g. "about 2 min left", "about 40 s left" ("" when there is none)."""
    if seconds is None:
        return ""
    seconds = max(seconds, 0.0)
    if seconds < 10:
        return "a few seconds left"
    if seconds < 90:
        return f"about {round(seconds / 10) * 10:.0f} s left"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min left"
    return f"about {minutes // 60} h {minutes % 60} min left" if minutes % 60 else f"about {minutes // 60} h left"


FIRST_BATCH = 2  # chunks of a file's first embed call in an ingest (it may also wait for the model to load)
BATCH_SECONDS = 1.0  # each later call holds what the embedder did in this long: progress and Cancel that often


def embed_chunks(texts: list[str], embedder: Embedder, progress: Callable[[int], None] | None = None, *,
                 pace: Pace | None = None, index: int = 0, clock: Callable[[], float] = time.perf_counter,
                 cache: EmbeddingCache | None = None, seconds: float | None = None) -> np.ndarray:
    """Return the float32 vectors of texts (in their order), in calls of about `seconds` each (BATCH_SECONDS).

    Texts go to the model longest first, so each call holds texts of similar length and little padding.
    The first call holds FIRST_BATCH texts, each later one what the embedder did in BATCH_SECONDS before
    (Paced; at most 64). progress(texts done) after each call may raise (a cancel): at
    most the call under way runs on. pace, an ingest's with this document as configuration index, learns the rate.
    cache: only the texts it lacks (by model, prompt and text) are embedded, and they are saved in it; its
    texts count as done at once. None embeds every text.
    """
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    pace = pace if pace is not None else Pace([(len(texts), sum(map(len, texts)))], [0], [])
    cached = [0]  # texts the cache held: reported done before the first call

    def report(done: int) -> None:
        if progress:
            progress(cached[0] + done)

    def counted(done: int, total: int) -> None:  # the cache's progress: (0, texts it lacks) comes first
        if done == 0:
            cached[0] = len(texts) - total
            pace.cached(index, total)
            if cached[0]:
                report(0)

    paced = Paced(embedder, pace, index, threading.Event(), report, clock, first=FIRST_BATCH,
                  seconds=BATCH_SECONDS if seconds is None else seconds)
    vectors = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
    ordered = [texts[i] for i in order]
    vectors[order] = cache.embed(ordered, paced, counted) if cache is not None else paced.embed_documents(ordered)
    pace.finished_embedding(index)
    return vectors
