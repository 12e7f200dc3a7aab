"""Whether two settings really differ on one query set: one paired test over the same queries, and its interval.

Two configurations (or two collections) searched with the same queries give one value per query each, say
the reciprocal rank. Their difference per query is what the test looks at, so queries that are hard for
both cancel out, which makes it far more sensitive than comparing two intervals.
  - The difference is the mean of B minus A over the queries.
  - The p-value is a sign-flip permutation test: if A and B were exchangeable, each query's difference
    would be as likely negated; p is the share of sign patterns whose mean difference is at least as far
    from 0 as the one observed (two-sided). Queries with no difference cannot flip and are left out; up to
    EXACT_UP_TO differing queries every pattern is counted (exact), beyond that PERMUTATIONS random ones,
    seeded (counting the observed one, so p is never 0).
  - The 95 % interval comes from the same test, inverted: it spans every shift d for which the test on the
    differences minus d gives p >= ALPHA (found by bisection, the same random sign patterns for every d).
    So 0 lies in the interval exactly when p >= ALPHA: the interval and the verdict never disagree.
Two settings are *tied* when p >= ALPHA: the query set cannot tell them apart. A tie is not a proof of
equality; with more queries a small difference may become visible. With n differing queries no p-value
below 2 / 2**n is possible, so with 5 or fewer (2 / 32 = 0.0625 >= ALPHA) no difference can ever show:
then *too_few_differ* is set and the words say "too few questions differ to tell", and the interval is as
wide as a difference can be (-1 to +1 for metrics between 0 and 1) when even all queries together are that few.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rag.evaluation.metrics.intervals import SEED
from rag.words import counted

ALPHA = 0.05
PERMUTATIONS = 10_000
BLOCK = 1000
EXACT_UP_TO = 14  # nonzero differences up to which every sign pattern is counted (2**14 patterns)
BOUNDS = (-1.0, 1.0)  # the differences a metric between 0 and 1 can have: the widest interval
TOLERANCE = 1e-6  # how closely bisection finds the interval's ends


@dataclass(frozen=True)
class PairedDifference:
    difference: float  # mean of B minus A over the queries
    low: float  # 95 % paired bootstrap interval of the difference
    high: float
    p_value: float  # two-sided sign-flip permutation test
    queries: int
    differing: int = -1  # queries on which the two sides differ (-1: not given, taken as queries)

    @property
    def tied(self) -> bool:
        """Return whether the query set cannot tell the two sides apart at ALPHA."""
        return self.p_value >= ALPHA

    @property
    def too_few_differ(self) -> bool:
        """Return whether so few queries differ that no p-value below ALPHA is possible (5 or fewer)."""
        return too_few_differ(self.queries if self.differing < 0 else self.differing)

    def to_json(self) -> dict:
        return {"difference": round(self.difference, 4), "interval": [round(self.low, 4), round(self.high, 4)],
                "p_value": round(self.p_value, 4), "queries": self.queries, "tied": self.tied,
                "differing": self.queries if self.differing < 0 else self.differing,
                "too_few_differ": self.too_few_differ}

    def words(self, metric: str) -> str:
        """Return the difference in words, e.g. "mrr@10 +0.011 (95 % interval -0.012 to +0.034, p = 0.35)"."""
        return (f"{metric} {self.difference:+.3f} (95 % interval {self.low:+.3f} to {self.high:+.3f}, "
                f"{p_words(self.p_value)})")

    def few_words(self) -> str:
        """Return why the test cannot decide when too few queries differ, e.g. "only 5 of 40 questions differ: too
        few questions differ to tell"; "" otherwise."""
        if not self.too_few_differ:
            return ""
        differing = self.queries if self.differing < 0 else self.differing
        if differing == 0:
            return f"all {counted(self.queries, 'question')} score the same: too few questions differ to tell"
        if differing == self.queries:
            return f"only {counted(differing, 'question')}, all of them differing: too few questions differ to tell"
        return f"only {differing} of {self.queries} questions differ: too few questions differ to tell"


def too_few_differ(differing: int) -> bool:
    """Return whether a sign-flip test over that many differing queries cannot reach p < ALPHA: its smallest
    p-value, 2 / 2**n (1 for none), is ALPHA or more."""
    return differing == 0 or (differing <= EXACT_UP_TO and 2.0 ** (1 - differing) >= ALPHA)


