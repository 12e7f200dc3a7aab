"""Judgments written into a query set file: a hit and a grade become a judgment on the question's line.

The file stays a JSONL query set: lines that are not changed are kept byte for byte, the judged question's
line gets its "judgments" (a new question is a new line). A judgment of the same span by the same judge
replaces the old one (a person changing their mind); a person's judgment beside an LLM's keeps both (the
person's counts, the pair measures agreement). Writers of one file take turns under its lock, and writes are
atomic (a temporary file, then os.replace), so concurrent saves lose nothing and a killed writer leaves the old
file whole; each saved change is a version (rag.evaluation.querysets.versions, rag.evaluation.querysets.saving).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.errors import QuerySetError
from rag.evaluation.querysets import (
    PERSON,
    Judgment,
    Query,
    check_grade,
    load_query_set,
    now,
    record_version,
    saving,
    write_atomic,
)
from rag.retrieval import Hit


@dataclass(frozen=True)
class Saved:
    question: str
    added: int  # judgments new to the question
    replaced: int  # judgments that replaced one of the same span and judge
    new_question: bool
    version: dict

    def to_json(self) -> dict:
        return {"question": self.question, "added": self.added, "replaced": self.replaced,
                "new_question": self.new_question, "version": self.version}


def judgment_of(hit: Hit, grade: object, evidence: str | None = None, by: str = PERSON) -> Judgment:
    """Return the judgment of hit: its document and the span of evidence inside it (the whole chunk without
    evidence); QuerySetError when the grade is not 0-2 or the evidence is not in the chunk."""
    grade = check_grade(grade)
    if hit.start is None or hit.end is None:
        raise QuerySetError(f"Chunk '{hit.chunk_id}' has no character offsets (a collection RAG Lab did not "
                            "write); judgments need them. Ingest the documents with RAG Lab.")
    start, end = hit.start, hit.end
    evidence = (evidence or "").strip() or None
    if evidence:
        found = _find(hit.content, evidence)
        if found is None:
            raise QuerySetError(f"The evidence {_short(evidence)} is not inside chunk '{hit.chunk_id}' of "
                                f"'{hit.document_title}'. Select text of that chunk, or leave --evidence out.")
        start, end = hit.start + found[0], hit.start + found[1]
    return Judgment(hit.document_title, start, end, grade, by, hit.document_id, evidence, hit.chunk_id, now())


def _find(content: str, evidence: str) -> tuple[int, int] | None:
    at = content.find(evidence)
    if at >= 0:
        return at, at + len(evidence)
    pattern = r"\s+".join(re.escape(word) for word in evidence.split())  # across line breaks
    match = re.search(pattern, content)
    return (match.start(), match.end()) if match else None


def _short(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:39] + "…")


def read_query_file(path: str | Path) -> tuple[list[str], list[Query]]:
    """Return the lines and the queries of a JSONL query set ([], [] when the file does not exist yet);
    QuerySetError for a CSV file or a malformed line (named)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        raise QuerySetError(f"{path.name} is CSV; judgments are kept in JSONL query sets. Give a .jsonl file "
                            "(a new one is created).")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], []
    except OSError as error:
        raise QuerySetError(f"Cannot read {path}: {error.strerror or error}.") from None
    if not data.strip():
        return [], []
    queries = load_query_set(data, path.name)
    return data.decode("utf-8-sig").splitlines(), queries


def save_judgments(path: str | Path, question: str, judgments: Sequence[Judgment], by: str | None = None) -> Saved:
    """Add judgments to question's line of the query set at path (a new line for a new question), atomically,
    and record the new version; return what changed. Writers of one file take turns (its lock), so concurrent
    saves, from threads or processes, lose nothing."""
    question = _question(question)
    with saving(path) as real:
        lines, queries = read_query_file(path)
        match = next((q for q in queries if q.text == question), None)
        index = None if match is None else match.line - 1
        row = {"query": question} if index is None else json.loads(lines[index])
        added, replaced = _merge(row, judgments)
        text = json.dumps(row, ensure_ascii=False)
        lines = [*lines, text] if index is None else [*lines[:index], text, *lines[index + 1:]]
        content = "\n".join(lines) + "\n"
        saved = load_query_set(content, Path(path).name)  # never write what could not be read back
        version = record_version(real, saved, by or (judgments[0].by if judgments and not judgments[0].by_person
                                                     else None))  # the entry first: no file without its version
        write_atomic(real, content)
    return Saved(question, added, replaced, match is None, version)


def _question(text: str) -> str:
    question = text.strip()
    if not question:
        raise QuerySetError("The question is empty; give it as text.")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError as error:
        raise QuerySetError(f"The question holds bytes that are not UTF-8 text (character {error.start + 1}): "
                            "give it as UTF-8 text.") from None
    return question


def _merge(row: dict, judgments: Sequence[Judgment]) -> tuple[int, int]:
    """Put judgments into a query set line's "judgments" (one of the same span and judge is replaced); return how
    many were added and how many replaced."""
    kept = list(row.get("judgments") or [])
    added = replaced = 0
    for judgment in judgments:
        entry = judgment.to_json()
        same = next((i for i, old in enumerate(kept) if (old.get("document"), old.get("start"), old.get("end"),
                                                         old.get("by", PERSON)) ==
                     (judgment.document, judgment.start, judgment.end, judgment.by)), None)
        if same is None:
            kept.append(entry)
            added += 1
        else:
            kept[same] = entry
            replaced += 1
    row["judgments"] = kept
    return added, replaced


def query_set_path(root: str | Path, name: str) -> Path:
    """Return where the app keeps a judged query set named name (a collection, a query set's stem): under the data
    root, in queries/, as JSONL; unsafe characters of name become "-"."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip(".-") or "queries"
    return Path(root) / "queries" / f"{safe}.jsonl"


def query_line(query: Query) -> dict:
    """Return a query as a JSONL query set line (the labels, answer span and judgments it has)."""
    line: dict = {"query": query.text}
    if len(query.documents) == 1:
        line["document"] = query.documents[0]
    elif query.documents:
        line["documents"] = list(query.documents)
    if query.answer is not None:
        line["answer"] = query.answer
    if query.answer_start is not None:
        line["answer_start"] = query.answer_start
    if query.judgments:
        line["judgments"] = [j.to_json() for j in query.judgments]
    return line


def start_query_set(path: str | Path, queries: Sequence[Query]) -> None:
    """Write queries as a new JSONL query set at path (atomically), unless a file is there already."""
    with saving(path) as real:
        if real.exists():
            return
        content = "".join(json.dumps(query_line(q), ensure_ascii=False) + "\n" for q in queries)
        record_version(real, queries)
        write_atomic(real, content)
