"""Sweeps: grids of chunkings x search modes run over one query set, and what they give.

sweep  run_sweep, the grid and its inputs      sweep_collections  the collection of each chunking, reused
results  a sweep's rows and their standing   ahead  embedding the next chunking while this one searches
rerank_effect  rows with rerank on against off   sweep_funnel  the funnels of a sweep's rows
fusion_tuning  the hybrid weight, cross-validated   sweep_grid  the grid and its parsing
"""

from __future__ import annotations

from rag.evaluation.sweeps.fusion_tuning import tune_fusion
from rag.evaluation.sweeps.rerank_effect import effect_note, effect_words
from rag.evaluation.sweeps.results import ConfigResult, Standing, SweepConfig, SweepProgress, SweepResult, merge_sweeps
from rag.evaluation.sweeps.sweep import (
           STAGES,
           SWEEP_PREFIX,
           Sweep,
           collection_documents,
           collection_name,
           evaluate_collection,
           grid,
           load_documents,
           parse_sizes,
           prepare_queries,
           query_set_paths,
           run_sweep,
           sweep_groups,
)
from rag.evaluation.sweeps.sweep_collections import is_sweep_collection
from rag.evaluation.sweeps.sweep_funnel import WHY, funnel_k, missed_rows, summary_words, trace_row, trace_sweep
from rag.evaluation.sweeps.sweep_grid import parse_chunk_sizes, parse_grid, parse_overlaps

__all__ = ["ConfigResult", "STAGES", "SWEEP_PREFIX", "Standing", "Sweep", "SweepConfig", "SweepProgress",
           "SweepResult", "WHY", "collection_documents", "collection_name", "effect_note", "effect_words",
           "evaluate_collection", "funnel_k", "grid", "is_sweep_collection", "load_documents", "merge_sweeps",
           "missed_rows", "parse_chunk_sizes", "parse_grid", "parse_overlaps", "parse_sizes", "prepare_queries",
           "query_set_paths", "run_sweep", "summary_words", "sweep_groups", "trace_row", "trace_sweep", "tune_fusion"]
