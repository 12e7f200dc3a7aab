"""Measuring retrieval: which chunk_size, overlap, top_k and search mode find the answers, in numbers.

queries  query sets (JSONL/CSV) and their labels     metrics  span-judged hit, recall, precision, MRR, nDCG
modes    search modes as a dimension                 sweep    grids of chunkings x modes; results: its rows
compare  A/B of two collections or modes             fusion_tuning  the hybrid weight, cross-validated
squad    SQuAD/XQuAD JSON -> documents and a query set
funnel   why a question was missed: its chunks' rank at every stage (rankings), lost_at, misses per stage
synthetic  query sets made from the documents: rewritten sentences (sentences, rewrite) or an LLM's questions
"""

from __future__ import annotations

from rag.evaluation.agreement import agreement
from rag.evaluation.compare import (
    EvaluationComparison,
    HitComparison,
    HitRow,
    Side,
    compare_query,
    compare_query_set,
    document_difference,
    parse_side,
)
from rag.evaluation.funnel import (
    RANKED,
    ChunkStages,
    Explanation,
    Funnel,
    FunnelSummary,
    evaluation_funnels,
    explain_chunk,
    summarize,
)
from rag.evaluation.funnel import STAGES as FUNNEL_STAGES
from rag.evaluation.fusion_tuning import tune_fusion
from rag.evaluation.gate import GateVerdict, gate, junit_xml
from rag.evaluation.judging import judgment_of, query_set_path, read_query_file, save_judgments, start_query_set
from rag.evaluation.judgments import GRADES, check_grade, hit_grade
from rag.evaluation.kept_sets import keep_query_set, kept_query_set, safe_name
from rag.evaluation.llm_judge import judge_with_llm
from rag.evaluation.metrics import DEFAULT_KS, METRICS, MOSTLY_UNJUDGED, Evaluation, QueryOutcome, parse_ks
from rag.evaluation.modes import MODE_NAMES, SearchMode, parse_mode, parse_modes
from rag.evaluation.paired import ALPHA, format_p
from rag.evaluation.queries import Query, load_query_set
from rag.evaluation.rankings import relevant_chunks
from rag.evaluation.rerank_effect import effect_note, effect_words
from rag.evaluation.results import ConfigResult, SweepConfig, SweepProgress, SweepResult
from rag.evaluation.squad import QUERIES_FILE, import_squad, squad_queries, sweep_input, write_import
from rag.evaluation.sweep import (
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
from rag.evaluation.sweep_collections import is_sweep_collection
from rag.evaluation.sweep_funnel import WHY, funnel_k, missed_rows, summary_words, trace_row, trace_sweep
from rag.evaluation.synthetic import DEFAULT_COUNT, SENTENCE_BIAS, SyntheticSet, make_queries
from rag.evaluation.versions import diff_query_sets, diff_words, version_of

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
