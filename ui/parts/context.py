"""The parts of the Context page: budget bar, the exact text, included and dropped chunks, sources, downloads,
and "Ask the LLM": the answer streamed in as plain text, then with each [Quelle N] linked to its source block."""

from __future__ import annotations

import json
import re

import pandas as pd
import streamlit as st

from rag.chunking import count_tokens
from rag.generation import (
    PRESETS,
    Answer,
    Template,
    answer_with,
    citation_spans,
    get_llm,
    question_language,
    template_for,
)
from rag.retrieval import Context
from rag.store import Hit, Store
from ui import errors, render, settings, state
from ui.parts import page_view
from ui.render import md
from ui.workspace import SearchRun, Workspace

NO_LLM = ("No LLM is configured. The operator sets one with RAG_LLM=ollama:<model> (Ollama on OLLAMA_HOST) or "
          "RAG_LLM=openai:<model> (OPENAI_BASE_URL and OPENAI_API_KEY), or type a model above, e.g. ollama:llama3.1.")


def parse_separator(typed: str) -> str:
    r"""Return the separator a user typed with visible escapes (`\n`, `\t`) as the real characters."""
    return typed.replace("\\n", "\n").replace("\\t", "\t")


def show_separator(separator: str) -> str:
    r"""Return a separator with its newlines and tabs written as `\n` and `\t`, for a one-line input."""
    return separator.replace("\n", "\\n").replace("\t", "\\t")


def budget_bar(context: Context) -> None:
    share = context.token_count / context.max_tokens if context.max_tokens else 0.0
    st.progress(min(share, 1.0), text=f"{context.token_count:,} of {context.max_tokens:,} tokens used ({share:.0%})")


INCLUDED_COLUMNS = {  # the Included table's column_config: what its two flags mean
    "score": st.column_config.NumberColumn(format="%.3f"),
    "trimmed": st.column_config.CheckboxColumn(
        help="Shortened to its part not already in the context: it overlaps a chunk placed before it (neighbouring "
             "chunks share their overlap), so the shared text is sent once."),
    "cut to fit": st.column_config.CheckboxColumn(
        help="Cut at the last sentence that fits max_tokens and marked with …; the context ends after it "
             "(a chunk that does not fit: truncate)."),
}


def included_frame(context: Context, hits: list[Hit]) -> pd.DataFrame:
    """Return the included chunks in context order; 'trimmed' marks a chunk cut to the part not already in, 'table
    header' the tokens of the table header rows a block repeats before the chunk (rag.chunking.tables)."""
    originals = {h.chunk_id: h for h in hits}
    rank = {h.chunk_id: i for i, h in enumerate(hits, 1)}
    rows = []
    for number, (source, hit) in enumerate(zip(context.sources, context.included, strict=True)):
        lead = block_header(context, number)
        original = originals.get(hit.chunk_id)
        rows.append({"source": source.number, "rank": rank.get(hit.chunk_id), "score": hit.score,
                     "document": hit.document_title, "heading path": render.heading_tail(hit.heading_path),
                     "pages": render.pages_label(hit.page_start, hit.page_end), "chunk": hit.chunk_index,
                     "tokens": count_tokens(hit.content), "table header": count_tokens(lead) if lead else 0,
                     "trimmed": bool(original and len(hit.content) < len(original.content)) and not source.truncated,
                     "cut to fit": source.truncated})
    return pd.DataFrame(rows)


def block_header(context: Context, number: int) -> str:
    """Return the table header rows the number-th included block (from 0) repeats before its chunk, "" for none."""
    return context.table_headers[number] if number < len(context.table_headers) else ""


INCLUDED_COLUMNS["table header"] = st.column_config.NumberColumn(help=(
    "tokens of the table header rows the block repeats before a chunk that continues a Markdown table (in the text "
    "above); 0: it repeats none"))


def dropped_frame(context: Context, hits: list[Hit]) -> pd.DataFrame:
    rank = {h.chunk_id: i for i, h in enumerate(hits, 1)}
    return pd.DataFrame([
        {"rank": rank.get(d.hit.chunk_id), "score": d.hit.score, "document": d.hit.document_title,
         "chunk": d.hit.chunk_index, "tokens": count_tokens(d.hit.content), "reason": d.reason}
        for d in context.dropped
    ])


def sources_text(context: Context, label: str) -> str:
    """Return the sources list as plain lines, the way a answer would cite them."""
    lines = []
    for s in context.sources:
        parts = [s.document_title or s.document_id]
        if s.heading_path:
            parts.append(render.heading_label(s.heading_path))
        if s.page_start is not None:
            parts.append(f"S. {render.pages_label(s.page_start, s.page_end)}")
        lines.append(f"[{label} {s.number}] " + " — ".join(parts))
    return "\n".join(lines)


def source_pages(store: Store, context: Context, label: str) -> None:
    """Draw a "Show on page" toggle per source: its chunk on its pages, drawn only while the toggle is on."""
    for source, hit in zip(context.sources, context.included, strict=True):
        page_view.hit(store, hit, f"source-{source.number}-{hit.chunk_id}",
                      md(f"Show {label} {source.number} on page ({source.document_title})"))


