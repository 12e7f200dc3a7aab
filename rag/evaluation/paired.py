"""Whether two settings really differ on one query set: a paired test over the same queries.

Two configurations (or two collections) searched with the same queries give one value per query each, say
the reciprocal rank. Their difference per query is what the test looks at, so queries that are hard for
both cancel out, which makes it far more sensitive than comparing two intervals.
  - The difference is the mean of B minus A over the queries.
  - Its 95 % interval is a paired bootstrap: the queries are resampled with replacement, the same picks for
    both sides (RESAMPLES times, SEED, as in rag.evaluation.intervals).
  - The p-value is a sign-flip permutation test: if A and B were exchangeable, each query's difference
    would be as likely negated; p is the share of sign patterns whose mean difference is at least as far
    from 0 as the one observed (two-sided). Queries with no difference cannot flip and are left out; up to
    EXACT_UP_TO differing queries every pattern is counted (exact), beyond that PERMUTATIONS random ones
    (counting the observed one, so p is never 0).
Two settings are *tied* when p >= ALPHA: the query set cannot tell them apart. A tie is not a proof of
equality; with more queries a small difference may become visible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rag.evaluation.intervals import LEVEL, RESAMPLES, SEED

ALPHA = 0.05
PERMUTATIONS = 10_000
BLOCK = 1000
EXACT_UP_TO = 14  # nonzero differences up to which every sign pattern is counted (2**14 patterns)


@dataclass(frozen=True)
class PairedDifference:
    difference: float  # mean of B minus A over the queries
    low: float  # 95 % paired bootstrap interval of the difference
    high: float
    p_value: float  # two-sided sign-flip permutation test
    queries: int

    @property
    def tied(self) -> bool:
        """Return whether the query set cannot tell the two sides apart at ALPHA."""
        return self.p_value >= ALPHA

    def to_json(self) -> dict:
        return {"difference": round(self.difference, 4), "interval": [round(self.low, 4), round(self.high, 4)],
                "p_value": round(self.p_value, 4), "queries": self.queries, "tied": self.tied}

    def words(self, metric: str) -> str:
        """Return the difference in words, e.g. "mrr@10 +0.011 (95 % interval -0.012 to +0.034, p = 0.35)"."""
        return (f"{metric} {self.difference:+.3f} (95 % interval {self.low:+.3f} to {self.high:+.3f}, "
                f"p = {format_p(self.p_value)})")


def format_p(p: float) -> str:
    """Return a p-value as people read it: "0.35", "0.052", "0.004", "< 0.001". Below 0.1 it has three places,
    cut rather than rounded, so no tie (p >= ALPHA) reads below 0.05 and no other row reads "0.050"."""
    if p < 0.001:
        return "< 0.001"
    return f"{math.floor(p * 1000) / 1000:.3f}" if p < 0.1 else f"{p:.2f}"


def paired_difference(a: np.ndarray, b: np.ndarray, *, resamples: int = RESAMPLES, permutations: int = PERMUTATIONS,
                      seed: int = SEED, level: float = LEVEL) -> PairedDifference:
    """Return the paired difference of b minus a: one value per query each, in the same query order."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired values must be two equally long lists, one value per query; got {a.shape} "
                         f"and {b.shape}")
    diffs = b - a
    if len(diffs) == 0:
        return PairedDifference(0.0, 0.0, 0.0, 1.0, 0)
    observed = float(diffs.mean())
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(diffs), size=(resamples, len(diffs)))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(diffs[picks].mean(axis=1), [tail, 100 - tail])
    moved = diffs[diffs != 0]  # a query both sides score alike is the same under either sign
    if len(moved) == 0:
        return PairedDifference(0.0, 0.0, 0.0, 1.0, len(diffs))
    return PairedDifference(observed, float(low), float(high), _sign_flip_p(moved, permutations, rng), len(diffs))


def _sign_flip_p(moved: np.ndarray, permutations: int, rng: np.random.Generator) -> float:
    """Return the two-sided sign-flip p-value of the sum of moved (the nonzero differences): exact over every
    sign pattern for up to EXACT_UP_TO of them, else from permutations random patterns."""
    target = abs(moved.sum()) - 1e-9
    if len(moved) <= EXACT_UP_TO:
        patterns = (np.arange(2 ** len(moved))[:, None] >> np.arange(len(moved))) & 1
        sums = (2.0 * patterns - 1.0) @ moved
        return float(np.count_nonzero(np.abs(sums) >= target)) / len(sums)
    extreme = 0
    for block in range(0, permutations, BLOCK):  # in blocks: memory stays small for large query sets
        signs = rng.integers(0, 2, size=(min(BLOCK, permutations - block), len(moved)), dtype=np.int8)
        extreme += int(np.count_nonzero(np.abs(2.0 * (signs @ moved) - moved.sum()) >= target))
    return (extreme + 1) / (permutations + 1)  # counting the observed pattern: p is never 0
