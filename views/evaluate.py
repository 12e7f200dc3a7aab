"""Evaluate: which chunk_size, overlap, top_k and search mode retrieve best on these documents, on a query set."""

from __future__ import annotations

import json
from collections.abc import Callable

import altair as alt
import pandas as pd
import streamlit as st

from rag.documents.loader import SourceFile
from rag.documents.model import Document
from rag.embeddings.cache import EmbeddingCache, default_cache_dir
from rag.errors import RagError
from rag.evaluation.metrics import METRICS, parse_ks
from rag.evaluation.modes import parse_modes
from rag.evaluation.queries import Query, load_query_set
from rag.evaluation.squad import import_squad, sweep_input
from rag.evaluation.sweep import (
    ConfigResult,
    SweepResult,
    collection_documents,
    grid,
    load_documents,
    parse_sizes,
    query_set_paths,
    relevant_chunks,
    run_sweep,
)
from rag.reports.scores import rank_rows
from rag.store.fusion import DEFAULT_FUSION
from ui import resources, settings, tuning_view, workspace
from ui.render import md

RESULT = "evaluate_result"  # the last SweepResult of this session
SWEEP_PREFIX = "sweep-"
RANK_COLOURS = ["#2f9e44", "#f59f00", "#f76707", "#e03131"]  # rank 1, 2–3, 4–5, deeper: strong enough on white
MODE_CHOICES = ["dense", "sparse", "hybrid-convex", "hybrid-rrf", "hybrid-dbsf"]
MODE_HELP = ("Each mode is a row per configuration, searched in the same collection: dense = embeddings, "
             "sparse = BM25 keywords, hybrid = both lists fused: convex (normalised scores added), rrf (by rank), "
             "dbsf (by scores normalised by their spread).")

ws = workspace.current()
st.title("Evaluate")
st.caption("Which chunk_size, overlap, top_k and search mode retrieve best on your documents? Give a query set "
           "that says what each question should find, pick documents and a grid; every configuration is chunked, "
           "embedded, indexed and searched in each mode, and scored with hit@k, recall@k, precision@k, MRR and "
           "nDCG.")


def read_query_source() -> tuple[list[Query], list[Document] | None, str] | None:
    """Draw the query-set inputs; return (queries, documents of a SQuAD file or None, name), or None."""
    left, right = st.columns([1, 1])
    how = left.radio("Query set", ["Upload", "Sample folder"], horizontal=True, key="evaluate_query_from")
    if how == "Upload":
        file = right.file_uploader("Query set (.jsonl, .csv) or SQuAD-style .json", type=["jsonl", "csv", "json"],
                                   key="evaluate_query_file")
        if file is None:
            return None
        name, data = file.name, file.getvalue()
    else:
        folder = settings.sample_dir()
        paths = query_set_paths(folder) if folder else []
        if not paths:
            right.info("The sample folder holds no query sets (.jsonl, .csv) or SQuAD .json files. Upload one.")
            return None
        path = right.selectbox("File", paths, format_func=lambda p: str(p.relative_to(folder)), key="evaluate_sample")
        name, data = path.name, path.read_bytes()
    if not name.lower().endswith(".json"):
        queries = load_query_set(data, name)
        right.caption(f"{len(queries)} queries in {md(name)}.")
        return queries, None, name
    articles = right.number_input("SQuAD articles to use", 1, 1000, 3, key="evaluate_articles",
                                  help="Each article becomes one document; fewer articles make a faster run.")
    documents, queries = sweep_input(import_squad(data, name, int(articles)))
    right.caption(f"{len(queries)} questions on {len(documents)} articles of {md(name)}.")
    return queries, documents, name


def read_documents(squad_documents: list[Document] | None) -> Callable[[], list[Document]] | None:
    """Draw the document inputs; return what loads the chosen documents (on Run), or None when none are chosen."""
    choices = (["The SQuAD articles"] if squad_documents else []) + ["A collection", "Upload documents"]
    left, right = st.columns([1, 1])
    key = "evaluate_documents_from" + ("_squad" if squad_documents else "")  # a SQuAD file starts on its articles
    how = left.radio("Documents", choices, horizontal=True, key=key)
    if how == "The SQuAD articles":
        return lambda: squad_documents
    if how == "A collection":
        names = [c.name for c in ws.collections if c.points and not c.name.startswith(SWEEP_PREFIX)]
        if not names:
            right.info("No collection holds documents yet. Upload documents here or on the Upload page.")
            return None
        index = names.index(ws.collection) if ws.collection in names else 0
        name = right.selectbox("Collection", names, index=index, key="evaluate_collection",
                               help="Its documents are rebuilt from their stored chunks and chunked anew.")
        return lambda: collection_documents(ws.store, name)
    files = right.file_uploader("Documents", type=["pdf", "md", "markdown", "txt"], accept_multiple_files=True,
                                key="evaluate_document_files")
    return (lambda: load_documents([SourceFile(f.name, f.getvalue()) for f in files])) if files else None


