"""The Embedding map page's parts: the cached map, the Altair scatter, its caption and the clicked chunk.

Chunk text only reaches the browser as data of the chart (its tooltip, which Vega renders as text) or
through st.code; never as Markdown.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from rag.embeddings import Embedder
from rag.reports import EmbeddingMap, embedding_map
from rag.retrieval import SearchRequest
from rag.store import Store
from ui import errors, render
from ui.parts import chunk_text
from ui.render import counted, md
from ui.workspace import Workspace

METHOD_LABELS = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}
COLOUR_FIELDS = {"document": "document", "heading": "heading"}
COLOUR_HELP = ("Heading: each document's headings at the first level that splits it (a Markdown file under one # "
               "title is coloured by its ## headings).")
# A group is a colour and a shape: tableau20 (its red left to the query) with each of SHAPES in turn, so documents
# past the 19th colour keep a look of their own; the rarest values beyond MAX_GROUPS share one grey "other"
SHAPES = ("circle", "square", "triangle-up", "diamond", "triangle-down", "cross", "wedge")
MAX_COLOURS = 19
MAX_GROUPS = MAX_COLOURS * len(SHAPES)
OTHER = "(other)"
LEGEND_ROWS = 12  # legend entries per column: 12 of about 30 px fit beside the map (HEIGHT), title included
LEGEND_CHARS = (28, 16)  # a legend label's characters in one column, in several: shortened in the middle to fit
LEGEND_PIXELS = (200, 120)  # the legend's label width (labelLimit) that holds them, so Vega never cuts one
QUERY_COLOUR = "#d62728"
HEIGHT = 400
NEAR = (0.03, 0.045)  # hits closer than this (shares of the map's width, height) share one rank label
CHAR = 0.012  # the width of one label character as a share of the map (12 px text on a map about 600 px wide)


@st.cache_data(max_entries=16, show_spinner=False)
def compute(_store: Store, _embedder: Embedder | None, key: tuple, collection: str, points: int, sample: int,
            method: str, query: str | None, top_k: int, mode: str, fusion: str) -> EmbeddingMap:
    """Return the map; key names the store, its state and the embedder (location, changes, model id)."""
    request = SearchRequest(mode=mode, fusion=fusion, top_k=top_k)
    return embedding_map(_store, collection, _embedder, query, sample, method, request=request)


def frame(emap: EmbeddingMap, colour_by: str) -> pd.DataFrame:
    """Return one row per point with the colour group (rarest groups past MAX_GROUPS become "(other)")."""
    data = pd.DataFrame([{"x": p.x, "y": p.y, "document": p.document_title or p.document_id,
                          "document_id": p.document_id, "heading": p.heading or "(no heading)",
                          "heading path": render.heading_label(p.heading_path), "chunk": p.chunk_index,
                          "starts with": p.preview, "hit": p.hit_rank, "is_hit": int(p.is_hit)} for p in emap.points],
                        columns=["x", "y", "document", "document_id", "heading", "heading path", "chunk",
                                 "starts with", "hit", "is_hit"])
    counts = data[colour_by].value_counts()
    keep = set(counts.index[: MAX_GROUPS - 1]) if len(counts) > MAX_GROUPS else set(counts.index)
    data["colour"] = data[colour_by].where(data[colour_by].isin(keep), OTHER)
    groups = data["colour"].unique()
    short = legend_labels(list(groups), LEGEND_CHARS[len(groups) > LEGEND_ROWS])
    data["colour"] = data["colour"].map(short)  # the full name is in the tooltip (document, heading path)
    return data


def legend_labels(names: list[str], limit: int) -> dict[str, str]:
    """Return each name as a legend label of at most limit characters: its start and its end around "…"
    ("hausarbeit-…-jura.pdf"), each label another; a name that would read as another's is kept whole."""
    def cut(name: str) -> str:
        if len(name) <= limit:
            return name
        tail = (limit - 1) // 3
        return name[: limit - 1 - tail].rstrip() + "…" + name[len(name) - tail:].lstrip()

    labels = {name: cut(name) for name in names}
    taken = list(labels.values())
    return {name: label if taken.count(label) == 1 else name for name, label in labels.items()}