def downloads(context: Context, run: SearchRun) -> None:
    data = {"query": run.query, "collection": run.collection, "top_k": run.top_k, "threshold": run.threshold,
            "embedder": run.model_id, **context.to_dict()}
    row = st.container(horizontal=True)
    row.download_button("Download .txt", context.text, file_name="context.txt", mime="text/plain",
                         icon=":material/download:", key="download_txt")
    row.download_button("Download .json", json.dumps(data, ensure_ascii=False, indent=2),
                          file_name="context.json", mime="application/json", icon=":material/data_object:",
                          key="download_json")


def anchor(label: str, number: int) -> str:
    return f"{re.sub(r'[^a-z0-9]+', '-', label.lower()).strip('-') or 'source'}-{number}"


def linked_answer(text: str, label: str, numbers: set[int]) -> str:
    """Return the answer as escaped Markdown in which every citation of a known source links to its block."""
    text = text.strip()
    out, cursor = [], 0
    for start, end, found in citation_spans(text, label):
        links = [f"[{md(label)} {n}](#{anchor(label, n)})" if n in numbers else f"{md(label)} {n} (not in the context)"
                 for n in found]
        out += [render.md_lines(text[cursor:start]), "\\[" + ", ".join(links) + "\\]"]
        cursor = end
    out.append(render.md_lines(text[cursor:]))
    return "".join(out)


def ask(ws: Workspace, context: Context, question: str, label: str) -> None:
    """Draw "Ask the LLM": model, preset, editable prompt; on click stream the answer, then its citations."""
    state.default(state.LLM_SPEC, settings.loaded().llm)
    left, middle = st.columns([1.4, 1])
    spec = left.text_input("LLM", key=state.LLM_SPEC, placeholder="ollama:llama3.1 or openai:gpt-4o-mini",
                           help="The chat model; its server is the sidebar's Ollama host or OpenAI-compatible URL.")
    preset = middle.segmented_control("Prompt", PRESETS, default="chat", key=state.LLM_PRESET) or "chat"
    asked = st.text_area("Question or task", question, key=state.LLM_QUESTION, height=68)
    language = question_language(asked, context.text)
    default = template_for(preset, language)
    with st.expander(f"Prompt template ({'German' if language == 'de' else 'English'}, by the question: the system "
                     "text, and the user text with {context} and {question})"):
        system = st.text_area("System", default.system, key=f"{state.LLM_SYSTEM}-{preset}-{language}", height=110)
        user = st.text_area("User", default.user, key=f"{state.LLM_USER}-{preset}-{language}", height=90)
    if st.button("Ask the LLM", icon=":material/forum:", key="ask_llm", disabled=not context.text):
        if not spec.strip():
            st.info(NO_LLM)
            return
        template = None if (system, user) == (default.system, default.user) else Template(system, user)
        shown, pieces = st.empty(), []

        def on_text(piece: str) -> None:
            pieces.append(piece)
            shown.text("".join(pieces))  # plain text while it streams: the answer may quote documents

        ollama, openai, key = ws.servers
        with errors.reported() as report:
            llm = get_llm(spec, host=ollama or None, base_url=openai or None, api_key=key if openai else None)
            with st.spinner(f"Asking {md(spec)}…"):
                result = answer_with(llm, asked, context, preset, template, label, on_text=on_text)
        shown.empty()
        if report.failed:
            return
        state.put(state.ANSWER, (context.text, result))
    kept = state.get(state.ANSWER)
    if kept and kept[0] == context.text:
        show_answer(kept[1], label)


def show_answer(result: Answer, label: str) -> None:
    """Draw the answer with linked citations, what it cited, never cited, or cited without a source."""
    st.markdown("**Answer** " + f"· {md(result.model)} · {result.prompt.token_count:,} prompt tokens of "
                f"{result.context_window:,}")
    numbers = {s.number for s in result.context.sources}
    with st.container(border=True):
        st.markdown(linked_answer(result.text, label, numbers) or "(empty answer)")
    cited = result.citations
    if cited.unknown:
        st.warning(md(f"The answer cites {', '.join(f'{label} {n}' for n in cited.unknown)}, which the context "
                      "does not have: those claims have no source here."))
    if cited.unused:
        st.caption(md(f"Never cited: {', '.join(f'{label} {s.number}' for s in cited.unused)}."))
    if not cited.cited:
        st.caption("The answer cites no source.")
    for source, hit in zip(result.context.sources, result.context.included, strict=True):
        title = f"{label} {source.number}: {source.document_title}" + (" (cited)" if source in cited.cited else "")
        st.subheader(md(title), anchor=anchor(label, source.number))
        if block_header(result.context, source.number - 1):
            st.caption("Table header repeated from the start of the table: the LLM read it before this chunk's text.")
            st.code(block_header(result.context, source.number - 1), language=None, wrap_lines=True)
        st.code(hit.content, language=None, wrap_lines=True)
