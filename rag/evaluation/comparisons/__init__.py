"""Two evaluations side by side: an A/B of two collections or modes, and the regression gate against a kept run.

compare  A/B of one query, or of a query set, under two settings   gate  worse than the baseline? JUnit XML
"""

from __future__ import annotations

from rag.evaluation.comparisons.compare import (
           EvaluationComparison,
           HitComparison,
           HitRow,
           QueryDelta,
           Side,
           compare_evaluations,
           compare_query,
           compare_query_set,
           document_difference,
           parse_side,
)
from rag.evaluation.comparisons.gate import GateVerdict, gate, junit_xml

__all__ = ["EvaluationComparison", "GateVerdict", "HitComparison", "HitRow", "QueryDelta", "Side",
           "compare_evaluations", "compare_query", "compare_query_set", "document_difference", "gate", "junit_xml",
           "parse_side"]