def explained_shares(explained: tuple[float, float]) -> tuple[str, str, str]:
    """Return the two axes' shares of the variance and their total as shown ("11.7%", "11.1%", "22.8%"): the total
    adds up the rounded parts (the sum of the exact ones rounded, 22.7%, read as a slip beside 11.7% + 11.1%)."""
    tenths = [round(share * 1000) for share in explained]
    return tuple(f"{t / 10:.1f}%" for t in (*tenths, sum(tenths)))


def axis_titles(emap: EmbeddingMap) -> tuple[str, str]:
    if emap.method == "pca" and emap.explained:
        first, second, _ = explained_shares(emap.explained)
        return (f"PC 1 ({first} of the variance)", f"PC 2 ({second})")
    name = METHOD_LABELS.get(emap.method, emap.method)
    return f"{name} 1", f"{name} 2"


def chart(emap: EmbeddingMap, data: pd.DataFrame, colour_by: str) -> alt.LayerChart:
    """Return the scatter: chunks coloured by colour_by, hits ringed and numbered, the query as a red cross."""
    x_title, y_title = axis_titles(emap)
    labels = emap.method == "pca"  # t-SNE / UMAP coordinates have no meaning of their own
    groups = list(data["colour"].value_counts().index)
    groups = [g for g in groups if g != OTHER] + ([OTHER] if OTHER in groups else [])
    named = [g for g in groups if g != OTHER]
    palette = alt.Scale(domain=groups, range=[*(_TABLEAU20[i % MAX_COLOURS] for i in range(len(named))),
                                              *(["#bbbbbb"] if OTHER in groups else [])])
    shapes = alt.Scale(domain=groups, range=[*(SHAPES[i // MAX_COLOURS] for i in range(len(named))),
                                             *(["circle"] if OTHER in groups else [])])
    columns = -(-len(groups) // LEGEND_ROWS)  # every group listed, in columns beside the map's height
    legend = alt.Legend(orient="right", labelLimit=LEGEND_PIXELS[columns > 1], symbolLimit=len(groups),
                        columns=columns)
    x = alt.X("x:Q", title=x_title, scale=alt.Scale(zero=False, nice=False), axis=alt.Axis(labels=labels, grid=False))
    y = alt.Y("y:Q", title=y_title, scale=alt.Scale(zero=False, nice=False), axis=alt.Axis(labels=labels, grid=False))
    pick = alt.selection_point(name="chunk", fields=["document_id", "chunk"], on="click", clear="dblclick")
    points = alt.Chart(data).mark_point(filled=True).encode(
        x=x, y=y,  # colour and shape share one field and title: one legend of coloured shapes
        color=alt.Color("colour:N", scale=palette, title=COLOUR_FIELDS[colour_by], legend=legend),
        shape=alt.Shape("colour:N", scale=shapes, title=COLOUR_FIELDS[colour_by], legend=legend),
        size=alt.condition("datum.is_hit", alt.value(190), alt.value(36)),
        stroke=alt.condition("datum.is_hit", alt.value("#111111"), alt.value("transparent")),
        strokeWidth=alt.condition("datum.is_hit", alt.value(2), alt.value(0)),
        opacity=alt.condition(pick, alt.value(0.8), alt.value(0.2)),
        order=alt.Order("is_hit:Q"),
        tooltip=["document", "heading path", "chunk", alt.Tooltip("hit:Q", title="hit rank"), "starts with"],
    ).add_params(pick)
    ranks = alt.Chart(rank_labels(data)).mark_text(dx=10, dy=-10, align="left", fontSize=12, fontWeight="bold",
                                                   color="#111111").encode(x="x:Q", y="y:Q", text="label:N")
    layers = [points, ranks]
    if emap.query_point is not None:
        where = pd.DataFrame({"x": [emap.query_point[0]], "y": [emap.query_point[1]], "label": ["query"]})
        layers.append(alt.Chart(where).mark_point(shape="cross", size=420, filled=True, color=QUERY_COLOUR,
                                                  stroke="white", strokeWidth=1).encode(x="x:Q", y="y:Q"))
        layers.append(alt.Chart(where).mark_text(dx=14, dy=0, align="left", fontSize=13, fontWeight="bold",
                                                 color=QUERY_COLOUR).encode(x="x:Q", y="y:Q", text="label:N"))
    return alt.layer(*layers).properties(height=HEIGHT)


def rank_labels(data: pd.DataFrame) -> pd.DataFrame:
    """Return one label per group of hits that lie too close for a number each ("2, 5" at the better one's place).

    A label starts just right of its hit and is about CHAR of the map's width per character: a hit whose own
    number would fall on it (less than NEAR apart beyond its end, or NEAR up or down) joins its label.
    """
    hits = data[data["is_hit"] == 1].sort_values("hit")
    width = (data["x"].max() - data["x"].min()) or 1.0
    height = (data["y"].max() - data["y"].min()) or 1.0
    groups: list[tuple[float, float, list[int]]] = []
    for x, y, rank in zip(hits["x"], hits["y"], hits["hit"], strict=True):
        for gx, gy, ranks in groups:
            end = len(", ".join(map(str, ranks))) * CHAR
            if -NEAR[0] < (x - gx) / width < end + NEAR[0] and abs(y - gy) / height < NEAR[1]:
                ranks.append(int(rank))
                break
        else:
            groups.append((x, y, [int(rank)]))
    return pd.DataFrame([{"x": x, "y": y, "label": ", ".join(map(str, ranks))} for x, y, ranks in groups],
                        columns=["x", "y", "label"])


def caption(emap: EmbeddingMap, data: pd.DataFrame, colour_by: str, mode_label: str, top_k: int) -> str:
    """Return what the map shows, in words (the query escaped)."""
    shown = f"{len(emap.points):,} of {counted(emap.total, 'chunk')}" if emap.sampled else (
        f"all {counted(len(emap.points), 'chunk')}" if len(emap.points) != 1 else "the one chunk")
    parts = [f"{shown} of '{md(emap.collection)}' · {METHOD_LABELS.get(emap.method, emap.method)}"]
    if emap.explained:
        parts.append(f"the two axes explain {explained_shares(emap.explained)[2]} of the variance, so near on the map "
                     "is only roughly near in the embedding")
    groups = data[colour_by].nunique()
    parts.append(f"colour: {counted(groups, COLOUR_FIELDS[colour_by])}"
                 + (f", {MAX_COLOURS} colours × {len(SHAPES)} shapes" if groups > MAX_COLOURS else "")
                 + (f" (the rarest past {MAX_GROUPS - 1} in grey)" if groups > MAX_GROUPS else ""))
    if emap.query:
        found = int(data["is_hit"].sum())
        parts.append(f"{render.counted(found, 'hit')} of “{md(emap.query)}” ({mode_label}, top {top_k}) ringed and "
                     "numbered; "
                     "the red cross is the query" + ("" if mode_label == "Dense" else
                                                     "; a hit far from it was found by its keywords"))
    return " · ".join(parts) + ". Hover a point for its start; click one to read it (double-click clears)."


def picked_chunk(ws: Workspace, event) -> None:
    """Draw the full text of the chunk clicked on the map, if one is."""
    chosen = ((event or {}).get("selection") or {}).get("chunk") or []
    if not chosen:
        return
    document_id, index = chosen[0].get("document_id"), chosen[0].get("chunk")
    with errors.reported() as report:
        chunks = ws.document_chunks(document_id)
    if report.failed:
        return
    chunk = next((c for c in chunks if c.chunk_index == index), None)
    if chunk is None:
        return
    st.markdown(f"**{md(chunk.document_title)}** · chunk {index} · {md(render.heading_label(chunk.heading_path))}")
    chunk_text.show(chunk, chunks, height=min(400, 60 + len(chunk.content) // 4))


# Vega's tableau20, the ten strong hues first (neighbouring groups stay distinct), red last (the query is red)
_TABLEAU20 = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#b79a20", "#439894", "#d67195", "#9e765f", "#79706e",
              "#9ecae9", "#ffbf79", "#88d27a", "#d6a5c9", "#f2cf5b", "#83bcb6", "#fcbfd2", "#d8b5a5", "#bab0ac",
              "#ff9d98", "#e45756"]
