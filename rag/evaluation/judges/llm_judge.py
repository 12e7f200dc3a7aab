"""The LLM judge: grades the unjudged hits of each question's top k with a chat model (rag.generation).

The prompt is in the question's language (German or English); the model must answer with one grade, 2
(relevant), 1 (partly) or 0 (not relevant), as its first word. Its judgments are marked "by": "llm:<model>".
It grades every unjudged hit of the top k, and also the hits only the person judged (counted as "checked"):
those grades never count (the person's judgment of a span wins, rag.evaluation.querysets.judgments) but they are what
its agreement with the person is measured on (rag.evaluation.judges.agreement). A hit an LLM judgment already
applies to is never sent again. Each question's grades are saved
as soon as they are all in (atomic writes), so an error (a bad, slow or malformed LLM: the answer preview's
one-line errors; or an answer that is no grade) loses nothing already judged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.errors import LLMError
from rag.evaluation.judges.judging import judgment_of, read_query_file, save_judgments
from rag.evaluation.querysets import LLM_PREFIX
from rag.generation import question_language
from rag.retrieval import Hit

PASSAGE_CHARS = 4000  # of a chunk in the prompt: judges read what a context would hold, not whole books
PROMPTS = {
    "de": ("Du beurteilst, ob ein Textabschnitt eine Frage beantwortet. Antworte nur mit einer Ziffer: "
           "2 = relevant (beantwortet die Frage), 1 = teilweise relevant, 0 = nicht relevant.",
           "Frage: {question}\n\nAbschnitt aus „{title}“:\n{passage}\n\nNote (2, 1 oder 0):"),
    "en": ("You judge whether a passage answers a question. Answer with one digit only: "
           "2 = relevant (answers the question), 1 = partly relevant, 0 = not relevant.",
           "Question: {question}\n\nPassage from \"{title}\":\n{passage}\n\nGrade (2, 1 or 0):"),
}
_GRADE = re.compile(r"^[\s*\"'`(\[]*([012])(?!\d|[.,]\d)")  # "2", "**1**", "0 - not relevant"; not "0.5"


@dataclass(frozen=True)
class LLMJudged:
    model: str  # "llm:<model>"
    questions: int
    judged: int  # unjudged hits the LLM graded now
    checked: int  # hits only the person had judged, graded now for the agreement (the person's grade counts)
    already: int  # hits in the top k an LLM had graded before

    def to_json(self) -> dict:
        return {"by": self.model, "questions": self.questions, "judged": self.judged, "checked": self.checked,
                "already_judged": self.already}


def judge_messages(question: str, hit: Hit) -> list[dict[str, str]]:
    """Return the chat messages asking for hit's grade, in the question's language."""
    system, user = PROMPTS[question_language(question)]
    return [{"role": "system", "content": system},
            {"role": "user", "content": user.format(question=question, title=hit.document_title,
                                                    passage=hit.content[:PASSAGE_CHARS])}]


def parse_grade(answer: str, model: str) -> int:
    """Return the grade an LLM answered; LLMError (one line) when its answer does not start with 0, 1 or 2."""
    match = _GRADE.match(answer)
    if not match:
        shown = " ".join(answer.split())[:60]
        raise LLMError(f"The LLM '{model}' answered {shown!r} instead of a grade 0, 1 or 2; the judgments saved so "
                       "far are kept. Try another model, or judge these hits yourself.")
    return int(match.group(1))


def judge_with_llm(llm, path: str | Path, search: Callable[[str], Sequence[Hit]],
                   progress: Callable[[int, int], None] | None = None,
                   questions: Sequence[str] | None = None) -> LLMJudged:
    """Grade the unjudged hits of every question (or of questions) of the query set at path; search(question)
    gives its top k. Return the counts."""
    _, queries = read_query_file(path)
    chosen = list({q.text: q for q in reversed(queries)  # a question written twice is one line, judged once
                   if questions is None or q.text in questions}.values())[::-1]
    by = f"{LLM_PREFIX}{llm.model}"
    judged = checked = already = 0
    for done, query in enumerate(chosen):
        new = []
        for hit in search(query.text):
            applying = [j for j in query.judgments if j.applies_to(hit)]
            if any(not j.by_person for j in applying):
                already += 1
                continue
            grade = parse_grade(llm.complete(judge_messages(query.text, hit)), llm.model_id)
            new.append(judgment_of(hit, grade, by=by))
            checked, judged = (checked + 1, judged) if applying else (checked, judged + 1)
        if new:
            save_judgments(path, query.text, new, by=by)
        if progress:
            progress(done + 1, len(chosen))
    return LLMJudged(by, len(chosen), judged, checked, already)
