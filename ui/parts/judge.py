"""Judging hits on the pages: a grade per hit (relevant 2, partly 1, not relevant 0) with optional evidence text,
saved at once into a query set of the collection under the data root (rag.evaluation.judges.judging), downloadable.

A click on a grade is the save: the callback writes the judgment before the page reruns, so what the page shows
is what the file holds. Document text is shown as plain text, never as Markdown.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from rag.errors import RagError
from rag.evaluation import (
    GRADES,
    Query,
    agreement,
    hit_grade,
    judgment_of,
    judgments_path,
    read_query_file,
    save_judgments,
    start_query_set,
)
from rag.settings import data_root
from rag.store import Hit, Store
from ui.parts import page_view
from ui.render import counted, md

GRADE_OPTIONS = (2, 1, 0)
LABELS = {2: "2 relevant", 1: "1 partly", 0: "0 not relevant"}
MESSAGE = "judge_message"  # (kind, text) of the last save, shown once


def widget_key(prefix: str, question: str, hit: Hit) -> str:
    """Return a stable widget key for one hit judged for one question."""
    digest = hashlib.sha1(f"{question}\x1f{hit.chunk_id}".encode()).hexdigest()[:12]
    return f"{prefix}_{digest}"


def _save(path: Path, question: str, hit: Hit, grade_key: str, evidence_key: str,
          start: Sequence[Query] | None = None) -> None:
    grade = st.session_state.get(grade_key)
    if grade is None:  # the selection was cleared: nothing to save (the file keeps the last grade)
        return
    try:
        judgment = judgment_of(hit, grade, st.session_state.get(evidence_key) or None)
        if start is not None:  # the first judgment starts the file with every question of the set
            start_query_set(path, start)
        saved = save_judgments(path, question, [judgment])
    except RagError as error:
        st.session_state[MESSAGE] = ("error", str(error))
        return
    st.session_state[MESSAGE] = ("saved", f"Saved: {LABELS[grade]} "
                                          f"({counted(saved.version['judgments'], 'judgment')}, "
                                          f"version {saved.version['version']}).")


def show_message() -> None:
    """Show the last save's outcome once: an error line, or a short note."""
    message = st.session_state.pop(MESSAGE, None)
    if message is None:
        return
    kind, text = message
    if kind == "error":
        st.error(md(text))
    else:
        st.toast(md(text), icon=":material/check:")


def judged_question(path: Path, question: str) -> tuple[Query | None, list[Query]]:
    """Return the question's line of the query set at path (None if not there yet) and every query; an unreadable
    set is an error line on the page and nothing to judge into."""
    _, queries = read_query_file(path)
    return next((q for q in queries if q.text == question.strip()), None), queries


def hit_row(path: Path, question: str, hit: Hit, rank: int, judged: Query | None,
            start: Sequence[Query] | None = None, store: Store | None = None) -> None:
    """Draw one hit with its grade buttons and evidence field; a click saves (into a file started with start's
    questions when it does not exist yet). With store, a judged hit offers its evidence on its page."""
    grade_key, evidence_key = widget_key("judge_grade", question, hit), widget_key("judge_evidence", question, hit)
    current = hit_grade(judged.counted, hit) if judged is not None else None
    if current is not None and grade_key not in st.session_state:
        st.session_state[grade_key] = current
    # one flex row, not three columns: 4 elements for the browser to draw per hit instead of 7, on every top_k step
    row = st.container(horizontal=True, vertical_alignment="center", wrap=False)
    row.text(f"#{rank} · {hit.document_title}\n{' '.join(hit.content.split())[:160]}", width="stretch")
    row.text_input("evidence", key=evidence_key, label_visibility="collapsed", width=210,
                   placeholder="evidence text (optional)",
                   help="Text inside this chunk that answers the question; empty: the whole chunk.")
    row.segmented_control("grade", GRADE_OPTIONS, format_func=LABELS.get, key=grade_key, width="content",
                          label_visibility="collapsed", on_change=_save,
                          args=(path, question, hit, grade_key, evidence_key, start))
    evidence = [(j.start, j.end) for j in (judged.counted if judged is not None else ()) if j.applies_to(hit)]
    if store is not None and evidence:
        page_view.span(store, hit, evidence, "the evidence", widget_key("judge_page", question, hit),
                       "Show the evidence on page")


def download(path: Path, key: str) -> None:
    """Offer the query set file for download (read on click)."""
    if path.exists():
        st.download_button("Download the query set", lambda: path.read_bytes(), path.name, "application/jsonl",
                           key=key, icon=":material/download:")


def search_panel(ws, run) -> None:
    """Draw the judging of the Search page's results (in its 'Judge these hits' expander): each hit of the current
    question with its grade and evidence."""
    hits: Sequence[Hit] = run.outcome.hits
    if not hits or not run.query.strip():
        st.caption("Search a question first: its hits are judged for it.")
        return
    path = judgments_path(data_root(), ws.collection)  # the same file as Evaluate's on this collection
    with st.container():  # a message or none: the rows below keep their places in the browser either way
        show_message()
    try:
        judged, queries = judged_question(path, run.query)
    except RagError as error:
        st.error(md(str(error)))
        return
    count = sum(len(q.judgments) for q in queries)
    st.caption(f"For this question, into the query set {md(path.name)} of the collection "
               f"({counted(len(queries), 'question')}, {counted(count, 'judgment')}): "
               f"{', '.join(f'{g} {w}' for g, w in GRADES.items())}. A judgment keeps the "
               "document and the character span of its evidence, so it holds for every chunking.")
    with st.container():  # one row per hit: one more hit adds a row without moving what follows
        for rank, hit in enumerate(hits, 1):
            hit_row(path, run.query, hit, rank, judged, store=ws.store)
    left, right = st.columns([1, 3], vertical_alignment="center")
    with left:
        download(path, "judge_download")
    agreed = agreement(queries)
    if agreed.shared:
        right.caption(md(agreed.words()))
