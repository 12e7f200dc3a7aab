"""Context preview: the exact text an LLM would get for the last search, under a token budget."""

from __future__ import annotations

import streamlit as st

from rag.retrieval import (
    CHAT_MAX_TOKENS,
    DEFAULT_OVERFLOW,
    GENERATION_MAX_TOKENS,
    OVERFLOWS,
    RERANK_DEPTH,
    build_context,
)
from ui import nav, state, workspace
from ui.parts import context as parts
from ui.parts import rerank as rerank_part
from ui.parts import search as search_part
from ui.parts.context import parse_separator, show_separator
from ui.render import counted, md

PRESETS = {"chat": ("Chat", CHAT_MAX_TOKENS), "generation": ("Content generation", GENERATION_MAX_TOKENS),
           "custom": ("Custom", None)}

ws = workspace.current()
st.title("Context preview")
run = workspace.last_search(ws)
if run is None:
    st.info(f"Run a search in '{md(ws.collection)}' first: the preview is built from its hits.")
    st.page_link(nav.SEARCH.path, label="Go to Search", icon=":material/search:")
    st.stop()
if not run.outcome.hits:
    st.warning(f"The last search (“{md(run.query)}”) found no hits, so the context would be empty.")
    st.page_link(nav.SEARCH.path, label="Back to Search", icon=":material/search:")
    st.stop()


rerank = rerank_part.control(ws=ws)
if rerank != run.rerank:  # the same search, reranked (or no longer): the context is built from its hits
    request = run.request.replace(score_threshold=run.threshold if not rerank[0] else None,
                                  rerank_depth=rerank[1] if rerank[0] else RERANK_DEPTH)
    again = search_part.run_search(ws, run.query, request, rerank)
    if again is None:
        st.stop()
    state.put(state.SEARCH, again)
    run = again


def _apply_preset() -> None:
    tokens = PRESETS[st.session_state.get(state.CONTEXT_PRESET) or "custom"][1]
    if tokens:
        st.session_state[state.MAX_TOKENS] = tokens


def _custom() -> None:
    st.session_state[state.CONTEXT_PRESET] = "custom"


state.default(state.CONTEXT_PRESET, "chat")
state.default(state.MAX_TOKENS, CHAT_MAX_TOKENS)
state.default(state.SOURCE_LABEL, "Quelle")
state.default(state.SEPARATOR, show_separator("\n\n---\n\n"))
reranked = f", reranked by {md(run.rerank[0])}" if run.rerank[0] else ""
st.caption(f"For “{md(run.query)}”: {counted(len(run.outcome.hits), 'hit')} from '{md(run.collection)}'{reranked}, "
           "best first.")
preset_column, slider_column = st.columns([1.3, 2])
preset_column.segmented_control("Budget preset", list(PRESETS), format_func=lambda p: PRESETS[p][0],
                                key=state.CONTEXT_PRESET, on_change=_apply_preset, persist_state="session")
max_tokens = slider_column.slider("max_tokens", 200, 16000, step=100, key=state.MAX_TOKENS, on_change=_custom,
                                  persist_state="session")
label_column, separator_column, overflow_column = st.columns([1, 1.4, 1.4])
label = label_column.text_input("Source label", key=state.SOURCE_LABEL, persist_state="session")
typed = separator_column.text_input("Separator between chunks", key=state.SEPARATOR, persist_state="session",
                                    help=r"Write a line break as \n and a tab as \t.")
overflow = overflow_column.segmented_control(
    "A chunk that does not fit", OVERFLOWS, default=DEFAULT_OVERFLOW, key=state.OVERFLOW, persist_state="session",
    help="truncate: cut it at a sentence, mark the cut with …, and stop; skip: leave it out and try the next, "
    "smaller ones; stop: end the context before it.") or DEFAULT_OVERFLOW

label = label.strip() or "Quelle"
context = build_context(run.outcome.hits, max_tokens=max_tokens, label=label, separator=parse_separator(typed),
                        overflow=overflow)
parts.budget_bar(context)
a, b, c, d = st.columns(4)
a.metric("included chunks", len(context.included))
b.metric("cut to fit", len(context.truncated))
c.metric("dropped chunks", len(context.dropped))
documents = len({s.document_id for s in context.sources})
d.metric("sources", len(context.sources), help="numbered blocks in the context",
         delta=f"from {counted(documents, 'document')}", delta_color="off", delta_arrow="off")

st.subheader("What the LLM receives")
st.code(context.text or "(empty: not even the first chunk fits the budget)", language=None, wrap_lines=True,
        height=420)
parts.downloads(context, run)

st.subheader("Included")
st.dataframe(parts.included_frame(context, run.outcome.hits), hide_index=True, width="stretch",
             column_config=parts.INCLUDED_COLUMNS)
st.subheader("Dropped")
if context.dropped:
    st.dataframe(parts.dropped_frame(context, run.outcome.hits), hide_index=True, width="stretch",
                 column_config={"score": st.column_config.NumberColumn(format="%.3f")})
else:
    st.caption("Nothing was dropped: every hit fits the budget.")
st.subheader("Sources")
st.code(parts.sources_text(context, label) or "(none)", language=None, wrap_lines=True)
parts.source_pages(ws.store, context, label)
st.subheader("Ask the LLM")
parts.ask(ws, context, run.query, label)
