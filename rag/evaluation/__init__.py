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

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {  # module: the names it gives the face ("FACE_NAME=its_name" where they differ)
    "rag.evaluation.comparisons.compare": ("EvaluationComparison", "HitComparison", "HitRow", "Side", "compare_query",
                                           "compare_query_set", "document_difference", "parse_side"),
    "rag.evaluation.comparisons.gate": ("GateVerdict", "gate", "junit_xml"),
    "rag.evaluation.funnel.rankings": ("Rankings", "relevant_chunks"),
    "rag.evaluation.funnel.stages": ("FUNNEL_STAGES=STAGES", "RANKED", "ChunkStages", "Explanation", "Funnel",
                                     "FunnelSummary", "evaluation_funnels", "explain_chunk", "query_rankings",
                                     "summarize"),
    "rag.evaluation.funnel.verdicts": ("absent_note", "verdict"),
    "rag.evaluation.judges.agreement": ("agreement",),
    "rag.evaluation.judges.judging": ("judgment_of", "query_set_path", "read_query_file", "save_judgments",
                                      "start_query_set"),
    "rag.evaluation.judges.llm_judge": ("judge_with_llm",),
    "rag.evaluation.judges.merging": ("judgments_path", "merge_judgments"),
    "rag.evaluation.metrics.metrics": ("DEFAULT_KS", "METRICS", "MOSTLY_UNJUDGED", "Evaluation", "QueryOutcome",
                                       "parse_ks", "unjudged_note"),
    "rag.evaluation.metrics.modes": ("MODE_NAMES", "SearchMode", "parse_mode", "parse_modes"),
    "rag.evaluation.metrics.paired": ("ALPHA", "format_p"),
    "rag.evaluation.querysets.judgments": ("GRADES", "check_grade", "hit_grade"),
    "rag.evaluation.querysets.kept_documents": ("KeptDocument", "forget_document", "forget_documents",
                                                "keep_documents", "kept_documents"),
    "rag.evaluation.querysets.kept_sets": ("keep_query_set", "kept_query_set", "safe_name"),
    "rag.evaluation.querysets.queries": ("Query", "load_query_set"),
    "rag.evaluation.querysets.squad": ("QUERIES_FILE", "import_squad", "squad_queries", "sweep_input", "write_import"),
    "rag.evaluation.querysets.versions": ("diff_query_sets", "diff_words", "version_of"),
    "rag.evaluation.sweeps.fusion_tuning": ("tune_fusion",),
    "rag.evaluation.sweeps.rerank_effect": ("effect_note", "effect_words"),
    "rag.evaluation.sweeps.results": ("ConfigResult", "SweepConfig", "SweepProgress", "SweepResult", "merge_sweeps"),
    "rag.evaluation.sweeps.sweep": ("SWEEP_PREFIX", "Sweep", "collection_documents", "evaluate_collection",
                                    "load_documents", "query_set_paths", "run_sweep", "sweep_groups"),
    "rag.evaluation.sweeps.sweep_collections": ("is_sweep_collection",),
    "rag.evaluation.sweeps.sweep_grid": ("parse_chunk_sizes", "parse_grid", "parse_overlaps"),
    "rag.evaluation.sweeps.sweep_funnel": ("WHY", "funnel_k", "missed_rows", "summary_words", "trace_row",
                                           "trace_sweep"),
    "rag.evaluation.synthetic.sets": ("DEFAULT_COUNT", "SENTENCE_BIAS", "SyntheticSet", "make_queries"),
}
_SOURCE = {face.partition("=")[0]: (module, face.partition("=")[2] or face)
           for module, names in _EXPORTS.items() for face in names}
__all__ = sorted(_SOURCE)


def __getattr__(name: str) -> Any:
    """Return a name of the face, importing its room's module on first use (so one room loads without the rest)."""
    if name not in _SOURCE:
        raise AttributeError(f"module 'rag.evaluation' has no attribute {name!r}")
    module, attribute = _SOURCE[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and editors see; at run time the names load on first use
    from rag.evaluation.comparisons import (
        EvaluationComparison,
        GateVerdict,
        HitComparison,
        HitRow,
        Side,
        compare_query,
        compare_query_set,
        document_difference,
        gate,
        junit_xml,
        parse_side,
    )
    from rag.evaluation.funnel import (
        RANKED,
        ChunkStages,
        Explanation,
        Funnel,
        FunnelSummary,
        Rankings,
        absent_note,
        evaluation_funnels,
        explain_chunk,
        query_rankings,
        relevant_chunks,
        summarize,
        verdict,
    )
    from rag.evaluation.funnel import STAGES as FUNNEL_STAGES
    from rag.evaluation.judges import (
        agreement,
        judge_with_llm,
        judgment_of,
        judgments_path,
        merge_judgments,
        query_set_path,
        read_query_file,
        save_judgments,
        start_query_set,
    )
    from rag.evaluation.metrics import (
        ALPHA,
        DEFAULT_KS,
        METRICS,
        MODE_NAMES,
        MOSTLY_UNJUDGED,
        Evaluation,
        QueryOutcome,
        SearchMode,
        format_p,
        parse_ks,
        parse_mode,
        parse_modes,
        unjudged_note,
    )
    from rag.evaluation.querysets import (
        GRADES,
        QUERIES_FILE,
        KeptDocument,
        Query,
        check_grade,
        diff_query_sets,
        diff_words,
        forget_document,
        forget_documents,
        hit_grade,
        import_squad,
        keep_documents,
        keep_query_set,
        kept_documents,
        kept_query_set,
        load_query_set,
        safe_name,
        squad_queries,
        sweep_input,
        version_of,
        write_import,
    )
    from rag.evaluation.sweeps import (
        SWEEP_PREFIX,
        WHY,
        ConfigResult,
        Sweep,
        SweepConfig,
        SweepProgress,
        SweepResult,
        collection_documents,
        effect_note,
        effect_words,
        evaluate_collection,
        funnel_k,
        is_sweep_collection,
        load_documents,
        merge_sweeps,
        missed_rows,
        parse_chunk_sizes,
        parse_grid,
        parse_overlaps,
        query_set_paths,
        run_sweep,
        summary_words,
        sweep_groups,
        trace_row,
        trace_sweep,
        tune_fusion,
    )
    from rag.evaluation.synthetic import DEFAULT_COUNT, SENTENCE_BIAS, SyntheticSet, make_queries
