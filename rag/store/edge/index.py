"""Index when it pays: the HNSW index of a large collection, built in a child process and swapped in whole.

The engine's optimizer holds Python's GIL for the whole build (20 s at 20,000 points, minutes at 100,000), so a
build in a thread of the app's process would stop every page. build_index instead:

1. under the client's lock, flushes the shard and copies its folder (segments and write-ahead log, as a kill -9
   would leave them; the engine replays the log on load), and notes the collection's write count;
2. runs `python -m rag.store.edge.index FOLDER` (niced; it ends with its parent and holds the copy's
   lock while it lives, rag.store.edge.child) on the copy: the engine's optimizers with an indexing
   threshold build an HNSW graph for every segment (and vacuum deleted points); then recall@10 of the graph is
   measured against exact search, the queries being up to SAMPLE stored vectors (each query's own point left
   out of both lists), both searches timed, at growing search ef until TARGET_RECALL is reached (that ef is what
   searches use);
3. under the lock again, if nothing was written to the collection meanwhile, puts the copy in place of the
   shard (two renames) and records the result in collection.json; else throws the copy away and starts over
   (ATTEMPTS times at most, then says to try again when the writes are done).

The original shard is never touched until step 3, so a failed, killed or cancelled build leaves it as it was.
Searches use the graph (with the calibrated ef) only while its measured recall@10 is at least MIN_RECALL (else they
compare every vector).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from qdrant_client import models

from rag.errors import Cancelled
from rag.store.edge import api
from rag.store.edge import child as build_child
from rag.words import counted, plural

MIN_POINTS = 50_000  # chunks from which a collection is indexed (docs/benchmarks.md, "indexed from 50,000 chunks on")
MIN_RECALL = 0.98  # searches use the graph only at this measured recall@10 or better
TARGET_RECALL = 0.99  # the search ef is the smallest of EF_STEPS that reaches this on the recall check's queries
EF_STEPS = (64, 128, 256, 384, 512, 768, 1024)
SAMPLE = 200  # queries of the recall check
QUESTIONS, QUESTIONS_USING = "questions.npy", "questions.json"  # the check's query vectors, beside the shard copy
TOP = 10
ATTEMPTS = 3
POLL_S = 0.25


class IndexBuildError(RuntimeError):
    """The build failed or was given up; the collection is as it was."""


class IndexCancelled(Cancelled):
    """The build was cancelled; the collection is as it was."""


@dataclass(frozen=True)
class IndexState:
    """A collection's HNSW index as the Library and `rag index` show it."""

    collection: str
    points: int
    indexed: int  # dense vectors in HNSW segments (the rest is compared one by one, as in exact search)
    min_points: int  # the size from which the collection is indexed
    recall_at_10: float | None = None  # measured when the index was built; None: never built
    exact_ms: float | None = None  # p50 of the recall check's exact searches
    indexed_ms: float | None = None  # ... and of its searches through the graph
    hnsw_ef: int | None = None  # the candidates a search through the graph looks at (calibrated by the check)
    checked_on: str | None = None  # "questions" (sentences of the collection embedded as queries) or "stored chunks"
    built_at: str | None = None
    build_s: float | None = None
    vacuum_pending: bool = False  # chunks were deleted since the build: keyword IDF counts them until the next one
    children: int = 0  # of points, the child points (rag.store.children); the rest are chunks

    @property
    def trusted(self) -> bool:
        """Return whether searches go through the graph (see trusted)."""
        return trusted({"recall_at_10": self.recall_at_10})

    @property
    def due(self) -> bool:
        """Return whether the collection should be (re)indexed: a delete is to be vacuumed, or it is large enough
        and a tenth or more of it is not indexed."""
        return self.vacuum_pending or (self.points >= self.min_points
                                       and self.points - self.indexed >= max(1, self.points // 10))

    @property
    def searches(self) -> str:
        return "indexed" if self.trusted and self.indexed else "exact"

    def as_json(self) -> dict[str, Any]:
        return {"collection": self.collection, "points": self.points, "indexed": self.indexed,
                "min_points": self.min_points, "due": self.due, "searches": self.searches,
                "recall_at_10": self.recall_at_10, "exact_ms": self.exact_ms, "indexed_ms": self.indexed_ms,
                "hnsw_ef": self.hnsw_ef, "checked_on": self.checked_on,
                "built_at": self.built_at, "build_s": self.build_s, "vacuum_pending": self.vacuum_pending,
                "children": self.children}

    def _over(self) -> str:
        """Return what the search runs over: "N chunks", or with children "N points (C chunks and K children)"."""
        if not self.children:
            return counted(self.points, 'chunk')
        return (f"{counted(self.points, 'point')} ({counted(self.points - self.children, 'chunk')} and "
                f"{counted(self.children, 'child', 'children')})")

    def summary(self) -> str:
        """Return the state in one line."""
        if self.recall_at_10 is None:
            if self.points < self.min_points:
                return (f"Exact search over {self._over()} (an HNSW index is built from "
                        f"{self.min_points:,} {'points' if self.children else 'chunks'} on).")
            return f"Exact search over {self._over()}; the HNSW index is not built yet."
        measured = (f"recall@10 {self.recall_at_10:.3f} against exact search on {self.checked_on} at hnsw_ef "
                    f"{self.hnsw_ef}")
        if self.exact_ms and self.indexed_ms:
            measured += f", {self.indexed_ms:.1f} ms a search instead of {self.exact_ms:.1f} ms"
        if not self.indexed:
            return (f"Exact search over {self._over()}: the last build made no HNSW graph (too few "
                    f"chunks for one; {measured}).")
        if not self.trusted:
            return f"An HNSW index was built ({measured}), but its recall is below {MIN_RECALL}: searches stay exact."
        left = self.points - self.indexed
        newer = "newer point" if self.children else "newer chunk"
        rest = (f"; {counted(left, newer)} {plural(left, 'is', 'are')} compared one by one until the "
                "next build" if left > 0 else "")
        if self.vacuum_pending:
            rest += ("; deleted chunks still count in the keyword (BM25) statistics until the next build, which "
                     "removes them for good")
        return f"HNSW index over {self.indexed:,} of {self._over()} ({measured}){rest}."


def state(client: Any, name: str, min_points: int = MIN_POINTS) -> IndexState:
    """Return the index state of collection name of an EdgeClient."""
    info, config = client.index_state(name), client.collection_config(name)
    counts = info["vectors"]
    dense = [counts[v] for v in config["vectors"]]
    # the engine counts every keyword vector as indexed (an inverted index); what is left are dense vectors in graphs
    graphs = max(0, info["indexed_vectors"] - sum(counts[v] for v in config["sparse"]))
    points = max(dense, default=0)
    record = config.get("index") or {}
    return IndexState(name, points, min(graphs // max(len(dense), 1), points), min_points, record.get("recall_at_10"),
                      record.get("exact_ms"), record.get("indexed_ms"), record.get("hnsw_ef"),
                      record.get("checked_on", "stored chunks"), record.get("built_at"), record.get("build_s"),
                      bool(record.get("vacuum_pending")))


def trusted(record: dict) -> bool:
    """Return whether an index record (collection.json's "index") lets searches go through the graph: its measured
    recall@10 is at least MIN_RECALL."""
    recall = record.get("recall_at_10")
    return recall is not None and recall >= MIN_RECALL


def build_index(client: Any, name: str, cancel: Callable[[], bool] | None = None, min_points: int = MIN_POINTS,
                questions: tuple[str | None, np.ndarray] | None = None) -> IndexState:
    """Build collection name's HNSW index in a child process, measure its recall and put it in place (see module).

    questions: (dense vector name, query vectors) the recall check searches with, as questions are embedded (a
    stored chunk as the query finds itself and its neighbours far more easily: recall 0.99 there was 0.83 for
    real questions on 20,000 e5 vectors); None: SAMPLE stored vectors.
    """
    for _ in range(ATTEMPTS):
        work = os.path.join(client.path, "edge", f".index-{uuid.uuid4().hex}")
        try:
            writes = client.copy_shard(name, work)
            if questions is not None:
                np.save(os.path.join(work, QUESTIONS), np.asarray(questions[1], dtype=np.float32))
                with open(os.path.join(work, QUESTIONS_USING), "w", encoding="utf-8") as f:
                    json.dump({"using": questions[0]}, f)
            report = _run_child(work, cancel)
            if client.replace_shard(name, work, writes, report):
                return state(client, name, min_points)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    raise IndexBuildError(f"The collection '{name}' was written to during each of {ATTEMPTS} index builds; build it "
                          "again when the ingest is done.")


def _run_child(work: str, cancel: Callable[[], bool] | None) -> dict:
    """Run the build on the copy in work; return its report. IndexCancelled / IndexBuildError."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_root(), os.environ.get("PYTHONPATH")]))}
    out_path, err_path = os.path.join(work, "child.out"), os.path.join(work, "child.err")
    with open(out_path, "w") as out, open(err_path, "w") as err:  # files, not pipes: a full pipe would stop it
        child = build_child.start("rag.store.edge.index", [work], work, out, err, environment)
        try:
            while child.poll() is None:
                if cancel is not None and cancel():
                    raise IndexCancelled("The index build was cancelled; searches stay as they were.")
                time.sleep(POLL_S)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdin.close()  # its watchdog's pipe: open while the child ran
    with open(out_path) as out, open(err_path) as err:
        report, problem = out.read().strip(), err.read().strip()
    if child.returncode != 0 or not report:
        last = (problem.splitlines() or [f"exit code {child.returncode}"])[-1]
        raise IndexBuildError(f"Building the index failed ({last[:200]}); the collection is as it was.")
    return json.loads(report.splitlines()[-1])


def _root() -> str:
    """Return the folder that holds the rag package (the child imports the same code)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


# ---- the child process -----------------------------------------------------------------------------------------

def _build(work: str) -> dict:
    """Index the shard copy in work (its collection.json beside it); return the report the parent records."""
    with open(os.path.join(work, "collection.json"), encoding="utf-8") as f:
        config = json.load(f)
    started = time.perf_counter()
    shard = api.load_shard(os.path.join(work, "shard"), api.config_of(config, api.INDEX_KB))
    try:
        api.build_index(shard)
        build_s = time.perf_counter() - started
        checked = _check(shard, config, _questions(work, config))
    finally:
        api.close_shard(shard)
    return {**checked, "build_s": round(build_s, 1), "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _questions(work: str, config: dict) -> list[tuple[Any, str | None, list[float]]] | None:
    """Return the question vectors the parent left beside the copy, as (None, vector name, vector); None if none."""
    if not os.path.isfile(os.path.join(work, QUESTIONS)):
        return None
    with open(os.path.join(work, QUESTIONS_USING), encoding="utf-8") as f:
        using = None if config.get("unnamed") else json.load(f)["using"]
    return [(None, using, row.tolist()) for row in np.load(os.path.join(work, QUESTIONS))]


def _check(shard: Any, config: dict, questions: list | None = None) -> dict:
    """Return recall@10 of the graph against exact search, the p50 ms of both and the search ef that reached
    TARGET_RECALL (the smallest of EF_STEPS; else the largest), over questions, else SAMPLE stored vectors (of
    each dense vector of the collection) as queries, each query's own point left out of both lists."""
    queries = questions if questions else _sample(shard, config)
    checked_on = "questions" if questions else "stored chunks"
    if not queries:
        return {"recall_at_10": None, "exact_ms": None, "indexed_ms": None, "hnsw_ef": None, "checked_on": None}
    exact_s: list[float] = []
    truth = [_top(shard, query, config, True, None, exact_s) for query in queries]
    for ef in EF_STEPS:
        indexed_s: list[float] = []
        found = [_top(shard, query, config, False, ef, indexed_s) for query in queries]
        recall = sum(len(set(t) & set(f)) / max(len(t), 1) for t, f in zip(truth, found, strict=True)) / len(truth)
        if recall >= TARGET_RECALL:
            break
    return {"recall_at_10": round(recall, 4), "exact_ms": _p50_ms(exact_s), "indexed_ms": _p50_ms(indexed_s),
            "hnsw_ef": ef, "checked_on": checked_on, "queries": len(queries)}


def _sample(shard: Any, config: dict) -> list[tuple[Any, str | None, list[float]]]:
    """Return (point id, vector name, vector) of up to SAMPLE stored points per dense vector, picked at random."""
    unnamed = bool(config.get("unnamed"))
    ids, offset = [], None
    while True:
        records, offset = api.scroll(shard, None, 10_000, offset, False, False, unnamed)
        ids += [r.id for r in records]
        if offset is None:
            break
    picked = random.Random(7).sample(ids, min(SAMPLE, len(ids)))
    queries = []
    for name in config["vectors"]:
        for record in api.retrieve(shard, picked, False, True if unnamed else [name], unnamed):
            vector = record.vector if unnamed else (record.vector or {}).get(name)
            if vector is not None:
                queries.append((record.id, None if unnamed else name, list(vector)))
    return queries


def _top(shard: Any, query: tuple, config: dict, exact: bool, ef: int | None, seconds: list[float]) -> list:
    """Return the ids of query's TOP nearest stored points but itself, timing the search into seconds."""
    point_id, using, vector = query
    request = models.QueryRequest(query=vector, using=using, limit=TOP + 1)
    began = time.perf_counter()
    (found,) = api.query_batch(shard, [request], bool(config.get("unnamed")), exact, ef)
    seconds.append(time.perf_counter() - began)
    return [p.id for p in found if p.id != point_id][:TOP]


def _p50_ms(seconds: list[float]) -> float:
    ordered = sorted(seconds)
    return round(ordered[len(ordered) // 2] * 1000, 3)


if __name__ == "__main__":
    build_child.watch_parent()  # a killed parent takes the build along (rag.store.edge.child)
    os.nice(10)  # the app's own work (searches, embedding) comes first on a shared machine
    print(json.dumps(_build(sys.argv[1])))
