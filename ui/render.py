"""Renderers shared by pages. Document text is data: shown with st.text / st.code / st.dataframe, or escaped
before it goes into HTML; anything from a document that lands in a Markdown label goes through md()."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import pandas as pd

from rag import words
from rag.reports import Segment
from rag.words import shorten

preview = shorten  # the one shortening rule (messages, tables): rag.words.shorten

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=^&\"'])")
CHUNK_COLOURS = ("#e3f0fb", "#e6f4ea")  # alternating backgrounds: which chunk a character belongs to
OVERLAP_COLOUR = "#ffe08a"  # text that two or more chunks share
CHILD_COLOUR = "#c8e6c9"  # the child of a parent–child hit that matched the query
CHART_HEIGHT = 220
# Every search mode's name on every page: the Search page offers the first three (its fusion is its own
# control); Compare, the embedding map and Evaluate offer a fusion per mode (COMPARED_MODES).
MODE_LABELS = {"dense": "Dense", "sparse": "Keyword (BM25)", "hybrid": "Hybrid", "hybrid-convex": "Hybrid convex",
               "hybrid-rrf": "Hybrid RRF", "hybrid-dbsf": "Hybrid DBSF"}
COMPARED_MODES = ("dense", "sparse", "hybrid-convex", "hybrid-rrf", "hybrid-dbsf")


EMPTY_CELL = "—"  # what a table shows for a missing value (st.dataframe's own would read "None")


def md(text: str) -> str:
    """Return text with every Markdown-active character backslash-escaped, for labels and captions."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def md_lines(text: str) -> str:
    """Return text escaped like md() line by line, its line breaks and paragraphs kept (an LLM's answer)."""
    return "  \n".join(_MD_SPECIAL.sub(r"\\\1", line) for line in str(text).split("\n"))


counted = words.counted  # "1 document", "3 documents": one rule for the pages and rag's own messages
plural = words.plural  # "is" / "are" after a count, the same rule


HEADING_TAIL_HELP = "the end of the heading path (… stands for the levels above it); the chunk itself shows all of it"


def heading_tail(path: Sequence[str], levels: int = 2) -> str:
    """Return the last levels of a heading path ("… › 2.1 Methoden › Auswahl"): the end says most in a narrow column."""
    return heading_label(path) if len(path) <= levels else "… › " + " › ".join(path[-levels:])


def heading_label(path: Sequence[str]) -> str:
    return " › ".join(path) if path else "—"


def pages_label(start: int | None, end: int | None) -> str:
    if start is None:
        return ""
    return str(start) if end in (None, start) else f"{start}–{end}"



def token_histogram(frame: pd.DataFrame, chunk_size: int | None, domain: tuple[float, float] | None = None) -> dict:
    """Return a histogram of the frame's "tokens" column with chunk_size drawn as a red dashed rule (a Vega-Lite
    spec: the live-tuning sliders redraw it on every step, and Altair's validation cost more than the chunking)."""
    extent = list(domain) if domain else None
    if extent is None and len(frame) and frame["tokens"].min() == frame["tokens"].max():
        # one value (a single chunk): Vega-Lite bins [v, v] into bins of no width and draws no bar
        extent = [0, max(float(frame["tokens"].max()), float(chunk_size or 0)) + 1]
    x = {"field": "tokens", "type": "quantitative", "title": "tokens per chunk (cl100k)",
         "bin": {"maxbins": 30, **({"extent": extent} if extent else {})},
         "scale": {"domain": list(domain)} if domain else {}}
    bars = {"data": {"name": "chunks"}, "mark": {"type": "bar", "opacity": 0.85, "color": "#4c78a8"}, "encoding": {
        "x": x, "y": {"aggregate": "count", "type": "quantitative", "title": "chunks"},
        "tooltip": [{"aggregate": "count", "type": "quantitative", "title": "chunks"}]}}
    datasets = {"chunks": frame[["tokens"]]}
    if not chunk_size:
        return {"height": CHART_HEIGHT, "layer": [bars], "datasets": datasets}
    datasets["chunk-size"] = pd.DataFrame({"tokens": [chunk_size], "label": [f"chunk_size {chunk_size}"]})
    at_rule = {"x": {"field": "tokens", "type": "quantitative"}}
    rule = {"data": {"name": "chunk-size"}, "mark": {"type": "rule", "color": "#d33", "strokeDash": [5, 3], "size": 2},
            "encoding": at_rule}
    right_of_rule = bool(domain) and chunk_size < 0.7 * domain[1]  # else the label would leave the plot
    # above the plot, where no bar reaches (inside it, the tallest bar hid it)
    label = {"data": {"name": "chunk-size"}, "mark": {
        "type": "text", "align": "left" if right_of_rule else "right", "dx": 4 if right_of_rule else -4, "dy": -3,
        "color": "#d33", "baseline": "bottom"}, "encoding": {**at_rule, "y": {"value": 0},
                                                           "text": {"field": "label", "type": "nominal"}}}
    return {"height": CHART_HEIGHT, "layer": [bars, rule, label], "datasets": datasets}


