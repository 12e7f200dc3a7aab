"""Where a user's judgments are kept, one rule for every page, and the merge of an older file into that place.

The rule: the judgments of hits from a collection go into the judged query set of that collection,
queries/<collection>.jsonl under the data root, whether they were made on Search or on Evaluate; a sweep over
documents that are no collection (uploaded, SQuAD articles) keeps its own, queries/evaluate-<query set>.jsonl.
Evaluate once kept every sweep's judgments in the latter: merge_judgments copies them into the collection's file.
"""

from __future__ import annotations

from pathlib import Path

from rag.evaluation.judges.judging import query_set_path, read_query_file, save_judgments
from rag.evaluation.querysets import Judgment


def judgments_path(root: str | Path, collection: str | None, query_set: str = "") -> Path:
    """Return the query set file a user's judgments go into: the collection's (queries/<collection>.jsonl) when the
    hits come from one, else the query set's own (queries/evaluate-<stem of query_set>.jsonl)."""
    if collection:
        return query_set_path(root, collection)
    return query_set_path(root, f"evaluate-{Path(query_set).stem or 'sweep'}")


def merge_judgments(source: str | Path, target: str | Path) -> int:
    """Return how many judgments of the query set at source were written into the one at target: each that target
    lacks (same question, document, span and judge) or holds as an older judgment; source stays as it is. Running
    it again writes nothing (no new version)."""
    if not Path(source).is_file() or Path(source) == Path(target):
        return 0
    _, incoming = read_query_file(source)
    _, kept = read_query_file(target)
    held = {(q.text, *j.span, j.by): j for q in kept for j in q.judgments}
    written = 0
    for query in incoming:
        newer = [j for j in query.judgments if _newer(j, held.get((query.text, *j.span, j.by)))]
        for by in dict.fromkeys(j.by for j in newer):  # one version per judge, as each judge saved them
            mine = [j for j in newer if j.by == by]
            save_judgments(target, query.text, mine)
            written += len(mine)
    return written


def _newer(judgment: Judgment, held: Judgment | None) -> bool:
    return held is None or (judgment.grade != held.grade and judgment.at > held.at)
