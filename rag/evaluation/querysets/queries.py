"""Query sets: what each query should find, read from JSONL or CSV and checked against the documents.

A query set is JSONL or CSV, one query per line:

    {"query": "...", "document": "<title>", "answer": "<text>", "answer_start": <offset in the document's text>}

`answer` and `answer_start` are optional; `"documents": [...]` names several relevant documents (CSV: one
cell, titles separated by "|"). A label names a document by its title (the file name) or its id.
`"judgments": [...]` (JSONL) grades character spans of documents (rag.evaluation.querysets.judgments); a line with
judgments needs no document label.
"""

from __future__ import annotations

import csv
import functools
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath

from rag.errors import QuerySetError
from rag.evaluation.querysets.judgments import Judgment, effective, parse_judgments
from rag.words import counted, plural

CSV_LIST_SEPARATOR = "|"


@dataclass(frozen=True)
class Query:
    text: str
    documents: tuple[str, ...]  # labels: titles or ids, as written in the query set
    answer: str | None = None
    answer_start: int | None = None
    line: int = 0  # 1-based line of the query set (CSV: counting the header)
    document_ids: tuple[frozenset[str], ...] = ()  # per label, the ids it names (after resolve_labels)
    judgments: tuple[Judgment, ...] = ()  # graded spans (rag.evaluation.querysets.judgments), person's and LLM's

    @functools.cached_property
    def counted(self) -> tuple[Judgment, ...]:
        """Return the judgments that count (the person's win on a span)."""
        return tuple(effective(self.judgments))

    @functools.cached_property
    def relevant_judgments(self) -> tuple[Judgment, ...]:
        """Return the counted judgments of grade 1 or 2: relevant units after the document labels."""
        return tuple(j for j in self.counted if j.grade > 0)

    @property
    def units(self) -> int:
        """Return how many relevant units the query has: one per document label, one per relevant judgment."""
        return len(self.documents) + len(self.relevant_judgments)

    @property
    def gains(self) -> tuple[int, ...]:
        """Return each unit's gain for nDCG: 2 for a document label (relevant), a judgment's grade."""
        return (2,) * len(self.documents) + tuple(j.grade for j in self.relevant_judgments)

    @property
    def answer_end(self) -> int | None:
        """Return the offset just after the answer span, or None without a span."""
        if self.answer_start is None or self.answer is None:
            return None
        return self.answer_start + len(self.answer)


def load_query_set(data: bytes | str, filename: str = "queries.jsonl") -> list[Query]:
    """Return the queries of a JSONL or CSV query set; QuerySetError names the line and what is wrong."""
    name = PurePath(filename).name or "queries"
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise QuerySetError(f"{name} is not UTF-8 text (byte {error.start}). Save it as UTF-8.") from None
    if name.lower().endswith(".csv"):
        queries = [_query(row, name, line) for line, row in _csv_rows(data, name)]
    else:
        queries = [_query(_json_object(text, name, line), name, line)
                   for line, text in enumerate(data.splitlines(), 1) if text.strip()]
    if not queries:
        raise QuerySetError(f"{name} holds no queries. Write one JSON object per line, e.g. "
                            '{"query": "...", "document": "report.pdf"}.')
    return queries


def _json_object(text: str, name: str, line: int) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise QuerySetError(f"{name} line {line}: not valid JSON ({error.msg} at column {error.colno}). "
                            "Each line must be one JSON object.") from None
    except RecursionError:
        raise QuerySetError(f"{name} line {line}: nested too deeply to read. Each line must be one JSON object "
                            "of a question, its labels and judgments.") from None
    if not isinstance(value, dict):
        raise QuerySetError(f"{name} line {line}: expected a JSON object {{...}}, got {type(value).__name__}.")
    return value


