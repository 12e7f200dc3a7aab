"""Experiments that are kept: every evaluation and sweep saved with its settings, metrics, intervals and question
outcomes (records.py) in the data folder's SQLite file (db.py), compared run against run with the paired test
(compare.py), and a sweep row made a collection's configuration (apply.py)."""

from rag.runs.db import RunLog, runs_path, runs_path_of

__all__ = ["RunLog", "runs_path", "runs_path_of"]
