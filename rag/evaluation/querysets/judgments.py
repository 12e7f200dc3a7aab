"""Judgments: graded relevance of a document's character span for one question, mapped to any chunking.

A query set line may carry `"judgments"`, each naming a document and the character span of its evidence:

    {"query": "...", "judgments": [{"document": "a.pdf", "document_id": "…", "start": 120, "end": 480,
      "grade": 2, "by": "person", "evidence": "…" | null, "chunk_id": "…", "at": "2026-…"}]}

grade: 2 relevant, 1 partly, 0 not relevant (kept: it counts as judged, and for the LLM judge's agreement).
by: "person" (the analyst) or "llm:<model>" (rag judge --llm). start/end: offsets in the document's text as
RAG Lab reads it (the evidence's, or the whole chunk's when no evidence was selected); chunk_id only says
where it was judged, it is never used to match.

The span rule (any chunk size, overlap or re-chunked collection): a judgment applies to a hit when the hit
comes from its document (title or id) and the hit's [start, end) overlaps the judgment's [start, end). For
one span (document, start, end) the person's judgment wins over an LLM's. A hit's grade is the highest grade
of the judgments that apply to it; a hit no judgment applies to is unjudged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.errors import QuerySetError

GRADES = {0: "not relevant", 1: "partly", 2: "relevant"}
PERSON = "person"
LLM_PREFIX = "llm:"


@dataclass(frozen=True)
class Judgment:
    document: str  # title, as the hit's document_title
    start: int
    end: int
    grade: int
    by: str = PERSON
    document_id: str = ""
    evidence: str | None = None
    chunk_id: str = ""
    at: str = ""

    @property
    def span(self) -> tuple[str, int, int]:
        return (self.document, self.start, self.end)

    @property
    def by_person(self) -> bool:
        return self.by == PERSON

    def applies_to(self, hit) -> bool:
        """Return whether this judgment grades hit: same document, overlapping character spans."""
        if hit.start is None or hit.end is None:
            return False
        same = hit.document_title == self.document or (self.document_id and hit.document_id == self.document_id)
        return bool(same) and hit.start < self.end and hit.end > self.start

    def to_json(self) -> dict:
        data = {"document": self.document, "document_id": self.document_id, "start": self.start, "end": self.end,
                "grade": self.grade, "by": self.by, "evidence": self.evidence, "chunk_id": self.chunk_id,
                "at": self.at}
        return {k: v for k, v in data.items() if v not in ("", None) or k == "evidence"}


def check_grade(value: object, where: str = "") -> int:
    """Return value as a grade 0, 1 or 2; QuerySetError otherwise (one line)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value not in GRADES:
        raise QuerySetError(f"{where}grade must be 0 (not relevant), 1 (partly) or 2 (relevant), got {value!r}.")
    return value


def parse_judgments(value: object, where: str) -> tuple[Judgment, ...]:
    """Return the judgments of a query set line's "judgments" list; QuerySetError names what is wrong."""
    if not isinstance(value, list):
        raise QuerySetError(f"{where}: 'judgments' must be a list of objects with document, start, end, grade.")
    judgments = []
    for number, item in enumerate(value, 1):
        here = f"{where}, judgment {number}"
        if not isinstance(item, dict):
            raise QuerySetError(f"{here}: expected an object {{\"document\", \"start\", \"end\", \"grade\"}}.")
        document = item.get("document")
        if not isinstance(document, str) or not document.strip():
            raise QuerySetError(f"{here}: 'document' must name the document by its title.")
        start, end = item.get("start"), item.get("end")
        if (not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end))
                or start < 0 or end <= start):
            raise QuerySetError(f"{here}: 'start' and 'end' must be character offsets with 0 <= start < end, "
                                f"got {start!r} and {end!r}.")
        grade = check_grade(item.get("grade"), f"{here}: ")
        by = item.get("by", PERSON)
        if not isinstance(by, str) or not (by == PERSON or (by.startswith(LLM_PREFIX) and len(by) > 4)):
            raise QuerySetError(f"{here}: 'by' must be \"person\" or \"llm:<model>\", got {by!r}.")
        evidence = item.get("evidence")
        judgments.append(Judgment(document.strip(), start, end, grade, by, str(item.get("document_id") or ""),
                                  evidence if isinstance(evidence, str) and evidence else None,
                                  str(item.get("chunk_id") or ""), str(item.get("at") or "")))
    return tuple(judgments)


def effective(judgments: Sequence[Judgment]) -> list[Judgment]:
    """Return the judgments that count: for each span the person's, else the LLM's (the last of each)."""
    by_span: dict[tuple[str, int, int], Judgment] = {}
    for judgment in judgments:
        held = by_span.get(judgment.span)
        if held is None or judgment.by_person or not held.by_person:
            by_span[judgment.span] = judgment
    return list(by_span.values())


def hit_grade(judgments: Sequence[Judgment], hit) -> int | None:
    """Return the grade of hit under the span rule (the highest that applies), or None when unjudged."""
    grades = [j.grade for j in judgments if j.applies_to(hit)]
    return max(grades) if grades else None


def judged_at_k(grades: Sequence[int | None], k: int) -> float:
    """Return the share of the top k hits that carry a judgment (1.0 when nothing was retrieved)."""
    top = grades[:k]
    return sum(g is not None for g in top) / len(top) if top else 1.0