def run(documents: Callable[[], list[Document]], queries: list[Query], sizes: str, overlaps: str, ks: str,
        strategy: str, modes: list[str]) -> None:
    """Load the documents, run the sweep with a progress bar and keep its result in the session."""
    try:
        configs, skipped = grid(parse_sizes(sizes, "chunk sizes", 4), parse_sizes(overlaps, "overlaps", 0), strategy)
        cuts = parse_ks(ks)
        searches = parse_modes(modes)
    except ValueError as error:
        st.error(md(str(error)))
        return
    if not configs:
        st.error("Every overlap is at least its chunk size; use smaller overlaps.")
        return
    bar = st.progress(0.0, text="Reading the documents…")
    try:
        loaded = documents()
        bar.progress(0.0, text="Embedding the queries (the local model loads once, about 12 s)…")
        result = run_sweep(loaded, queries, configs, ws.embedder(), store=ws.store,
                           cache=EmbeddingCache(default_cache_dir(ws.store)), ks=cuts, skipped=skipped,
                           modes=searches, progress=lambda event: bar.progress(event.fraction, text=md(event.message)))
    except RagError as error:
        bar.empty()
        st.error(md(str(error)))
        return
    finally:
        resources.store_changed()  # the sweep made collections
    bar.empty()
    st.session_state[RESULT] = result


