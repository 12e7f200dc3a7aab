"""Judging hits: grades written into the query set, an LLM as judge, and how far it agrees with the analyst.

judging  judgments written into a query set file   llm_judge  an LLM grades hits
agreement  the LLM judge against the analyst (kappa)
merging  which file keeps a user's judgments; an older file merged into it
"""

from __future__ import annotations

from rag.evaluation.judges.agreement import agreement
from rag.evaluation.judges.judging import judgment_of, query_set_path, read_query_file, save_judgments, start_query_set
from rag.evaluation.judges.llm_judge import judge_with_llm
from rag.evaluation.judges.merging import judgments_path, merge_judgments

__all__ = ["agreement", "judge_with_llm", "judgment_of", "judgments_path", "merge_judgments", "query_set_path",
           "read_query_file", "save_judgments", "start_query_set"]
