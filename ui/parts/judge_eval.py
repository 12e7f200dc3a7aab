"""The Evaluate page's judging: hole@k beside MRR, and "Judge the unjudged hits of this row" by you or an LLM.

Judgments go where Search's go (rag.evaluation.judges.merging): the judged query set of the collection the sweep
read its documents from, or, for uploaded documents, a copy of the sweep's query set (queries/evaluate-<name>.jsonl),
started from the questions the sweep ran; downloadable. They are spans of the documents, so they count for every
row the next time the sweep runs with that file.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rag.evaluation import (
    MOSTLY_UNJUDGED,
    ConfigResult,
    SweepResult,
    agreement,
    hit_grade,
    judge_with_llm,
    judgments_path,
    merge_judgments,
    read_query_file,
    start_query_set,
    unjudged_note,
)
from rag.generation import LLM_SPECS, get_llm
from rag.settings import data_root
from ui import errors, state
from ui.parts import judge
from ui.render import counted, md, plural

SHOWN = 10  # unjudged hits listed at a time for a person to judge
WHO = ("You", "An LLM")


def hole_words(evaluation, k: int, metric: str | None = None) -> str:
    """Return hole@k in words for a caption beside a score of metric (None: of every metric), e.g. "hole@10 0.80:
    mostly unjudged: …" (rag.evaluation.unjudged_note: what that means depends on the metric)."""
    hole = evaluation.metrics.get(f"hole@{k}")
    if hole is None:
        return ""
    return f"hole@{k} {hole:.2f}" + (f": {unjudged_note(metric)}" if hole > MOSTLY_UNJUDGED else "")


def _unjudged(row: ConfigResult, k: int, path: Path) -> list[tuple[str, object, int]]:
    """Return (question, hit, its rank for the question) for each hit of the row's top k that no judgment (of the
    sweep or the file) grades."""
    _, kept = read_query_file(path)
    by_text = {q.text: q for q in kept}
    pending = []
    for outcome in row.evaluation.per_query:
        grades = outcome.grades or (None,) * len(outcome.hits)
        saved = by_text.get(outcome.query.text)
        for rank, (hit, grade) in enumerate(zip(outcome.hits[:k], grades, strict=False), 1):
            if grade is None and (saved is None or hit_grade(saved.counted, hit) is None):
                pending.append((outcome.query.text, hit, rank))
    return pending


def section(result: SweepResult, name: str) -> None:
    """Draw 'Judge the unjudged hits of this row' for a chosen row of the sweep."""
    st.subheader("Judge the unjudged hits of this row")
    k = result.ks[-1]
    labels = {row.label: row for row in result.results}
    left, right = st.columns([2, 1])
    row = labels[left.selectbox("Row", list(labels), index=list(labels).index(result.best().label),  # as the others
                                key=state.result_key("judge_eval_row", result))]
    who = right.segmented_control("Who judges", WHO, default=WHO[0], key="judge_eval_who") or WHO[0]
    path = judgments_path(data_root(), result.collection, name)
    queries = [o.query for o in row.evaluation.per_query]
    with errors.reported() as report:
        if result.collection:  # kept in the query set's own file before: merged, the older file stays as it was
            merge_judgments(judgments_path(data_root(), None, name), path)
        pending = _unjudged(row, k, path)
    if report.failed:
        return
    st.caption(f"{counted(len(pending), 'hit')} of the top {k} {plural(len(pending), 'carries', 'carry')} no "
               f"judgment ({md(hole_words(row.evaluation, k))}). "
               f"Judgments go into {md(path.name)} under the data root"
               + (f" (the collection '{md(result.collection)}'s file, as on Search)" if result.collection else "")
               + "; run the sweep with it to count them.")
    judge.show_message()
    if who == WHO[0]:
        for question, hit, rank in pending[:SHOWN]:  # rank: the hit's for its question, as the sweep ranked it
            st.text(f"Question: {question}")
            judge.hit_row(path, question, hit, rank, None, queries)
    else:
        _llm(row, path, k, pending, queries)
    _, kept = read_query_file(path)
    agreed = agreement(kept)
    if agreed.shared:
        st.caption(md(agreed.words()))
    judge.download(path, "judge_eval_download")


def _llm(row: ConfigResult, path: Path, k: int, pending: list, queries: list) -> None:
    spec = st.text_input("LLM", key="judge_eval_llm", placeholder="ollama:llama3.1",
                         help=f"{', '.join(LLM_SPECS)}; Ollama on OLLAMA_HOST, OpenAI-compatible on OPENAI_BASE_URL")
    if not st.button("Let the LLM judge them", key="judge_eval_run", disabled=not pending):
        return
    hits = {o.query.text: list(o.hits[:k]) for o in row.evaluation.per_query}
    questions = sorted({question for question, _, _ in pending})
    with errors.reported(), st.spinner(f"The LLM judges {counted(len(pending), 'hit')}…"):
        llm = get_llm(spec)
        start_query_set(path, queries)
        done = judge_with_llm(llm, path, lambda q: hits.get(q, []), questions=questions)
        st.success(md(f"{done.model} graded {counted(done.judged, 'unjudged hit')} of "
                      f"{counted(done.questions, 'question')}, and "
                      f"{done.checked} you judged (your grade counts; they measure agreement)."))
