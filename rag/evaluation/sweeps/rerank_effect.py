"""Does reranking help? The paired test of each sweep row with rerank on against the same row with it off.

A sweep with "+rerank" modes (rag.evaluation.metrics.modes) has, per configuration, rows with and without the
reranker on the same candidates; `rerank_pairs` pairs them, and `paired_difference(off, on)` says how much the
reranker changed the metric over the same queries (positive: it helps), with its interval and p-value
(rag.evaluation.metrics.paired).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace
from typing import Any, Protocol

from rag.evaluation.metrics import Evaluation, PairedDifference, SearchMode, paired_difference


class Row(Protocol):
    """A sweep row as the pairing reads it: rag.evaluation.sweeps.results.ConfigResult (which imports this module)."""

    @property
    def config(self) -> Hashable: ...
    @property
    def mode(self) -> SearchMode: ...
    @property
    def evaluation(self) -> Evaluation: ...
    @property
    def short(self) -> str: ...


Pair = tuple[Any, Any, PairedDifference]  # (row off, row on, on minus off): two ConfigResults and their test


def rerank_pairs(rows: list[Row], metric: str) -> list[Pair]:
    """Return (row off, row on, on minus off on metric) for every row with rerank whose row without it ran too."""
    off = {(row.config, row.mode): row for row in rows if not row.mode.rerank}
    pairs = []
    for on in rows:
        twin = off.get((on.config, replace(on.mode, rerank=False))) if on.mode.rerank else None
        if twin is not None:
            pairs.append((twin, on, paired_difference(twin.evaluation.values(metric), on.evaluation.values(metric))))
    return pairs


def verdict(test: PairedDifference) -> str:
    """Return "helps", "hurts" or "cannot tell" for a difference of on minus off (at the paired test's level)."""
    if test.tied:
        return "cannot tell"
    return "helps" if test.difference > 0 else "hurts"


def effect_words(pairs: list[Pair], metric: str) -> list[str]:
    """Return one line per pair, e.g. "400/50 hybrid-rrf: rerank helps: mrr@10 +0.050 (95 % interval ...)"."""
    return [f"{off.short}: rerank {verdict(test)}: {test.words(metric)}" + (f"; {few}" if (few := test.few_words())
                                                                          else "")
            for off, _, test in pairs]


def effect_json(pairs: list[Pair], metric: str) -> list[dict]:
    return [{"chunk_size": off.config.chunk_size, "overlap": off.config.overlap, "mode": off.mode.label,
             "by": metric, "verdict": verdict(test), "paired": test.to_json()} for off, _, test in pairs]


def effect_note(rerank: dict) -> str:
    """Return what the effect lines rest on: the reranker, its depth and scale, and what helps / hurts means."""
    return (f"Reranker {rerank['spec']}, the first {rerank['depth']} candidates; its scores are on its own scale "
            f"({rerank['scale']}). Helps / hurts: a paired test over the same questions finds a difference at the "
            "5 % level; cannot tell: it does not.")