def per_mode(chart: alt.Chart | alt.LayerChart, result: SweepResult) -> alt.Chart | alt.FacetChart:
    """Return chart as it is for one search mode, else one panel per mode side by side (same scales)."""
    if len(result.modes) < 2:
        return chart
    return chart.properties(width=max(160, 560 // len(result.modes))).facet(
        column=alt.Column("mode:N", sort=result.modes, title=None))


def hit_chart(result: SweepResult) -> alt.Chart:
    """Return hit@k against k, one line per configuration: colour = chunk_size, dashes = overlap; a panel per mode."""
    frame = pd.DataFrame([{"chunk_size": r.config.chunk_size, "overlap": r.config.overlap, "mode": r.mode.label,
                           "k": k, "hit": r.metrics[f"hit@{k}"]} for r in result.results for k in result.ks])
    chart = alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("k:Q", scale=alt.Scale(domain=[0, result.ks[-1]]), axis=alt.Axis(values=list(result.ks))),
        y=alt.Y("hit:Q", title="hit@k", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("chunk_size:O", scale=alt.Scale(scheme="viridis")),
        strokeDash=alt.StrokeDash("overlap:O"),
        detail=["chunk_size:O", "overlap:O", "mode:N"],
        tooltip=["chunk_size", "overlap", "mode", "k", alt.Tooltip("hit:Q", format=".3f")],
    ).properties(height=300)
    return per_mode(chart, result)


def heatmap(result: SweepResult, metric: str) -> alt.Chart:
    """Return chunk_size x overlap coloured by metric, with the value in each cell; a panel per mode."""
    frame = pd.DataFrame([{"chunk_size": r.config.chunk_size, "overlap": r.config.overlap, "mode": r.mode.label,
                           "value": r.metrics[metric]} for r in result.results])
    base = alt.Chart().encode(x=alt.X("overlap:O"), y=alt.Y("chunk_size:O", sort="descending"))
    cells = base.mark_rect().encode(color=alt.Color("value:Q", title=metric, scale=alt.Scale(scheme="blues")),
                                    tooltip=["chunk_size", "overlap", "mode", alt.Tooltip("value:Q", format=".3f")])
    text = base.mark_text(fontSize=13).encode(text=alt.Text("value:Q", format=".3f"),
                                              color=alt.condition(alt.datum.value > 0.5, alt.value("white"),
                                                                  alt.value("black")))
    chart = alt.layer(cells, text, data=frame).properties(height=60 + 45 * frame["chunk_size"].nunique())
    return per_mode(chart, result)


def row_name(row: ConfigResult) -> str:
    return f"{row.config.chunk_size} / {row.config.overlap} · {row.mode.label}"


def time_chart(result: SweepResult) -> alt.Chart:
    """Return the seconds of each row split into chunking, embedding, indexing and searching."""
    frame = pd.DataFrame([{"configuration": row_name(r), "stage": stage, "seconds": seconds}
                          for r in result.results for stage, seconds in r.seconds.items()])
    return alt.Chart(frame).mark_bar().encode(
        y=alt.Y("configuration:N", sort=None, title="chunk_size / overlap · mode"),
        x=alt.X("sum(seconds):Q", title="seconds"), color=alt.Color("stage:N", sort=None),
        tooltip=["configuration", "stage", alt.Tooltip("seconds:Q", format=".2f")],
    ).properties(height=40 + 24 * len(result.results))


def rank_chart(row: ConfigResult, threshold: float | None) -> alt.LayerChart:
    """Return each query's answer-chunk score (dot, coloured by rank) against its top score (tick) and threshold."""
    depth = row.evaluation.ks[-1]
    found = [r for r in rank_rows(row.evaluation, threshold) if r.rank is not None]
    found.sort(key=lambda r: -r.score)
    bands = ["1", "2–3", "4–5", f"6–{depth}"]
    frame = pd.DataFrame([{"query #": i, "query": r.query[:80], "rank": r.rank, "score": r.score,
                           "top score": r.top_score, "gap": r.gap,
                           "rank band": bands[0 if r.rank == 1 else 1 if r.rank <= 3 else 2 if r.rank <= 5 else 3]}
                          for i, r in enumerate(found, 1)], columns=["query #", "query", "rank", "score", "top score",
                                                                     "gap", "rank band"])
    base = alt.Chart(frame).encode(x=alt.X("query #:Q", title="queries whose answer was found, by its score"))
    tooltip = ["query", "rank", alt.Tooltip("score:Q", format=".3f"), alt.Tooltip("top score:Q", format=".3f"),
               alt.Tooltip("gap:Q", format=".3f")]
    top = base.mark_tick(color="#888888", thickness=1.5, size=9, orient="horizontal").encode(
        y=alt.Y("top score:Q", title="score"), tooltip=tooltip)
    dots = base.mark_circle(size=40).encode(
        y="score:Q", tooltip=tooltip,
        color=alt.Color("rank band:N", sort=bands, scale=alt.Scale(domain=bands, range=RANK_COLOURS)))
    layers = [top, dots]
    if threshold is not None:
        layers.append(alt.Chart(pd.DataFrame({"threshold": [threshold]})).mark_rule(color="#d62728",
                                                                                      strokeDash=[4, 3]).encode(
            y="threshold:Q"))
    return alt.layer(*layers).properties(height=300)


def answer_ranks(result: SweepResult) -> None:
    """Draw where each query's relevant chunk ranked and scored, for one row, with an optional threshold line."""
    left, right = st.columns([2, 1])
    rows = {r.label: r for r in result.results}
    label = left.selectbox("Configuration and mode", list(rows), index=list(rows).index(result.best().label),
                           key="evaluate_rank_config")
    threshold = right.number_input("Threshold line", value=None, step=0.01, format="%.3f", key="evaluate_threshold",
                                   placeholder="none", help="Draw a score threshold to see which answers it would cut.")
    row = rows[label]
    ranked = rank_rows(row.evaluation, threshold)
    missing = sum(r.rank is None for r in ranked)
    below = sum(r.above_threshold is False for r in ranked)
    st.altair_chart(rank_chart(row, threshold), width="stretch")
    st.caption(f"Dots: the score of each query's first relevant chunk, coloured by its rank; grey ticks: the "
               f"query's top score (the gap is what the answer lost to it). {missing} of {len(ranked)} queries had "
               f"no relevant chunk within the top {row.evaluation.ks[-1]} and are not drawn"
               + (f"; the threshold would cut {below} found answers." if threshold is not None else "."))


def failures(result: SweepResult) -> None:
    """Draw the queries whose relevant chunk was not in the top k, and the chunks of the one selected."""
    left, right = st.columns([2, 1])
    configs = {r.label: r for r in result.results}
    best = result.best()
    label = left.selectbox("Configuration and mode", list(configs), index=list(configs).index(best.label),
                           key="evaluate_failure_config")
    k = right.selectbox("Not in the top k", result.ks, index=result.ks.index(5) if 5 in result.ks else 0,
                        key="evaluate_failure_k")
    chosen = configs[label]
    missed = chosen.evaluation.failures(k)
    st.caption(f"{len(missed)} of {result.queries} queries have no relevant chunk in the top {k}. Rank and score "
               f"are the first relevant chunk's, when it came within the top {result.ks[-1]}.")
    if not missed:
        return
    frame = pd.DataFrame([{"query": o.query.text, "expected": ", ".join(o.query.documents),
                           "answer": o.query.answer or "", "rank": o.rank, "score": o.score, "top score": o.top_score,
                           "top hit": o.hits[0].document_title if o.hits else ""} for o in missed])
    selection = st.dataframe(frame, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                             key="evaluate_failures", height=min(38 + 35 * len(frame), 390),
                             column_config={"score": st.column_config.NumberColumn(format="%.3f"),
                                            "top score": st.column_config.NumberColumn(format="%.3f")})
    rows = selection.selection.rows if selection else []
    if not rows:
        st.caption("Select a row to see the chunk that should have been found and the chunk that came first.")
        return
    outcome = missed[rows[0]]
    expected, top = st.columns(2)
    with expected:
        st.markdown("**Should have been found**")
        try:
            chunks = relevant_chunks(ws.store, chosen.collection, outcome.query)
        except RagError as error:
            st.error(md(str(error)))
            chunks = []
        query = outcome.query
        for chunk in chunks:
            where = (f" · the answer starts at character {query.answer_start - chunk.start} of it"
                     if query.answer_start is not None and chunk.start is not None else "")
            st.caption(md(f"{chunk.document_title} · chunk {chunk.chunk_index}{where}"))
            st.code(chunk.content, language=None, wrap_lines=True)
    with top:
        st.markdown("**Came first**")
        if outcome.hits:
            hit = outcome.hits[0]
            st.caption(md(f"{hit.document_title} · chunk {hit.chunk_index} · score {hit.score:.3f} "
                          f"({hit.score_kind or 'cosine'})"))
            st.code(hit.content, language=None, wrap_lines=True)


def results(result: SweepResult) -> None:
    """Draw the best configuration, the table, the charts, the failures and the exports."""
    left, right = st.columns([1, 1])
    metric = left.selectbox("Metric", METRICS, index=METRICS.index("mrr"), key="evaluate_metric")
    k = right.selectbox("k", result.ks, index=len(result.ks) - 1, key="evaluate_k")
    chosen = f"{metric}@{k}"
    st.success(md(result.summary(chosen)))
    for note in result.skipped:
        st.caption(md(note))
    st.dataframe(pd.DataFrame(result.table()).drop(columns=["embedder", "created_at", "collection"]).round(3),
                 hide_index=True, width="stretch")
    st.caption(f"{result.queries} queries on {len(result.documents)} documents · {md(result.embedder)} · "
               f"modes {md(', '.join(result.modes))} · {md(result.created_at)} · queries embedded in "
               f"{result.query_seconds:.1f} s. Scores are on each mode's own scale (cosine, BM25, fused).")
    chart_left, chart_right = st.columns(2)
    with chart_left:
        st.subheader("hit@k by configuration" + (" and mode" if len(result.modes) > 1 else ""))
        st.altair_chart(hit_chart(result), width="stretch")
    with chart_right:
        st.subheader(f"{chosen}: chunk_size × overlap")
        st.altair_chart(heatmap(result, chosen), width="stretch")
    st.subheader("Time per configuration")
    st.altair_chart(time_chart(result), width="stretch")
    st.subheader("Where the answer ranked")
    answer_ranks(result)
    st.subheader("Failures")
    failures(result)
    st.subheader("Export")
    stamp = result.created_at.replace(":", "")[:15]
    csv_column, json_column = st.columns(2)
    csv_column.download_button("Results as CSV", pd.DataFrame(result.table()).to_csv(index=False),
                               f"sweep-{stamp}.csv", "text/csv", icon=":material/table:")
    json_column.download_button("Results as JSON (with every query)",
                                json.dumps(result.to_json(per_query=True), ensure_ascii=False, indent=1),
                                f"sweep-{stamp}.json", "application/json", icon=":material/data_object:")


try:
    source = read_query_source()
    documents = read_documents(source[1] if source else None)
except RagError as error:
    st.error(md(str(error)))
    st.stop()

with st.form("evaluate_grid", border=False):
    cols = st.columns([1.2, 1.2, 1, 1])
    sizes = cols[0].text_input("chunk_size values", "200,400,800", key="evaluate_sizes")
    overlaps = cols[1].text_input("overlap values", "0,50,100", key="evaluate_overlaps")
    ks = cols[2].text_input("k values", "1,3,5,10", key="evaluate_ks")
    strategy = cols[3].selectbox("Strategy", ["structure", "tokens"], key="evaluate_strategy")
    modes = st.multiselect("Search modes", MODE_CHOICES, default=[f"hybrid-{DEFAULT_FUSION}"],
                           key="evaluate_modes", help=MODE_HELP)
    st.caption(f"Embedder: {md(ws.spec)} (from the sidebar). Each configuration gets its own collection "
               f"(`{SWEEP_PREFIX}…`), searched in every chosen mode and reused on the next run; embeddings are "
               "cached.")
    submitted = st.form_submit_button("Run the sweep", type="primary", icon=":material/play_arrow:")

if submitted:
    if source is None or documents is None:
        st.info("Choose a query set and documents first.")
    else:
        run(documents, source[0], sizes, overlaps, ks, strategy, modes)

if RESULT in st.session_state:
    results(st.session_state[RESULT])
else:
    st.caption("Choose a query set, documents and a grid, then run the sweep.")
st.divider()
tuning_view.show(ws, source[0] if source else None)
