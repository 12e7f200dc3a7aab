"""Experiments that are kept: every evaluation and sweep saved with its settings, metrics, intervals and question
outcomes (records.py) in the data folder's SQLite file (db.py), compared run against run with the paired test
(compare.py), written to a file and read back from it (export.py: a CI baseline kept in a repository), and a sweep
row made a collection's configuration (apply.py)."""

from __future__ import annotations

from rag.runs.apply import Applied, apply_configuration, collection_defaults
from rag.runs.compare import RunComparison, compare_runs, pair_outcomes, query_versions, version_warning
from rag.runs.compare import parse_side as parse_run_side
from rag.runs.db import RunLog, runs_path, runs_path_of
from rag.runs.export import export_run, read_export
from rag.runs.keep import keep_eval, keep_sweep, last_sweep
from rag.runs.records import Evaluated, outcomes_of, sweep_row

__all__ = ["Applied", "Evaluated", "RunComparison", "RunLog", "apply_configuration", "collection_defaults",
           "compare_runs", "export_run", "keep_eval", "keep_sweep", "last_sweep", "outcomes_of", "pair_outcomes",
           "parse_run_side", "query_versions", "read_export", "runs_path", "runs_path_of", "sweep_row",
           "version_warning"]
