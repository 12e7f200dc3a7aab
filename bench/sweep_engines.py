"""The sweep benchmark on several embedded engines side by side (bench/sweep.py --engines local,edge).

Each engine runs the same sweep on its own empty folder and embedding cache; this module holds what the runs
are compared by: the seconds per stage summed over rows, the searching ratio of the first engine to each other
one (the issue's goal: Qdrant Edge searching the cold sweep at least 3x faster than qdrant-client's local mode),
and whether the engines gave the same rows. Rows are compared by their metrics, not by raw scores: keyword
scores may differ in the last float32 digit between engines, which changes nothing a row reports unless it
reorders a query's hits; where rows differ, it says how many queries rank differently and how many of those
have the same scores (within rag.store.edge.ties.TOLERANCE) with equal ones in another order, i.e. engines
that break a tie differently.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rag.evaluation.sweeps import STAGES, SweepResult
from rag.settings import QDRANT_ENGINES
from rag.store import TOLERANCE

ENGINE_VARIABLE = "RAG_QDRANT_ENGINE"
SEARCH_GOAL = 3.0  # issue 24: the cold sweep's searching at least 3x faster than the local mode's


@dataclass
class EngineRun:
    """One engine's sweeps: the cold runs by label ("sequential", "ahead") with their wall seconds, then the warm."""

    engine: str
    colds: dict[str, SweepResult]
    walls: dict[str, float]
    warm: SweepResult
    warm_wall: float

    def runs(self) -> list[tuple[str, SweepResult, float]]:
        """Return (label, result, wall seconds) of every run, the cold ones first: "cold, ahead", ..., "warm"."""
        cold = [(f"cold, {label}", result, self.walls[label]) for label, result in self.colds.items()]
        return [*cold, ("warm", self.warm, self.warm_wall)]


def parse_engines(text: str) -> list[str]:
    """Return the engines of "local,edge" in the order given; ValueError names a bad or repeated one."""
    engines = [e.strip() for e in text.split(",") if e.strip()]
    if not engines or len(set(engines)) != len(engines) or set(engines) - set(QDRANT_ENGINES):
        raise ValueError(f"--engines takes {', '.join(QDRANT_ENGINES)} (each once, comma-separated); got {text!r}")
    return engines


@contextmanager
def engine_env(engine: str) -> Iterator[None]:
    """Set RAG_QDRANT_ENGINE for the block (open_store reads it when it opens a folder), then restore it."""
    before = os.environ.get(ENGINE_VARIABLE)
    os.environ[ENGINE_VARIABLE] = engine
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENGINE_VARIABLE, None)
        else:
            os.environ[ENGINE_VARIABLE] = before


def stage_seconds(result: SweepResult) -> dict[str, float]:
    """Return the seconds of each stage (STAGES) summed over the rows of a sweep."""
    return {stage: sum(r.seconds[stage] for r in result.results) for stage in STAGES}


def metric_differences(a: SweepResult, b: SweepResult) -> list[str]:
    """Return, in words, each row of b that differs from a's (chunk count or metrics), with how many queries rank
    differently and how many of those only order equal scores otherwise; [] when every row agrees."""
    if [r.short for r in a.results] != [r.short for r in b.results]:
        return [f"other rows: {len(a.results)} vs {len(b.results)}"]
    found = []
    for x, y in zip(a.results, b.results, strict=True):
        gaps = {n: y.metrics.get(n, math.nan) - x.metrics.get(n, math.nan) for n in set(x.metrics) | set(y.metrics)}
        gaps = {n: abs(gap) for n, gap in gaps.items() if not abs(gap) <= 1e-12}  # NaN: a metric one row lacks
        largest = sorted(sorted(gaps), key=lambda n: math.inf if math.isnan(gaps[n]) else gaps[n], reverse=True)[:3]
        metrics = [f"{n} {x.metrics.get(n, math.nan):.4f} vs {y.metrics.get(n, math.nan):.4f}" for n in largest]
        metrics += [f"{len(gaps) - 3} more metrics"] if len(gaps) > 3 else []
        if x.chunks == y.chunks and not metrics:
            continue
        pairs = list(zip(x.evaluation.per_query, y.evaluation.per_query, strict=True))
        moved = [(p, q) for p, q in pairs if (p.rank, p.covers) != (q.rank, q.covers)]
        ties = sum(_same_scores(p.hits, q.hits) for p, q in moved)
        chunks = f"{x.chunks} vs {y.chunks} chunks; " if x.chunks != y.chunks else ""
        found.append(f"{x.short}: {chunks}{', '.join(metrics)} ({len(moved)} of {len(pairs)} queries rank their "
                     f"relevant chunks differently, {ties} of them with the same scores, equal ones in another order)")
    return found


def _same_scores(a, b) -> bool:
    """Return whether two hit lists have the same scores position by position (within the ties' TOLERANCE)."""
    return len(a) == len(b) and all(math.isclose(h.score, g.score, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
                                    for h, g in zip(a, b, strict=True))


def rows_agree(runs: list[EngineRun]) -> str:
    """Return whether every run of every engine has the rows of the first engine's first run, in words."""
    reference, first = runs[0].runs()[0][1], runs[0]
    differing: dict[str, list[str]] = {}  # what differs -> the runs where it does
    for run in runs:
        for label, result, _ in run.runs():
            if found := metric_differences(reference, result):
                differing.setdefault("; ".join(found), []).append(f"{run.engine} {label}")
    if not differing:
        return (f"yes: the {len(reference.results)} rows have the same chunks and metrics in every run of "
                f"{', '.join(r.engine for r in runs)} (compared with {first.engine} {first.runs()[0][0]})")
    return "no: " + " | ".join(f"{' and '.join(where)}: {found}" for found, where in differing.items())


def side_by_side(runs: list[EngineRun]) -> list[str]:
    """Return the lines that set the engines' runs side by side: wall time and stages, then the searching ratios
    of the first engine to each other one (and, for local to edge, whether the cold goal is met)."""
    lines = ["engines side by side (seconds per stage summed over rows):"]
    for label, *_ in runs[0].runs():
        for run in runs:
            result, wall = next((r, w) for name, r, w in run.runs() if name == label)
            split = ", ".join(f"{stage} {s:.1f} s" for stage, s in stage_seconds(result).items())
            lines.append(f"  {label}, {run.engine}: {wall:.1f} s wall; queries embedded {result.query_seconds:.1f} s; "
                         f"{split}")
    first = runs[0]
    for other in runs[1:]:
        ratios = []
        for (label, mine, _), (_, theirs, _) in zip(first.runs(), other.runs(), strict=True):
            a, b = stage_seconds(mine)["searching"], stage_seconds(theirs)["searching"]
            ratios.append(f"{label} {a:.1f} / {b:.1f} s = {a / b if b else math.inf:.2f}x")
        lines.append(f"searching {first.engine}/{other.engine}: " + "; ".join(ratios))
        if (first.engine, other.engine) == ("local", "edge"):
            cold = [stage_seconds(r)["searching"] / max(stage_seconds(t)["searching"], 1e-9)
                    for r, t in zip(first.colds.values(), other.colds.values(), strict=True)]
            verdict = "met" if min(cold) >= SEARCH_GOAL else "missed"
            lines.append(f"goal: the cold sweep's searching >= {SEARCH_GOAL:g}x faster on edge than local: {verdict} "
                         f"({', '.join(f'{x:.2f}x' for x in cold)})")
    return lines
