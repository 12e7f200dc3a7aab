"""The Evaluate page's "Make a synthetic query set": questions made from the chosen documents, a preview, the
.jsonl download, and the set as the sweep's query set (the "Synthetic set" choice of the query-set radio)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from rag.documents import Document
from rag.evaluation import DEFAULT_COUNT, Query, SyntheticSet, load_query_set, make_queries
from rag.generation import get_llm
from ui import errors, settings, state
from ui.render import md
from ui.workspace import Workspace

SYNTHETIC = "synthetic_set"  # the SyntheticSet made last in this session
CHOICE = "Synthetic set"  # its option in the query-set radio (ui.parts.evaluate.read_query_source)
QUERY_FROM = "evaluate_query_from"  # that radio's key
FILE_NAME = "synthetic-queries.jsonl"
SENTENCES, LLM = "Rewritten sentences", "An LLM"
LLM_KEY = "synthetic_llm"

EXPLANATION = """\
**What synthetic questions measure.** Each question comes from one sentence of the documents: the sentence
rewritten (function words dropped, clauses reordered, other forms of its words) or a question an LLM wrote about
its passage, quoting the answer. It counts as found when a retrieved chunk holds that sentence or quote. So the
set measures whether retrieval finds the passage a question came from, and compares chunk sizes, overlaps and
search modes fairly **on the same documents**. Its questions share more words with their passage than real
ones do: a lower bound on vocabulary mismatch, so scores are higher than real users would get.

**What it does not measure.** Real users' questions and their wording, questions that need several passages
(multi-hop), questions the documents do not answer, or absolute quality. Keyword search has an edge on
rewritten sentences (all their words come from the passage); compare modes on an LLM's questions, or better on
real ones.
"""


def query_source(column) -> tuple[list[Query], None, str] | None:
    """Return the set made below as the sweep's query set (queries, no documents of its own, name), else None."""
    made: SyntheticSet | None = st.session_state.get(SYNTHETIC)
    if made is None:
        column.info("No synthetic set yet: make one under “Make a synthetic query set” at the bottom of the page.")
        return None
    queries = load_query_set(made.jsonl(), FILE_NAME)
    titles = ", ".join(title for title, n in made.counts().items() if n)
    column.caption(md(f"{len(queries)} synthetic queries ({made.method}) on {titles}. Choose the same documents."))
    return queries, None, FILE_NAME


def section(ws: Workspace, documents: Callable[[], list[Document]] | None) -> None:
    """Draw the expander: what synthetic questions measure, the settings, the set made, its preview and exports."""
    with st.expander("Make a synthetic query set", expanded=SYNTHETIC in st.session_state,
                     icon=":material/auto_awesome:"):
        st.markdown(EXPLANATION)
        state.default(LLM_KEY, state.get(state.LLM_SPEC) or settings.loaded().llm)
        count_column, seed_column, method_column, llm_column = st.columns([0.8, 0.8, 1.4, 1.6])
        count = count_column.number_input("Questions", 1, 1000, DEFAULT_COUNT, key="synthetic_count",
                                          help="In all, spread over the documents by their length.")
        seed = seed_column.number_input("Seed", 0, 1_000_000, 0, key="synthetic_seed",
                                        help="Which sentences are picked and how they are rewritten: the same seed "
                                        "makes the same set.")
        method = method_column.radio("Written as", [SENTENCES, LLM], key="synthetic_method", horizontal=True)
        spec = llm_column.text_input("LLM", key=LLM_KEY, disabled=method != LLM,
                                     placeholder="ollama:llama3.1 or openai:gpt-4o-mini",
                                     help="The chat model; its server is the sidebar's Ollama host or "
                                     "OpenAI-compatible URL.")
        st.caption("From the documents chosen above (uploaded files or a collection's documents).")
        if st.button("Make the query set", icon=":material/auto_awesome:", key="synthetic_make"):
            make(ws, documents, int(count), int(seed), spec if method == LLM else None)
        made = st.session_state.get(SYNTHETIC)
        if made is not None:
            show(made)


def make(ws: Workspace, documents: Callable[[], list[Document]] | None, count: int, seed: int,
         spec: str | None) -> None:
    """Make the set with a progress bar, keep it in the session and run the page again (its query-set choice)."""
    if documents is None:
        st.info("Choose documents above first: upload files or pick a collection.")
        return
    if spec is not None and not spec.strip():
        st.info("Name the LLM, e.g. ollama:llama3.1 or openai:gpt-4o-mini, or write the questions as rewritten "
                "sentences.")
        return
    bar = st.progress(0.0, text="Reading the documents…")
    with errors.reported() as report:
        llm = None
        if spec is not None:
            ollama, openai, key = ws.servers
            llm = get_llm(spec, host=ollama or None, base_url=openai or None, api_key=key if openai else None)
        made = make_queries(documents(), count, seed=seed, llm=llm,
                            progress=lambda done, total, message: bar.progress(min(done / total, 1.0),
                                                                               text=md(message)))
    bar.empty()
    if report.failed:
        return
    st.session_state[SYNTHETIC] = made
    st.rerun()  # the query-set choice at the top of the page shows the new set


def show(made: SyntheticSet) -> None:
    """Draw the set's notes, a preview of its questions (document text as plain text), the download and "use"."""
    used = sum(1 for n in made.counts().values() if n)
    st.success(md(f"{len(made.queries)} synthetic queries ({made.method}) from {used} of {len(made.documents)} "
                  "documents, every answer span checked against its document's text."))
    if made.asked:
        st.caption(f"{made.wrong_language} of {made.asked} questions rejected: not in the passage's language.")
    for note in made.notes:
        st.caption(md(note))
    frame = pd.DataFrame([{"query": q.query, "document": q.document, "answer": q.answer} for q in made.queries])
    st.dataframe(frame, hide_index=True, width="stretch", height=min(38 + 35 * len(frame), 390),
                 key="synthetic_preview", column_config={"query": st.column_config.TextColumn(width="large"),
                                                         "document": st.column_config.TextColumn(width="small"),
                                                         "answer": st.column_config.TextColumn(width="large")})
    data = errors.attempt(made.jsonl)
    if data is None:
        return
    left, right = st.columns(2)
    left.download_button("Download as .jsonl", data, FILE_NAME, "application/jsonl", icon=":material/download:",
                         key="synthetic_download")
    right.button("Use as query set", icon=":material/playlist_add_check:", key="synthetic_use", on_click=use,
                 help="The sweep above measures on this set (the documents chosen above must include its documents).")


def use() -> None:
    """Choose the synthetic set in the query-set radio (a callback: it runs before the radio is drawn again)."""
    st.session_state[QUERY_FROM] = CHOICE
