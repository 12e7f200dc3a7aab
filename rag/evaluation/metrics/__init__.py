"""What an evaluation measures, and how sure it is: metrics per question, intervals, the paired test, modes.

metrics  span-judged hit, recall, precision, MRR, nDCG   intervals  bootstrap intervals of a metric
paired  the paired sign-flip test of two runs             modes  the search modes a metric is taken in
"""

from __future__ import annotations

from rag.evaluation.metrics.intervals import RESAMPLES
from rag.evaluation.metrics.metrics import (
           COVERAGE,
           DEFAULT_KS,
           METRICS,
           MOSTLY_UNJUDGED,
           Evaluation,
           QueryOutcome,
           covered_unit,
           evaluate,
           outcome_metrics,
           parse_ks,
           quality,
           query_metrics,
           unjudged_note,
)
from rag.evaluation.metrics.modes import (
           MODE_NAMES,
           SearchMode,
           collection_info,
           parse_mode,
           parse_modes,
           require_keywords,
           search_in_modes,
)
from rag.evaluation.metrics.paired import ALPHA, EXACT_UP_TO, PairedDifference, format_p, p_words, paired_difference

__all__ = ["ALPHA", "COVERAGE", "DEFAULT_KS", "EXACT_UP_TO", "Evaluation", "METRICS", "MODE_NAMES", "MOSTLY_UNJUDGED",
           "PairedDifference", "QueryOutcome", "RESAMPLES", "SearchMode", "collection_info", "covered_unit", "evaluate",
           "format_p", "outcome_metrics", "p_words", "paired_difference", "parse_ks", "parse_mode", "parse_modes",
           "quality", "query_metrics", "require_keywords", "search_in_modes", "unjudged_note"]
