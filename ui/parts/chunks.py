"""The views of the Chunks page: flags, chunk table, document with boundaries, live tuning, heading tree."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from rag import reports as chunk_report
from rag.chunking import DEFAULT_CHUNK_SIZE, STRATEGIES, Chunk, ChunkSettings, validate_settings
from rag.documents import Document
from rag.embeddings import Embedder
from rag.reports import ChunkReport, FlagSummary
from rag.store import DocumentInfo, Hit, Store
from ui import errors, jobs, nav, render, resources, state
from ui.parts import chunk_text, page_view
from ui.render import counted, md, plural
from ui.workspace import Workspace

MAX_SHOWN_CHUNKS = 40  # the document view renders at most this many chunks at once


def flags_banner(summary: FlagSummary, embedder: Embedder, chunk_size: int | None) -> None:
    """Say in words what the flags mean for retrieval."""
    limit = embedder.max_input_tokens
    size = summary.suggested_chunk_size  # None: no smaller chunk_size is known to help, so no advice
    if summary.cut and chunk_report.overflow_flag(embedder) == chunk_report.WINDOWED:
        st.warning(
            f"{summary.cut} of {summary.chunks} chunks are longer than {md(embedder.model_id)} reads in one pass "
            f"({limit:,} tokens of its own): each is embedded in windows whose vectors are averaged, which blurs "
            "what its parts say." + (f" A chunk_size of about {size} keeps every chunk in one window." if size else ""),
            icon=":material/content_cut:",
        )
    elif summary.cut:
        st.warning(
            f"{summary.cut} of {summary.chunks} chunks are longer than {md(embedder.model_id)} reads "
            f"({limit:,} tokens of its own): on average {summary.cut_share:.0%} of each of them is cut off and "
            "never embedded, so a search cannot find that text." + (f" A chunk_size of about {size} would fit."
                                                                     if size else ""),
            icon=":material/content_cut:",
        )
    notes = []
    if summary.tiny:
        notes.append(f"{summary.tiny} tiny (under {chunk_report.tiny_limit(chunk_size)} tokens)")
    if summary.no_heading:
        notes.append(f"{summary.no_heading} without a heading")
    if summary.toc_cut:
        notes.append(f"{counted(summary.toc_cut, 'table of contents', 'tables of contents')} over the model's limit "
                     f"(not searched, so {plural(summary.toc_cut, 'it does', 'they do')} not matter)")
    flagged = f"Flagged: {', '.join(notes)}. " if notes else ""
    st.caption(flagged + token_units(embedder))


def token_units(embedder: Embedder) -> str:
    """Return which tokenizer counts what: chunk_size and the token figures are cl100k, the limit is the model's
    (the embedder's own note, e.g. "Counted with the model's own tokenizer", is about the model's tokens only)."""
    note = getattr(embedder, "token_note", "")
    model = (f"Model tokens (\"model tok.\" and the \"{chunk_report.overflow_flag(embedder)}\" flag): "
             f"{md(note[:1].lower() + note[1:])}" if note else "")
    return "Tokens, mean, max, tiny and the histogram count cl100k tokens, the unit of chunk_size. " + model


def reports_frame(reports: Sequence[ChunkReport]) -> pd.DataFrame:
    return pd.DataFrame([
        {"#": r.chunk_index, "tokens": r.tokens, "model tokens": r.model_tokens, "cut off": r.cut_tokens,
         "heading path": render.heading_tail(r.heading_path), "pages": render.pages_label(r.page_start, r.page_end),
         "flags": ", ".join(r.flags), "table header": _header_cell(r, reports),
         "start of content": render.preview(r.content, 90)}
        for r in reports
    ])


def _header_cell(report: ChunkReport, reports: Sequence[ChunkReport]) -> str:
    """Return where the table header rows a chunk repeats come from ("from #3"), "" when it repeats none."""
    if not report.table_header:
        return ""
    source = chunk_report.table_header_source(reports, report.chunk_index)
    return "repeated" if source is None else f"from #{source}"


def chunk_table(reports: Sequence[ChunkReport], chunk_size: int | None, model_id: str, store: Store | None = None,
                chunks: Sequence[Hit] = ()) -> None:
    """Draw the sortable chunk table (select a row to read the chunk, and with store and the stored chunks, its page)
    and the token histogram."""
    only_flagged = st.toggle("Only flagged chunks", key="only_flagged")
    shown = [r for r in reports if r.flags] if only_flagged else list(reports)
    frame = reports_frame(shown)
    selection = st.dataframe(
        frame, hide_index=True, width="stretch", height=min(38 + 35 * len(frame), 390), on_select="rerun",
        selection_mode="single-row", key=state.table_key("chunk_table", (r.content for r in shown)),
        column_config={
            "#": st.column_config.NumberColumn(width="small"),
            "tokens": st.column_config.NumberColumn(width="small", help="cl100k tokens, the unit of chunk_size"),
            "model tokens": st.column_config.NumberColumn("model tok.", width=85, help=(
                f"tokens of {model_id}, counted with its own tokenizer, of what it reads: a table header the chunk "
                "repeats, then the chunk")),
            "cut off": st.column_config.NumberColumn("over limit", width="small", help=(
                "model tokens beyond the input limit: never embedded, or (windowed models) embedded in further "
                "windows")),
            "heading path": st.column_config.TextColumn(width=230, help=render.HEADING_TAIL_HELP),
            "pages": st.column_config.TextColumn(width=55),
            "flags": st.column_config.TextColumn(width=130),
            "table header": st.column_config.TextColumn(width=90, help=(
                "a chunk inside a Markdown table repeats the table's header rows: the model, the keyword index and "
                "the LLM read them before the chunk's text (select the row to see them)")),
            "start of content": st.column_config.TextColumn(width="large"),
        },
    )
    chart, reader = st.columns([2, 3])
    with chart:
        st.vega_lite_chart(spec=render.token_histogram(frame, chunk_size), width="stretch")
    rows = selection.selection.rows if selection else []
    with reader:
        if not rows:
            st.caption("Select a row to read the whole chunk. Click a column header to sort.")
            return
        report = shown[rows[0]]
        st.caption(f"Chunk #{report.chunk_index} · {counted(report.tokens, 'cl100k token')} · "
                   f"{md(render.heading_label(report.heading_path))}")
        chunk_text.show(report, reports, height=260)
        stored = next((c for c in chunks if c.chunk_index == report.chunk_index), None)
        if store is not None and stored is not None:
            page_view.hit(store, stored, f"chunk-{stored.chunk_id}")


def document_view(document: Document, chunks: Sequence[Hit | Chunk], embedder: Embedder | None = None,
                  key: str = "shown_chunks") -> None:
    """Draw the document with chunk boundaries and overlapping text marked (escaped, never Markdown), and the
    part of each chunk the embedder never reads struck through."""
    located = _located(chunks)
    spans = [(c.chunk_index or 0, start, end) for c, start, end in located]
    if not spans:
        st.info("These chunks carry no offsets (the collection was not made by RAG Lab), so they cannot be "
                "placed in the document.")
        return
    overlaps = chunk_report.overlap_spans(spans, len(document.text))
    shared = sum(b - a for a, b in overlaps)
    st.caption(f"{len(document.text):,} characters · {counted(len(spans), 'chunk')} · {shared:,} characters "
               f"({shared / max(len(document.text), 1):.0%}) lie in two chunks (overlap).")
    first, last = 0, len(spans) - 1
    if len(spans) > MAX_SHOWN_CHUNKS:
        first, last = st.slider("Chunks shown", 0, len(spans) - 1, (0, MAX_SHOWN_CHUNKS - 1), key=key)
    unread = {}
    if embedder is not None:
        for chunk, start, _ in located:
            if first <= (chunk.chunk_index or 0) <= last:
                offset = resources.unread_start(embedder, embedder.model_id, embedder.max_input_tokens,
                                                chunk_report.model_text(chunk))
                if offset is not None:  # counted in what the model reads: a repeated table header comes first
                    lead = len(chunk_report.model_text(chunk)) - len(chunk.content)
                    unread[chunk.chunk_index or 0] = start + max(offset - lead, 0)
    if unread:
        are = plural(len(unread), "is", "are")
        st.caption(f"{counted(len(unread), 'shown chunk')} {are} longer than {md(embedder.model_id)} reads: the "
                   "struck-through text is never embedded, so dense search cannot find it there.")
    st.html(render.legend_html())
    parts = chunk_report.segments(len(document.text), spans)
    st.html(render.chunked_text_html(document.text, parts, first, last, unread))


def _located(chunks: Sequence[Hit | Chunk]) -> list[tuple[Hit | Chunk, int, int]]:
    return [(c, c.start, c.end) for c in chunks if c.start is not None and c.end is not None]


def tuning_view(ws: Workspace, document: Document, info: DocumentInfo, stored: Sequence[ChunkReport],
                embedder: Embedder, key: tuple) -> None:
    """Draw sliders that re-chunk the document on the fly, stored settings beside the new ones."""
    size0, overlap0, strategy0 = info.chunk_size or DEFAULT_CHUNK_SIZE, info.overlap or 0, info.strategy or "structure"
    left, middle, right = st.columns([2, 2, 1.4])
    size = left.slider("chunk_size", 50, 2000, min(max(size0, 50), 2000), step=10, key="tune_size")
    overlap = middle.slider("overlap", 0, 500, min(overlap0, 500), step=5, key="tune_overlap")
    strategy = right.segmented_control("strategy", STRATEGIES, default=strategy0, key="tune_strategy") or strategy0
    with errors.reported() as report:
        validate_settings(ChunkSettings(size, overlap, strategy))
    if report.failed:
        return
    chunks = resources.rechunk(document, key, size, overlap, strategy)
    texts = tuple(chunk_report.model_text(c) for c in chunks)
    counts = resources.model_token_counts(embedder, embedder.model_id, texts)
    new = chunk_report.chunk_reports(chunks, counts, embedder.max_input_tokens, size,
                                     chunk_report.overflow_flag(embedder))
    labels = (f"stored: {size0} / {overlap0} / {strategy0}", f"new: {size} / {overlap} / {strategy}")
    st.dataframe(comparison_frame(stored, new, size0, size, labels), hide_index=True, width="stretch")
    top = max([r.tokens for r in (*stored, *new)] + [size0, size]) * 1.05
    for column, title, reports, chunk_size in zip(st.columns(2), ("stored", "new"), (stored, new), (size0, size),
                                                   strict=True):
        column.caption(f"Tokens per chunk, {title} settings")
        frame = pd.DataFrame({"tokens": [r.tokens for r in reports]})
        column.vega_lite_chart(spec=render.token_histogram(frame, chunk_size, domain=(0, top)), width="stretch")
    with st.expander(f"The {len(new)} new chunks"):
        st.dataframe(reports_frame(new), hide_index=True, width="stretch")
    with st.expander("The new boundaries in the text", icon=":material/segment:"):
        document_view(document, chunks, embedder, key="tune_shown_chunks")
    st.caption("Nothing is re-embedded while you tune.")
    apply_settings(ws, info, ChunkSettings(size, overlap, strategy))


def apply_settings(ws: Workspace, info: DocumentInfo, settings: ChunkSettings) -> None:
    """Offer to re-ingest this document, or every document of the collection, with settings, as a job."""
    with st.popover(f"Apply {settings.chunk_size} / {settings.overlap} / {settings.strategy}…",
                    icon=":material/published_with_changes:"):
        scope = st.radio("Documents", ["this document", "every document of the collection"], key="apply_scope")
        target = st.radio("Into", ["this collection (replaces the chunks)", "a new collection"], key="apply_target")
        name = ws.collection
        if target == "a new collection":
            name = st.text_input("Name of the new collection", f"{ws.collection}-{settings.chunk_size}",
                                 key="apply_collection").strip()
        documents = [info] if scope == "this document" else [d for d in ws.documents() if d.complete]
        if st.button(f"Re-ingest {counted(len(documents), 'document')} into '{md(name)}'", type="primary",
                     key="apply_run", disabled=not name):
            with errors.reported() as report:
                embedder = ws.embedder_for(name)
            if report.failed:
                return
            job = jobs.jobs_queue(resources.change_hook()).submit_reingest(
                [d.document_id for d in documents], [d.title for d in documents], name, settings, embedder,
                ws.store, ws.location, resources.archive(ws.store), source=ws.collection)
            state.put(state.MY_JOBS, [*state.get(state.MY_JOBS, []), job.id])  # it ends: the sidebar shows name
            resources.remember_collection(ws.location, name)
            st.success(f"Queued: {counted(len(documents), 'document')} into '{md(name)}'. The Upload page shows "
                       "the progress.")
            st.page_link(nav.UPLOAD.path, label="Follow it on Upload", icon=":material/upload_file:")


def comparison_frame(stored: Sequence[ChunkReport], new: Sequence[ChunkReport], size0: int, size: int,
                     labels: tuple[str, str] = ("stored", "new")) -> pd.DataFrame:
    """Return stored vs. new settings side by side: counts, mean/median/max tokens, flags."""
    def figures(reports: Sequence[ChunkReport], chunk_size: int) -> list[float]:
        stats = chunk_report.chunk_stats([r.tokens for r in reports], chunk_size)
        summary = chunk_report.flag_summary(reports, None)
        return [stats.count, round(stats.mean), round(stats.median), stats.largest, summary.over_limit, summary.tiny,
                summary.no_heading]

    names = ["chunks", "mean tokens", "median tokens", "max tokens", "over the embedder's limit", "tiny",
             "without heading"]
    before, after = figures(stored, size0), figures(new, size)
    return pd.DataFrame({"": names, labels[0]: before, labels[1]: after,
                         "change": [f"{b - a:+g}" if b != a else "" for a, b in zip(before, after, strict=True)]})


def tree_view(chunks: Sequence[Hit], reports: Sequence[ChunkReport]) -> None:
    """Draw the heading tree; selecting a section shows its chunks."""
    nodes = chunk_report.heading_tree(chunks)
    frame = pd.DataFrame([
        {"section": "\u2003\u2003" * n.depth + n.title, "chunks": len(n.chunks), "tokens": n.tokens,
         "pages": render.pages_label(n.page_start, n.page_end)}
        for n in nodes
    ])
    selection = st.dataframe(frame, hide_index=True, width="stretch", on_select="rerun",
                             selection_mode="single-row", height=min(38 + 35 * len(frame), 420),
                             key=state.table_key("tree_table", (f"{n.depth} {n.title} {n.chunks}" for n in nodes)))
    rows = selection.selection.rows if selection else []
    if not rows:
        st.caption("Select a section to read its chunks.")
        return
    node = nodes[rows[0]]
    by_index = {r.chunk_index: r for r in reports}
    st.caption(f"{md(node.title)}: chunks {', '.join(f'#{i}' for i in node.chunks)}")
    with st.container(height=420):
        for index in node.chunks:
            report = by_index.get(index)
            if report:
                st.caption(f"#{index} · {counted(report.tokens, 'cl100k token')} · "
                           f"{', '.join(report.flags) or 'no flags'}")
                chunk_text.show(report, reports, plain=True)
