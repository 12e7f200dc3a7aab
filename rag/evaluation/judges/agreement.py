"""How far an LLM judge agrees with the analyst: exact agreement and Cohen's kappa on the hits both judged.

A pair is an LLM judgment and the person's judgments of the same question that apply to the same text (same
document, overlapping spans: the span rule of rag.evaluation.querysets.judgments); the person's grade is the highest
of those. Exact agreement is the share of pairs with the same grade; Cohen's kappa corrects it for the
agreement expected by chance from each judge's own grade frequencies: (p_o - p_e) / (1 - p_e). Where p_e is
1 (both judges gave one and the same grade throughout) kappa is undefined: null.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rag.evaluation.querysets import GRADES, Query


@dataclass(frozen=True)
class Agreement:
    shared: int  # pairs: hits both the person and an LLM judged
    exact: float | None  # share of pairs with the same grade; None without pairs
    kappa: float | None  # Cohen's kappa; None without pairs or when undefined
    models: tuple[str, ...]  # the LLM judges ("llm:<model>") of the pairs

    def to_json(self) -> dict:
        return {"shared": self.shared, "exact_agreement": _round(self.exact), "kappa": _round(self.kappa),
                "models": list(self.models)}

    def words(self) -> str:
        """Return the agreement in one line."""
        if not self.shared:
            return "No hit is judged by both you and an LLM yet: agreement unknown."
        kappa = "undefined (one grade throughout)" if self.kappa is None else f"{self.kappa:.2f}"
        return (f"LLM judge ({', '.join(self.models)}) against you on {self.shared} shared hits: exact agreement "
                f"{self.exact:.0%}, Cohen's kappa {kappa}.")


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def grade_pairs(queries: Sequence[Query]) -> list[tuple[int, int, str]]:
    """Return (person's grade, LLM's grade, LLM judge) for every LLM judgment the person also judged."""
    pairs = []
    for query in queries:
        people = [j for j in query.judgments if j.by_person]
        for judgment in query.judgments:
            if judgment.by_person:
                continue
            overlapping = [p.grade for p in people if p.document == judgment.document
                           and p.start < judgment.end and p.end > judgment.start]
            if overlapping:
                pairs.append((max(overlapping), judgment.grade, judgment.by))
    return pairs


def cohen_kappa(pairs: Sequence[tuple[int, int]]) -> float | None:
    """Return Cohen's kappa of (rater a, rater b) grade pairs; None when undefined (no pairs, or p_e = 1)."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[g] * second[g] for g in GRADES) / (n * n)
    return None if expected >= 1.0 else (observed - expected) / (1.0 - expected)


def agreement(queries: Sequence[Query]) -> Agreement:
    """Return the LLM judges' agreement with the person over a query set."""
    pairs = grade_pairs(queries)
    if not pairs:
        return Agreement(0, None, None, ())
    grades = [(a, b) for a, b, _ in pairs]
    return Agreement(len(pairs), sum(a == b for a, b in grades) / len(grades), cohen_kappa(grades),
                     tuple(sorted({m for _, _, m in pairs})))
