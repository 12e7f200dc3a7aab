"""The parts of the Context page: budget bar, the exact text, included and dropped chunks, sources, downloads."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from rag.chunking import tokens
from rag.context import Context
from rag.store.records import Hit
from ui import render
from ui.workspace import SearchRun


def parse_separator(typed: str) -> str:
    r"""Return the separator a user typed with visible escapes (`\n`, `\t`) as the real characters."""
    return typed.replace("\\n", "\n").replace("\\t", "\t")


def show_separator(separator: str) -> str:
    r"""Return a separator with its newlines and tabs written as `\n` and `\t`, for a one-line input."""
    return separator.replace("\n", "\\n").replace("\t", "\\t")


def budget_bar(context: Context) -> None:
    share = context.token_count / context.max_tokens if context.max_tokens else 0.0
    st.progress(min(share, 1.0), text=f"{context.token_count:,} of {context.max_tokens:,} tokens used ({share:.0%})")


def included_frame(context: Context, hits: list[Hit]) -> pd.DataFrame:
    """Return the included chunks in context order; 'trimmed' marks a chunk cut to the part not already in."""
    originals = {h.chunk_id: h for h in hits}
    rank = {h.chunk_id: i for i, h in enumerate(hits, 1)}
    rows = []
    for source, hit in zip(context.sources, context.included, strict=True):
        original = originals.get(hit.chunk_id)
        rows.append({"source": source.number, "rank": rank.get(hit.chunk_id), "score": hit.score,
                     "document": hit.document_title, "heading path": render.heading_label(hit.heading_path),
                     "pages": render.pages_label(hit.page_start, hit.page_end), "chunk": hit.chunk_index,
                     "tokens": tokens.count(hit.content),
                     "trimmed": bool(original and len(hit.content) < len(original.content))})
    return pd.DataFrame(rows)


def dropped_frame(context: Context, hits: list[Hit]) -> pd.DataFrame:
    rank = {h.chunk_id: i for i, h in enumerate(hits, 1)}
    return pd.DataFrame([
        {"rank": rank.get(d.hit.chunk_id), "score": d.hit.score, "document": d.hit.document_title,
         "chunk": d.hit.chunk_index, "tokens": tokens.count(d.hit.content), "reason": d.reason}
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


def downloads(context: Context, run: SearchRun) -> None:
    data = {"query": run.query, "collection": run.collection, "top_k": run.top_k, "threshold": run.threshold,
            "embedder": run.model_id, **context.to_dict()}
    row = st.container(horizontal=True)
    row.download_button("Download .txt", context.text, file_name="context.txt", mime="text/plain",
                         icon=":material/download:", key="download_txt")
    row.download_button("Download .json", json.dumps(data, ensure_ascii=False, indent=2),
                          file_name="context.json", mime="application/json", icon=":material/data_object:",
                          key="download_json")