def _csv_rows(text: str, name: str) -> list[tuple[int, dict]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "query" not in [f.strip() for f in reader.fieldnames]:
        raise QuerySetError(f"{name}: the first line must be a header with a 'query' column "
                            "(and document, answer, answer_start or documents).")
    rows = []
    for row in reader:
        clean = {k.strip(): (v or "").strip() for k, v in row.items() if k and isinstance(v, str | None)}
        if not any(clean.values()):
            continue
        if clean.get("documents"):
            clean["documents"] = [d.strip() for d in clean["documents"].split(CSV_LIST_SEPARATOR) if d.strip()]
        rows.append((reader.line_num, {k: v for k, v in clean.items() if v not in ("", [])}))
    return rows


def _query(row: dict, name: str, line: int) -> Query:
    """Return the Query of one parsed line, or raise QuerySetError saying what is wrong with it."""
    where = f"{name} line {line}"
    text = row.get("query")
    if not isinstance(text, str) or not text.strip():
        raise QuerySetError(f"{where}: 'query' is missing or empty. Give the question as text.")
    judgments = parse_judgments(row["judgments"], where) if "judgments" in row else ()
    documents = _labels(row, where, bool(judgments))
    answer = row.get("answer")
    if answer is not None and (not isinstance(answer, str) or not answer.strip()):
        raise QuerySetError(f"{where}: 'answer' must be non-empty text; leave it out if there is none.")
    start = row.get("answer_start")
    if start is not None:
        start = _offset(start, where)
        if answer is None:
            raise QuerySetError(f"{where}: 'answer_start' needs 'answer' too (the span is answer_start to "
                                "answer_start + len(answer)).")
        if len(documents) != 1:
            raise QuerySetError(f"{where}: 'answer_start' is an offset in one document's text, but the line "
                                f"names {len(documents)} documents. Name one, or leave out answer_start.")
    return Query(text.strip(), documents, answer, start, line, judgments=judgments)


def _labels(row: dict, where: str, judged: bool = False) -> tuple[str, ...]:
    labels = []
    if "document" in row:
        labels.append(row["document"])
    many = row.get("documents", [])
    if not isinstance(many, list):
        raise QuerySetError(f"{where}: 'documents' must be a list of titles, e.g. [\"a.pdf\", \"b.pdf\"].")
    labels.extend(many)
    if not labels and not judged:
        raise QuerySetError(f"{where}: no 'document' (or 'documents', or 'judgments'): say which document should "
                            "be found.")
    if not all(isinstance(label, str) and label.strip() for label in labels):
        raise QuerySetError(f"{where}: a document must be named by its title (text), e.g. \"report.pdf\".")
    return tuple(dict.fromkeys(label.strip() for label in labels))


def _offset(value: object, where: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise QuerySetError(f"{where}: 'answer_start' must be a whole number >= 0 (a character offset), "
                            f"got {value!r}.")
    return value


def resolve_labels(queries: Sequence[Query], documents: Iterable[tuple[str, str]], where: str) -> list[Query]:
    """Return queries with each label resolved to document ids among documents ((id, title) pairs).

    A label matches a title or an id. QuerySetError lists the labels found nowhere, with their lines.
    """
    ids_by_label: dict[str, set[str]] = {}
    for document_id, title in documents:
        ids_by_label.setdefault(title, set()).add(document_id)
        ids_by_label.setdefault(document_id, set()).add(document_id)
    missing: dict[str, list[int]] = {}
    for query in queries:
        for label in query.documents:
            if label not in ids_by_label:
                missing.setdefault(label, []).append(query.line)
    if missing:
        shown = "; ".join(f"'{label}' ({plural(len(lines), 'line')} {_lines(lines)})"
                          for label, lines in list(missing.items())[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        titles = sorted({t for t, ids in ids_by_label.items() if t not in ids}) or ["nothing"]
        raise QuerySetError(
            f"{counted(len(missing), 'document')} named in the query set {plural(len(missing), 'is', 'are')} "
            f"not in {where}: {shown}{more}. "
            f"It holds: {', '.join(titles[:10])}{' …' if len(titles) > 10 else ''}. "
            "Add those documents, or fix the titles in the query set."
        )
    return [replace(q, document_ids=tuple(frozenset(ids_by_label[d]) for d in q.documents)) for q in queries]


def _lines(lines: list[int]) -> str:
    return ", ".join(map(str, lines[:5])) + (" …" if len(lines) > 5 else "")


def check_spans(queries: Sequence[Query], texts: dict[str, str]) -> None:
    """Raise QuerySetError when an answer span does not hold its answer in texts (document id -> text)."""
    wrong = []
    for query in queries:
        if query.answer_end is None or not query.document_ids:
            continue
        for document_id in query.document_ids[0]:
            found = texts.get(document_id)
            if found is not None and squeezed(found[query.answer_start : query.answer_end]) != squeezed(query.answer):
                wrong.append(f"line {query.line}: '{query.documents[0]}'[{query.answer_start}:{query.answer_end}] "
                             f"is {found[query.answer_start : query.answer_end][:40]!r}, not {query.answer[:40]!r}")
    if wrong:
        one = len(wrong) == 1
        raise QuerySetError(f"{counted(len(wrong), 'answer span')} {'does' if one else 'do'} not point at "
                            f"{'its' if one else 'their'} answer: {'; '.join(wrong[:3])}"
                            f"{' …' if len(wrong) > 3 else ''}. answer_start must be the offset in the document's "
                            "text as RAG Lab reads it; fix the offsets or leave answer_start out.")


# ---- relevance and metrics ------------------------------------------------------------------------------


def squeezed(text: str) -> str:
    """Return text with every run of whitespace as one space: answers match across line breaks."""
    return " ".join(text.split())