def source_chart(frame: pd.DataFrame, score_title: str = "score (cosine)") -> dict:
    """Return hits per document (bars) beside best and mean score (points), one row per document (a Vega-Lite
    spec, written out rather than built with Altair, whose validation cost more than the search it shows)."""
    height = max(60, 28 * len(frame))
    documents = list(frame["document"])
    y = {"field": "document", "type": "nominal", "sort": documents, "title": None}
    tooltip = [{"field": "document", "type": "nominal"}, {"field": "hits", "type": "quantitative"},
               {"field": "best", "type": "quantitative", "format": ".3f"},
               {"field": "mean", "type": "quantitative", "format": ".3f"}]
    hits = {"data": {"name": "documents"}, "mark": {"type": "bar", "color": "#4c78a8"}, "height": height, "width": 260,
            "encoding": {"y": {**y, "axis": {"labelLimit": 260}},
                         "x": {"field": "hits", "type": "quantitative", "title": "hits", "axis": {"tickMinStep": 1}},
                         "tooltip": tooltip}}
    melted = frame.melt(id_vars=["document"], value_vars=["best", "mean"], var_name="score", value_name="value")
    scores = {"data": {"name": "scores"}, "mark": {"type": "point", "size": 90, "filled": True}, "height": height,
              "width": 260, "encoding": {
                  "y": {**y, "axis": None},
                  "x": {"field": "value", "type": "quantitative", "title": score_title, "scale": {"zero": False}},
                  "color": {"field": "score", "type": "nominal", "scale": {"range": ["#e45756", "#9ecae9"]},
                            "legend": {"orient": "top"}},
                  "tooltip": [{"field": "document", "type": "nominal"}, {"field": "score", "type": "nominal"},
                              {"field": "value", "type": "quantitative", "format": ".3f"}]}}
    return {"hconcat": [hits, scores], "resolve": {"scale": {"y": "shared"}},
            "datasets": {"documents": frame, "scores": melted}}


def chunked_text_html(text: str, parts: Sequence[Segment], first: int, last: int,
                      unread: dict[int, int] | None = None) -> str:
    """Return the escaped text of chunks first..last with a badge where each chunk starts and overlap marked;
    unread maps a chunk to the offset where its model stops reading: text no chunk reads is struck through."""
    unread = unread or {}
    shown = [p for p in parts if any(first <= i <= last for i in p.chunks)]
    if not shown:
        return ""
    low, high = shown[0].start, shown[-1].end
    pieces: list[str] = []
    started: set[int] = set()
    for part in parts:
        if part.start < low or part.end > high:
            continue
        for index in part.chunks:
            if index not in started and first <= index <= last:
                started.add(index)
                pieces.append(f'<span class="rl-badge">#{index}</span>')
        # the text is read up to `stop` by at least one of its chunks; after it, by none of them
        stop = max((unread.get(i, part.end) for i in part.chunks), default=part.end)
        stop = min(max(stop, part.start), part.end)
        pieces.append(_piece(text[part.start : stop], part.chunks))
        if stop < part.end:
            pieces.append(f'<span class="rl-cut" title="the model never reads this">{html.escape(text[stop:part.end])}'
                          "</span>")
    return f'{_DOC_STYLE}<div class="rl-doc">{"".join(pieces)}</div>'


def child_marked_html(text: str, start: int, end: int) -> str:
    """Return a chunk's escaped text with the span start..end (the child that matched the query) marked."""
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    marked = (f'<mark class="rl-child" title="the child that matched the query">{html.escape(text[start:end])}'
              "</mark>") if end > start else ""
    return (f'{_DOC_STYLE}<div class="rl-doc">{html.escape(text[:start])}{marked}{html.escape(text[end:])}'
            "</div>")


def _piece(text: str, chunks: Sequence[int]) -> str:
    """Return escaped text marked as overlap (two or more chunks), as its chunk's colour, or plain (none)."""
    body = html.escape(text)
    if not body:
        return ""
    if len(chunks) >= 2:
        shared = ", ".join(f"#{i}" for i in chunks)
        return f'<mark class="rl-overlap" title="overlap of chunks {shared}">{body}</mark>'
    if chunks:
        return f'<span style="background:{CHUNK_COLOURS[chunks[0] % 2]}">{body}</span>'
    return body


_DOC_STYLE = (
    "<style>.rl-doc{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:0.85rem;line-height:1.55;"
    "max-height:560px;overflow-y:auto;padding:0.75rem;border:1px solid #ddd;border-radius:0.5rem}"
    f".rl-overlap{{background:{OVERLAP_COLOUR};padding:0;border-bottom:2px solid #d9a400}}"
    f".rl-child{{background:{CHILD_COLOUR};padding:0;border-bottom:2px solid #2e7d32}}"
    ".rl-cut{background:#eee;color:#888;text-decoration:line-through;text-decoration-color:#bbb}"
    ".rl-badge{display:inline-block;font-size:0.7rem;font-weight:600;color:#fff;background:#4c78a8;"
    "border-radius:0.3rem;padding:0 0.3rem;margin:0 0.2rem 0 0.1rem;font-family:sans-serif}</style>"
)


def legend_html() -> str:
    """Return the legend for chunked_text_html (no document text in it)."""
    return (
        '<div style="font-size:0.8rem;margin-bottom:0.3rem">'
        '<span style="background:#4c78a8;color:#fff;border-radius:0.3rem;padding:0 0.3rem">#n</span> chunk n starts'
        f' &nbsp; <span style="background:{CHUNK_COLOURS[0]};padding:0 0.3rem">even</span>'
        f' <span style="background:{CHUNK_COLOURS[1]};padding:0 0.3rem">odd chunk</span>'
        f' &nbsp; <span style="background:{OVERLAP_COLOUR};padding:0 0.3rem">overlap</span> (text in two chunks)'
        ' &nbsp; <span style="background:#eee;color:#888;text-decoration:line-through;padding:0 0.3rem">cut off</span>'
        " (the model never reads it)</div>"
    )
