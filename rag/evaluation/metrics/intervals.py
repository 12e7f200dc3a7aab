"""How sure a metric is: 95 % bootstrap intervals over the queries, seeded, so a run can be repeated exactly.

A metric of a query set is the mean of one value per query. Resampling the queries with replacement
(RESAMPLES times, SEED) and taking the 2.5th and 97.5th percentiles of the resampled means gives the interval:
the range the metric would likely take on another query set of the same kind and size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RESAMPLES = 2000
SEED = 20261201
LEVEL = 0.95


def bootstrap_intervals(values: np.ndarray, names: Sequence[str], resamples: int = RESAMPLES, seed: int = SEED,
                        level: float = LEVEL) -> dict[str, tuple[float, float]]:
    """Return name -> (low, high) for the mean of each column of values (one row per query)."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] != len(names):
        raise ValueError(f"values must be queries x {len(names)} metrics, not {values.shape}")
    if len(values) == 0:
        return {name: (0.0, 0.0) for name in names}
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    means = values[picks].mean(axis=1)  # resamples x metrics
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail], axis=0)
    return {name: (round(float(a), 4), round(float(b), 4)) for name, a, b in zip(names, low, high, strict=True)}
