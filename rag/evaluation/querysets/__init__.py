"""Query sets: the questions, their labels and judgments, their versions, the kept uploads, the SQuAD importer.

queries  query sets (JSONL/CSV) and their labels   judgments  grades and how metrics read them
versions  content hashes, counts, diffs             kept_sets  uploads kept under the data root
squad  SQuAD/XQuAD JSON -> documents and a query set   kept_documents  uploaded documents kept under the data root
saving  one writer at a time (a file lock), whole files, no leftovers of killed writers
"""

from __future__ import annotations

from rag.evaluation.querysets.judgments import GRADES, LLM_PREFIX, PERSON, Judgment, check_grade, hit_grade, judged_at_k
from rag.evaluation.querysets.kept_documents import (
           KeptDocument,
           forget_document,
           forget_documents,
           keep_documents,
           kept_documents,
)
from rag.evaluation.querysets.kept_sets import keep_query_set, kept_query_set, safe_name
from rag.evaluation.querysets.queries import Query, check_spans, load_query_set, resolve_labels, squeezed
from rag.evaluation.querysets.saving import saving, write_atomic
from rag.evaluation.querysets.squad import QUERIES_FILE, import_squad, squad_queries, sweep_input, write_import
from rag.evaluation.querysets.versions import (
           diff_query_sets,
           diff_versions,
           diff_words,
           now,
           query_set_hash,
           record_version,
           version_of,
)

__all__ = ["GRADES", "Judgment", "KeptDocument", "LLM_PREFIX", "PERSON", "QUERIES_FILE", "Query", "check_grade",
           "check_spans", "diff_query_sets", "diff_versions", "diff_words", "forget_document", "forget_documents",
           "hit_grade", "import_squad", "judged_at_k", "keep_documents", "keep_query_set", "kept_documents",
           "kept_query_set", "load_query_set", "now", "query_set_hash", "record_version", "resolve_labels", "safe_name",
           "saving", "squad_queries", "squeezed", "sweep_input", "version_of", "write_atomic", "write_import"]
