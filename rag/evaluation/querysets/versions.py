"""Query-set versions: a content hash, counts of questions and judgments, when and by whom; and diffs.

Each saved change of a query set (`rag judge`, the Search page, the LLM judge) appends a version to the
log beside it, FILE.versions.jsonl: {"version", "hash", "questions", "judgments", "at", "by"}, written before the
file under the query set's lock (rag.evaluation.querysets.saving), so numbers are unique. A query set
edited by hand simply has a hash the log does not know (version null). Runs keep the version they used,
with one short digest per question, so two runs can say which questions were added or removed and whose
labels or judgments changed, without the files.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from rag import settings
from rag.errors import QuerySetError
from rag.evaluation.querysets.queries import Query
from rag.words import counted


def _judgment_key(judgment) -> list:
    return [judgment.document, judgment.start, judgment.end, judgment.grade, judgment.by]


def _canonical(query: Query) -> list:
    item = [query.text, list(query.documents), query.answer, query.answer_start]
    if query.judgments:  # only then: the hash of a set without judgments stays what it was
        item.append(sorted(_judgment_key(j) for j in query.judgments))
    return item


def query_set_hash(queries: Sequence[Query]) -> str:
    """Return the sha256 of a query set's content (texts, labels, answers, spans, judgments), however it was read."""
    canonical = [_canonical(q) for q in queries]
    return hashlib.sha256(json.dumps(canonical, ensure_ascii=False).encode("utf-8")).hexdigest()


def question_digests(queries: Sequence[Query]) -> dict[str, str]:
    """Return each question's short digest of its labels and judgments, keyed by its text."""
    digests: dict[str, list] = {}
    for query in queries:
        digests.setdefault(query.text, []).append(_canonical(query)[1:])
    return {text: hashlib.sha256(json.dumps(items, ensure_ascii=False).encode()).hexdigest()[:12]
            for text, items in digests.items()}


def who() -> str:
    """Return who saves a change: $RAG_USER, else the login name."""
    try:
        return settings.load().user or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def log_path(path: str | Path) -> Path:
    """Return the version log beside a query set file (beside a symlink's target: the log goes with the content)."""
    path = Path(os.path.realpath(path))
    return path.with_name(path.name + ".versions.jsonl")


def read_log(path: str | Path) -> list[dict]:
    """Return the versions kept beside a query set, oldest first ([] without a log; unreadable lines skipped)."""
    try:
        lines = log_path(path).read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return []
    versions = []
    for line in lines:
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(entry, dict) and "hash" in entry:
            versions.append(entry)
    return versions


def version_of(queries: Sequence[Query], path: str | Path | None = None) -> dict:
    """Return the version of a query set: {"version", "hash", "questions", "judgments", "at", "by", "items"};
    version, at and by from the log beside path when it knows the hash, else None."""
    digest = query_set_hash(queries)
    known = next((v for v in reversed(read_log(path)) if v["hash"] == digest), {}) if path else {}
    return {"version": known.get("version"), "hash": digest, "questions": len(queries),
            "judgments": sum(len(q.judgments) for q in queries), "at": known.get("at"), "by": known.get("by"),
            "items": question_digests(queries)}


def record_version(path: str | Path, queries: Sequence[Query], by: str | None = None) -> dict:
    """Append the version of the query set about to be saved at path to its log; return it (without items).

    Call it holding the query set's lock (rag.evaluation.querysets.saving), before the file is replaced: the entry
    is on disk first, so a saved file always has its version (a writer killed in between leaves an entry no file
    has, which no reader matches). The number is one above the highest in the log, so numbers never repeat."""
    versions = read_log(path)
    numbers = [v["version"] for v in versions if isinstance(v.get("version"), int)]
    entry = {"version": max(numbers, default=0) + 1, "hash": query_set_hash(queries), "questions": len(queries),
             "judgments": sum(len(q.judgments) for q in queries), "at": now(), "by": by or who()}
    if versions and versions[-1]["hash"] == entry["hash"]:
        return versions[-1]
    line = json.dumps(entry).encode("ascii") + b"\n"  # ASCII: any user name round-trips, even undecodable bytes
    try:
        with open(log_path(path), "ab+") as log:
            if not _ends_a_line(log):  # a killed writer's half line: end it, so it stays one unreadable
                line = b"\n" + line  # line instead of swallowing this entry
            log.write(line)
            log.flush()
            os.fsync(log.fileno())
    except OSError as error:
        raise QuerySetError(f"Cannot write {log_path(path)}: {error.strerror or error}. The query set is "
                            "unchanged.") from None
    return entry


def _ends_a_line(log) -> bool:
    size = log.seek(0, os.SEEK_END)
    if not size:
        return True
    log.seek(size - 1)
    return log.read(1) == b"\n"


def diff_versions(a: dict, b: dict) -> dict:
    """Return what changed from version a to b (as version_of gives them): questions added and removed, and
    the questions whose labels or judgments changed."""
    items_a, items_b = a.get("items") or {}, b.get("items") or {}
    return {"same": a.get("hash") == b.get("hash"),
            "questions_added": [q for q in items_b if q not in items_a],
            "questions_removed": [q for q in items_a if q not in items_b],
            "questions_changed": [q for q in items_b if q in items_a and items_a[q] != items_b[q]]}


def diff_query_sets(a: Sequence[Query], b: Sequence[Query]) -> dict:
    """Return diff_versions of two query sets plus the judgments added, removed and regraded (by span and by)."""
    def judgments(queries):
        return {(q.text, j.document, j.start, j.end, j.by): j.grade for q in queries for j in q.judgments}

    ja, jb = judgments(a), judgments(b)
    return diff_versions(version_of(a), version_of(b)) | {
        "judgments_added": sum(1 for key in jb if key not in ja),
        "judgments_removed": sum(1 for key in ja if key not in jb),
        "judgments_changed": sum(1 for key in jb if key in ja and ja[key] != jb[key])}


def diff_words(diff: dict) -> str:
    """Return a diff in one line, e.g. "2 questions added, 1 removed, 3 with changed labels or judgments"."""
    if diff["same"]:
        return "the same query set"
    parts = [f"{counted(len(diff['questions_added']), 'question')} added", f"{len(diff['questions_removed'])} removed",
             f"{len(diff['questions_changed'])} with changed labels or judgments"]
    if "judgments_added" in diff:
        parts.append(f"judgments: {diff['judgments_added']} added, {diff['judgments_removed']} removed, "
                     f"{diff['judgments_changed']} regraded")
    return ", ".join(parts)
