"""Measuring retrieval: which chunk_size, overlap, top_k and search mode find the answers, in numbers.

The rooms, each a package (their modules are private: callers use the names below):

querysets  query sets, their labels and judgments, versions, kept uploads, SQuAD import
metrics    span-judged hit, recall, precision, MRR, nDCG; intervals, the paired test; search modes
funnel     why a question was missed: its chunks' rank at every stage, lost_at, misses per stage
sweeps     grids of chunkings x modes, their rows, rerank on against off, each row's funnel, fusion tuning
comparisons  A/B of two collections or modes; the regression gate
judges     judgments written into a query set, an LLM as judge, its agreement with the analyst
synthetic  query sets made from the documents: rewritten sentences or an LLM's questions

Lower rooms never import higher ones: querysets < metrics < funnel < sweeps < comparisons, judges, synthetic.
"""

from __future__ import annotations

from rag.evaluation.comparisons.compare import (
    EvaluationComparison,
    HitComparison,
    HitRow,
    Side,
    compare_query,
    compare_query_set,
    document_difference,
    parse_side,
)
from rag.evaluation.comparisons.gate import GateVerdict, gate, junit_xml
from rag.evaluation.funnel.rankings import relevant_chunks
from rag.evaluation.funnel.stages import (
    RANKED,
    ChunkStages,
    Explanation,
    Funnel,
    FunnelSummary,
    evaluation_funnels,
    explain_chunk,
    summarize,
)
from rag.evaluation.funnel.stages import STAGES as FUNNEL_STAGES
from rag.evaluation.judges.agreement import agreement
from rag.evaluation.judges.judging import judgment_of, query_set_path, read_query_file, save_judgments, start_query_set
from rag.evaluation.judges.llm_judge import judge_with_llm
from rag.evaluation.metrics.metrics import DEFAULT_KS, METRICS, MOSTLY_UNJUDGED, Evaluation, QueryOutcome, parse_ks
from rag.evaluation.metrics.modes import MODE_NAMES, SearchMode, parse_mode, parse_modes
from rag.evaluation.metrics.paired import ALPHA, format_p
from rag.evaluation.querysets.judgments import GRADES, check_grade, hit_grade
from rag.evaluation.querysets.kept_sets import keep_query_set, kept_query_set, safe_name
from rag.evaluation.querysets.queries import Query, load_query_set
from rag.evaluation.querysets.squad import QUERIES_FILE, import_squad, squad_queries, sweep_input, write_import
from rag.evaluation.querysets.versions import diff_query_sets, diff_words, version_of
from rag.evaluation.sweeps.fusion_tuning import tune_fusion
from rag.evaluation.sweeps.rerank_effect import effect_note, effect_words
from rag.evaluation.sweeps.results import ConfigResult, SweepConfig, SweepProgress, SweepResult
from rag.evaluation.sweeps.sweep import (
    SWEEP_PREFIX,
    collection_documents,
    evaluate_collection,
    load_documents,
    parse_chunk_sizes,
    parse_grid,
    parse_overlaps,
    query_set_paths,
    run_sweep,
    sweep_groups,
)
from rag.evaluation.sweeps.sweep_collections import is_sweep_collection
from rag.evaluation.sweeps.sweep_funnel import WHY, funnel_k, missed_rows, summary_words, trace_row, trace_sweep
from rag.evaluation.synthetic.sets import DEFAULT_COUNT, SENTENCE_BIAS, SyntheticSet, make_queries

__all__ = ["ALPHA", "ChunkStages", "ConfigResult", "DEFAULT_COUNT", "DEFAULT_KS", "Evaluation", "EvaluationComparison",
           "Explanation", "FUNNEL_STAGES", "Funnel", "FunnelSummary", "GRADES", "GateVerdict", "HitComparison",
           "HitRow", "METRICS", "MODE_NAMES", "MOSTLY_UNJUDGED", "QUERIES_FILE", "Query", "QueryOutcome", "RANKED",
           "SENTENCE_BIAS", "SWEEP_PREFIX", "SearchMode", "Side", "SweepConfig", "SweepProgress", "SweepResult",
           "SyntheticSet", "WHY", "agreement", "check_grade", "collection_documents", "compare_query",
           "compare_query_set", "diff_query_sets", "diff_words", "document_difference", "effect_note", "effect_words",
           "evaluate_collection", "evaluation_funnels", "explain_chunk", "format_p", "funnel_k", "gate", "hit_grade",
           "import_squad", "is_sweep_collection", "judge_with_llm", "judgment_of", "junit_xml", "keep_query_set",
           "kept_query_set", "load_documents", "load_query_set", "make_queries", "missed_rows", "parse_chunk_sizes",
           "parse_grid", "parse_ks", "parse_mode", "parse_modes", "parse_overlaps", "parse_side", "query_set_path",
           "query_set_paths", "read_query_file", "relevant_chunks", "run_sweep", "safe_name", "save_judgments",
           "squad_queries", "start_query_set", "summarize", "summary_words", "sweep_groups", "sweep_input", "trace_row",
           "trace_sweep", "tune_fusion", "version_of", "write_import"]