def p_words(p: float) -> str:
    """Return "p = 0.062" or "p < 0.001": a p-value in a sentence."""
    text = format_p(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def format_p(p: float) -> str:
    """Return a p-value as people read it: "0.35", "0.052", "0.004", "< 0.001". Below 0.1 it has three places,
    cut rather than rounded, so no tie (p >= ALPHA) reads below 0.05 and no other row reads "0.050"."""
    if p < 0.001:
        return "< 0.001"
    return f"{math.floor(p * 1000) / 1000:.3f}" if p < 0.1 else f"{p:.2f}"


def paired_difference(a: np.ndarray, b: np.ndarray, *, permutations: int = PERMUTATIONS, seed: int = SEED,
                      bounds: tuple[float, float] = BOUNDS) -> PairedDifference:
    """Return the paired difference of b minus a: one value per query each, in the same query order; its interval
    is the inverted sign-flip test (see the module docstring), within bounds."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired values must be two equally long lists, one value per query; got {a.shape} "
                         f"and {b.shape}")
    diffs = b - a
    differing = int(np.count_nonzero(diffs))
    if differing == 0:
        return PairedDifference(0.0, 0.0, 0.0, 1.0, len(diffs), 0)
    test = _SignFlip(diffs, permutations, np.random.default_rng(seed))
    observed = float(diffs.mean())
    low = _end(test, observed, float(diffs.min()) - TOLERANCE, bounds[0])
    high = _end(test, observed, float(diffs.max()) + TOLERANCE, bounds[1])
    return PairedDifference(observed, low, high, test.p(0.0), len(diffs), differing)


class _SignFlip:
    """The two-sided sign-flip p-value of the differences shifted by d, for any d: exact over every sign pattern
    when EXACT_UP_TO or fewer of them are nonzero, else over one fixed set of random patterns."""

    def __init__(self, diffs: np.ndarray, permutations: int, rng: np.random.Generator):
        self.diffs, self.permutations = diffs, permutations
        self.flipped = self.counts = None
        if len(diffs) > EXACT_UP_TO:  # sum of s_i (x_i - d) = flipped - d * counts for each pattern s
            flipped, counts = [], []
            for block in range(0, permutations, BLOCK):  # in blocks: memory stays small for large query sets
                signs = 2.0 * rng.integers(0, 2, size=(min(BLOCK, permutations - block), len(diffs))) - 1.0
                flipped.append(signs @ diffs)
                counts.append(signs.sum(axis=1))
            self.flipped, self.counts = np.concatenate(flipped), np.concatenate(counts)

    def p(self, shift: float) -> float:
        moved = self.diffs - shift
        moved = moved[moved != 0]  # a query with no difference is the same under either sign
        if len(moved) == 0:
            return 1.0
        if len(moved) <= EXACT_UP_TO:
            patterns = (np.arange(2 ** len(moved))[:, None] >> np.arange(len(moved))) & 1
            sums = (2.0 * patterns - 1.0) @ moved
            return float(np.count_nonzero(np.abs(sums) >= abs(moved.sum()) - 1e-9)) / len(sums)
        target = abs(moved.sum()) - 1e-9
        extreme = int(np.count_nonzero(np.abs(self.flipped - shift * self.counts) >= target))
        return (extreme + 1) / (self.permutations + 1)  # counting the observed pattern: p is never 0


def _end(test: _SignFlip, observed: float, edge: float, bound: float) -> float:
    """Return one end of the interval: the farthest shift from observed towards edge (just past every difference)
    that the test does not reject, by bisection; bound when it rejects none. 0 is tested itself, so the end
    lies on the side of 0 the p-value says: the interval holds 0 exactly when p >= ALPHA."""
    inner, outer = observed, edge  # p(observed) = 1: the shifted differences sum to 0
    toward = 1.0 if edge > observed else -1.0
    zero, reach = (0.0 - observed) * toward, (edge - observed) * toward  # how far 0 and edge lie that way
    if zero >= 0.0:  # 0 lies on this side of the observed difference
        if test.p(0.0) >= ALPHA:
            if zero >= reach:
                return bound  # every difference has one sign and the test rejects not even 0: nothing is rejected
            inner = 0.0
        elif zero < reach:
            outer = 0.0
    if test.p(outer) >= ALPHA:
        return bound
    while abs(outer - inner) > TOLERANCE:
        middle = (inner + outer) / 2
        inner, outer = (middle, outer) if test.p(middle) >= ALPHA else (inner, middle)
    return inner
