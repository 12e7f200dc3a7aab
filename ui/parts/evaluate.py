"""The pieces of the Evaluate page: the query set and documents to measure on, the sweep and its results (table,
charts, where answers ranked, failures, exports), and the tuning of hybrid search's fusion."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import altair as alt
import pandas as pd
import streamlit as st

from rag.chunking import DEFAULT_CHILD_SIZE
from rag.documents import Document, SourceFile
from rag.embeddings import EmbeddingCache, default_cache_dir
from rag.evaluation import (
    METRICS,
    Query,
    SweepResult,
    collection_documents,
    import_squad,
    is_sweep_collection,
    load_documents,
    load_query_set,
    parse_grid,
    parse_ks,
    parse_modes,
    query_set_paths,
    relevant_chunks,
    safe_name,
    sweep_input,
    tune_fusion,
)
from rag.reports import rank_rows, sweep_report
from rag.rerank import DEFAULT_DEPTH
from ui import charts, errors, resources, settings, state
from ui.jobs.sweep import SweepJob, submit
from ui.parts import chunk_text, live_jobs, page_view, synthetic
from ui.parts import evaluate_inputs as inputs
from ui.parts import funnel as funnel_part
from ui.parts import rerank as rerank_part
from ui.parts.judge_eval import hole_words
from ui.render import EMPTY_CELL, counted, md, plural
from ui.workspace import Workspace

RESULT = "evaluate_result"  # the last SweepResult of this session
RESULT_INPUTS = "evaluate_result_inputs"  # (query set, Documents.key) of RESULT, and them in words
COLLECTION = "evaluate_collection"  # the chosen collection of "A collection"
SWEEP_SEEN = "evaluate_sweep_seen"  # id of the newest sweep job whose result this session took
CANCEL_HELP = ("Stops at the next embedding slice or configuration; the collections of the configurations it "
               "finished stay and are reused by the next run.")
MODE_HELP = ("Each mode is a row per configuration, searched in the same collection: dense = embeddings, "
             "sparse = BM25 keywords, hybrid = both lists fused: convex (normalised scores added), rrf (by rank), "
             "dbsf (by scores normalised by their spread).")


def take_result(result: SweepResult, inputs: tuple = ()) -> None:
    """Make result the page's result (of inputs: see ran_on). The choices made on the one before (a row, a k, a
    threshold) do not carry over: their widgets are keyed by the result (ui.state.result_key)."""
    st.session_state.pop(funnel_part.FUNNELS, None)
    st.session_state[RESULT] = result
    st.session_state[RESULT_INPUTS] = inputs


def result_query_set() -> str:
    """Return the query set of the page's result (its file name made safe), "" when not known."""
    kept = st.session_state.get(RESULT_INPUTS)
    return kept[0][0] if kept else ""


def ran_on(queries: list[Query], query_set: str, documents: Documents) -> tuple:
    """Return the inputs a sweep runs on: (query set, its size, which documents) and them in words."""
    return (safe_name(query_set), len(queries), documents.key), f"{query_set} on {documents.label}"


def earlier_inputs(source: tuple | None, documents: Documents | None) -> None:
    """Say so when the result shown is of other inputs than the ones above it (changed since it ran)."""
    kept = st.session_state.get(RESULT_INPUTS)
    if not kept:
        return
    now = ran_on(source[0], source[2], documents)[0] if source and documents else None
    if now != kept[0]:
        st.warning(md(f"This result is of earlier inputs: {kept[1]}. The query set or the documents above are "
                      "others now; run the sweep to measure them."), icon=":material/history:")


def read_query_source() -> tuple[list[Query], list[Document] | None, str] | None:
    """Draw the query-set inputs; return (queries, documents of a SQuAD file or None, name), or None."""
    left, right = st.columns([1, 1])
    how = left.radio("Query set", ["Upload", "Sample folder", synthetic.CHOICE], horizontal=True,
                     key="evaluate_query_from", persist_state="session")
    if how == synthetic.CHOICE:  # made under "Make a synthetic query set" (ui.parts.synthetic)
        return synthetic.query_source(right)
    if how == "Upload":
        file = right.file_uploader("Query set (.jsonl, .csv) or SQuAD-style .json", type=["jsonl", "csv", "json"],
                                   key="evaluate_query_file")
        if file is not None:
            name, data = file.name, file.getvalue()
            inputs.uploaded(name, data)
        elif (path := inputs.kept()) is not None:  # uploaded before a reload: kept under the data root
            name, data = path.name, path.read_bytes()
            right.caption(f"Using {md(name)} as uploaded earlier; upload another to replace it.")
        else:
            return None
    else:
        folder = settings.sample_dir()
        paths = query_set_paths(folder) if folder else []
        if not paths:
            right.info("The sample folder holds no query sets (.jsonl, .csv) or SQuAD .json files. Upload one.")
            return None
        path = right.selectbox("File", paths, format_func=lambda p: str(p.relative_to(folder)), key="evaluate_sample",
                               persist_state="session")
        name, data = path.name, path.read_bytes()
    if not name.lower().endswith(".json"):
        queries = load_query_set(data, name)
        right.caption(f"{len(queries)} queries in {md(name)}.")
        return queries, None, name
    articles = right.number_input("SQuAD articles to use", 1, 1000, 3, key="evaluate_articles", persist_state="session",
                                  help="Each article becomes one document; fewer articles make a faster run.")
    documents, queries = sweep_input(import_squad(data, name, int(articles)))
    right.caption(f"{len(queries)} questions on {len(documents)} articles of {md(name)}.")
    return queries, documents, name


@dataclass(frozen=True)
class Documents:
    """What loads the chosen documents (called on Run), the collection they are read from (else None), and which
    they are: key tells two choices apart, label names them in words."""

    load: Callable[[], list[Document]]
    collection: str | None = None
    key: str = ""
    label: str = ""

    def __call__(self) -> list[Document]:
        return self.load()


def read_documents(ws: Workspace, squad_documents: list[Document] | None) -> Documents | None:
    """Draw the document inputs; return what loads the chosen documents (on Run), or None when none are chosen."""
    choices = (["The SQuAD articles"] if squad_documents else []) + ["A collection", "Upload documents"]
    left, right = st.columns([1, 1])
    key = "evaluate_documents_from" + ("_squad" if squad_documents else "")  # a SQuAD file starts on its articles
    how = left.radio("Documents", choices, horizontal=True, key=key, persist_state="session")
    if how == "The SQuAD articles":
        return Documents(lambda: squad_documents, key=f"squad {len(squad_documents)}",
                         label=f"its {len(squad_documents)} SQuAD articles")
    if how == "A collection":
        names = [c.name for c in ws.collections if c.points and not is_sweep_collection(c.name)]
        if not names:
            right.info("No collection holds documents yet. Upload documents here or on the Upload page.")
            return None
        if st.session_state.get(COLLECTION) not in names:  # first drawn, or gone: the sidebar's collection
            st.session_state[COLLECTION] = ws.collection if ws.collection in names else names[0]
        name = right.selectbox("Collection", names, key=COLLECTION, persist_state="session",
                               help="Its documents are rebuilt from their stored chunks and chunked anew. A "
                               "configuration at the collection's own settings searches it as stored: no chunk is "
                               "embedded, only the questions.")
        return Documents(lambda: collection_documents(ws.store, name), name, f"collection {name}",
                         f"the collection '{name}'")
    files = right.file_uploader("Documents", type=["pdf", "md", "markdown", "txt"], accept_multiple_files=True,
                                key="evaluate_document_files")
    if files:  # kept under the data root: a reload finds them (ui.parts.evaluate_inputs)
        for note in inputs.documents_uploaded([(f.name, f.getvalue()) for f in files]):
            right.warning(md(note))
        return Documents(lambda: load_documents([SourceFile(f.name, f.getvalue()) for f in files]),
                         key=f"upload {st.query_params.get(inputs.DOCUMENTS)}",
                         label=counted(len(files), "uploaded document"))
    if not (kept := inputs.kept_documents()):
        return None
    inputs.show_kept(right, kept)
    return Documents(lambda: load_documents([SourceFile(d.name, d.path.read_bytes()) for d in kept]),
                     key=f"upload {st.query_params.get(inputs.DOCUMENTS)}",
                     label=counted(len(kept), "uploaded document"))


def run(ws: Workspace, documents: Documents, queries: list[Query], sizes: str, overlaps: str,
        ks: str, strategy: str, modes: list[str], rerank: tuple[str, int] = ("", 0), query_set: str = "") -> None:
    """Check the grid, then queue the sweep as a job of the app's process (ui.parts.live_jobs draws it): a click
    or a reload never stops it."""
    with errors.reported() as report:
        # a collection is searched at its own child size; uploaded documents as Upload and `rag sweep` would cut them
        children = ws.store.child_size(documents.collection) if documents.collection else DEFAULT_CHILD_SIZE
        configs, skipped = parse_grid(sizes, overlaps, strategy, child_sizes=[children])
        cuts = parse_ks(ks)
        searches = rerank_part.with_rerank(parse_modes(modes), rerank[0])
        reranker = rerank_part.reranker(rerank[0])
        embedder = ws.embedder()
    if report.failed:
        return
    submit(live_jobs.queue(), SweepJob(documents, list(queries), configs, embedder, ws.store, ws.location,
                                       EmbeddingCache(default_cache_dir(ws.store)), cuts, searches, skipped,
                                       reranker, rerank[1] or DEFAULT_DEPTH, query_set,
                                       collection=documents.collection, inputs=ran_on(queries, query_set, documents),
                                       params=inputs.params()))


def answer_ranks(result: SweepResult) -> None:
    """Draw where each query's relevant chunk ranked and scored, for one row, with an optional threshold line."""
    left, right = st.columns([2, 1])
    rows = {r.label: r for r in result.results}
    label = left.selectbox("Configuration and mode", list(rows), index=list(rows).index(result.best().label),
                           key=state.result_key("evaluate_rank_config", result))
    threshold = right.number_input("Threshold line", value=None, step=0.01, format="%.3f",
                                   key=state.result_key("evaluate_threshold", result),
                                   placeholder="none", help="Draw a score threshold to see which answers it would cut.")
    row = rows[label]
    ranked = rank_rows(row.evaluation, threshold)
    missing = sum(r.rank is None for r in ranked)
    below = sum(r.above_threshold is False for r in ranked)
    st.altair_chart(charts.rank_chart(row, threshold), width="stretch")
    st.caption(f"Dots: the score of each query's first relevant chunk, coloured by its rank; grey ticks: the "
               f"query's top score (the gap is what the answer lost to it). {missing} of {len(ranked)} queries had "
               f"no relevant chunk within the top {row.evaluation.ks[-1]} and {plural(missing, 'is', 'are')} not "
               "drawn"
               + (f"; the threshold would cut {below} found answers." if threshold is not None else "."))


def failures(ws: Workspace, result: SweepResult) -> None:
    """Draw the queries whose relevant chunk was not in the top k, and the chunks of the one selected."""
    left, right = st.columns([2, 1])
    configs = {r.label: r for r in result.results}
    best = result.best()
    label = left.selectbox("Configuration and mode", list(configs), index=list(configs).index(best.label),
                           key=state.result_key("evaluate_failure_config", result))
    k = right.selectbox("Not in the top k", result.ks, index=result.ks.index(5) if 5 in result.ks else 0,
                        key=state.result_key("evaluate_failure_k", result))
    chosen = configs[label]
    missed = chosen.evaluation.failures(k)
    has = plural(len(missed), "has", "have")
    st.caption(f"{len(missed)} of {counted(result.queries, 'query', 'queries')} {has} no relevant chunk "
               f"in the top {k}. Rank and score "
               f"are the first relevant chunk's, when it came within the top {result.ks[-1]}.")
    if not missed:
        return
    frame = pd.DataFrame([{"query": o.query.text, "expected": ", ".join(o.query.documents),
                           "answer": o.query.answer or "", "rank": o.rank, "score": o.score, "top score": o.top_score,
                           "top hit": o.hits[0].document_title if o.hits else ""} for o in missed])
    selection = st.dataframe(frame, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                             placeholder=EMPTY_CELL,
                             key=state.table_key("evaluate_failures", (label, k, *(o.query.text for o in missed))),
                             height=min(38 + 35 * len(frame), 390),
                             column_config={"score": st.column_config.NumberColumn(format="%.3f"),
                                            "top score": st.column_config.NumberColumn(format="%.3f")})
    rows = [r for r in (selection.selection.rows if selection else []) if r < len(missed)]
    if not rows:
        st.caption("Select a row to see the chunk that should have been found and the chunk that came first.")
        return
    outcome = missed[rows[0]]
    expected, top = st.columns(2)
    with expected:
        st.markdown("**Should have been found**")
        chunks = errors.attempt(relevant_chunks, ws.store, chosen.collection, outcome.query) or []
        query = outcome.query
        for chunk in chunks:
            where = (f" · the answer starts at character {query.answer_start - chunk.start} of it"
                     if query.answer_start is not None and chunk.start is not None else "")
            st.caption(md(f"{chunk.document_title} · chunk {chunk.chunk_index}{where}"))
            chunk_text.show(chunk)
            answer = [(query.answer_start, query.answer_start + len(query.answer or ""))] if where else []
            page_view.span(ws.store, chunk, answer, "the answer", f"answer-{label}-{rows[0]}-{chunk.chunk_id}")
    with top:
        st.markdown("**Came first**")
        if outcome.hits:
            hit = outcome.hits[0]
            st.caption(md(f"{hit.document_title} · chunk {hit.chunk_index} · score {hit.score:.3f} "
                          f"({hit.score_kind or 'cosine'})"))
            chunk_text.show(hit)
            page_view.hit(ws.store, hit, f"first-{label}-{rows[0]}-{hit.chunk_id}")


def table_frame(result: SweepResult, metric: str) -> pd.DataFrame:
    """Return the sweep's table for the page: each row's standing on metric (best, tie, p) and its ± first."""
    frame = pd.DataFrame(result.table()).drop(columns=["embedder", "created_at", "collection"]).round(3)
    standing = [place.words() for place in result.standing(metric)]
    spread = [(r.evaluation.intervals[metric][1] - r.evaluation.intervals[metric][0]) / 2 for r in result.results]
    frame.insert(4, f"by {metric}", standing)
    frame.insert(5, f"± {metric}", [round(v, 3) for v in spread])
    hole = f"hole@{metric.split('@')[1]}"  # beside the score: how much of the top k no one has judged
    frame.insert(6, hole, frame.pop(hole))
    return frame


def results(ws: Workspace, result: SweepResult) -> None:
    """Draw the best configuration, the table, the charts, the failures and the exports."""
    left, right = st.columns([1, 1])
    metric = left.selectbox("Metric", METRICS, index=METRICS.index("mrr"),
                            key=state.result_key("evaluate_metric", result))
    k = right.selectbox("k", result.ks, index=len(result.ks) - 1, key=state.result_key("evaluate_k", result))
    chosen = f"{metric}@{k}"
    st.success(md(result.summary(chosen)))
    best = result.best(chosen)
    if best is not None:
        low, high = best.evaluation.intervals[chosen]
        st.caption(f"{chosen} of the best: {best.metrics[chosen]:.3f}, 95 % bootstrap interval {low:.3f}–{high:.3f} "
                   f"over its {result.queries} queries: on another set of questions like these, expect it there; "
                   f"{hole_words(best.evaluation, k, chosen)}.")
        st.markdown(f"**{md(result.tie_summary(chosen))}**")
    if best is not None and result.ties(chosen):  # the word is explained where a row is tied
        st.caption("Tied: a paired test over the same questions (each question's difference from the best; sign-"
                   "flip permutation test) cannot tell the two apart at the 5 % level. Pick among tied "
                   "configurations by what else matters: chunks the model reads whole, smaller contexts, speed.")
    for note in result.notes():
        st.info(md(note), icon=":material/info:")
    for note in result.skipped:
        st.caption(md(note))
    st.dataframe(table_frame(result, chosen), hide_index=True, width="stretch", placeholder=EMPTY_CELL)
    st.subheader(f"{chosen} with its 95 % interval")
    st.altair_chart(charts.interval_chart(result, chosen), width="stretch")
    st.caption(f"{result.queries} queries on {len(result.documents)} documents · {md(result.embedder)} · "
               f"modes {md(', '.join(result.modes))} · {md(result.created_at)} · queries embedded in "
               f"{result.query_seconds:.1f} s. Scores are on each mode's own scale (cosine, BM25, fused).")
    several = len(result.modes) > 1  # a panel per mode: each chart gets the page's whole width
    chart_left, chart_right = (st.container(), st.container()) if several else st.columns(2)
    with chart_left:
        st.subheader("hit@k by configuration" + (" and mode" if several else ""))
        st.altair_chart(charts.hit_chart(result), width="content" if several else "stretch")
    with chart_right:
        st.subheader(f"{chosen}: chunk_size × overlap")
        st.altair_chart(charts.heatmap(result, chosen), width="content" if several else "stretch")
    st.subheader("Time per configuration")
    st.altair_chart(charts.time_chart(result), width="stretch")
    rerank_part.effect(result, chosen)
    st.subheader("Where the answer ranked")
    answer_ranks(result)
    st.subheader("Failures")
    failures(ws, result)
    st.subheader("Export")
    stamp = result.created_at.replace(":", "")[:15]
    csv_column, json_column, html_column = st.columns(3)
    csv_column.download_button("Results as CSV", pd.DataFrame(result.table()).to_csv(index=False),
                               f"sweep-{stamp}.csv", "text/csv", icon=":material/table:")
    json_column.download_button("Results as JSON (with every query)",
                                json.dumps(result.to_json(per_query=True), ensure_ascii=False, indent=1),
                                f"sweep-{stamp}.json", "application/json", icon=":material/data_object:")
    html_column.download_button("Download report (HTML)", lambda: sweep_report(result, chosen),  # built on click
                                f"sweep-{stamp}.html", "text/html", icon=":material/slideshow:",
                                help=f"One self-contained page for slides or print: tables, charts with intervals, "
                                f"the best by {chosen} and its ties, the settings and the model.")


# ---- tuning the fusion ------------------------------------------------------------------------------------

TUNING = "evaluate_tuning"  # (collection, FusionTuning) of the last run in this session


def tuning(ws: Workspace, queries: list[Query] | None, collection: str | None) -> None:
    """Draw "tune the fusion" on the collection chosen under Documents (the one evaluated, not the sidebar's): run
    it, chart the weights, save the best one."""
    st.subheader("Tune hybrid search's fusion")
    info = next((c for c in ws.collections if c.name == collection), None)
    if info is None:
        st.caption("Tunes a stored collection's hybrid search: choose \"A collection\" under Documents above.")
        return
    if not info.sparse:
        st.caption(f"'{md(collection)}' has no keyword vectors, so it has no hybrid search to tune.")
        return
    st.caption(f"Fits the dense weight of the convex fusion on the query set above, on '{md(collection)}' as it "
               "is stored, 5-fold cross-validated; each question's two candidate lists are fetched once.")
    if queries is None:
        st.caption("Choose a query set first.")
        return
    if st.button(f"Tune on '{md(collection)}'", icon=":material/tune:", key="tune_fusion"):
        with errors.reported() as report, st.spinner("Searching every question once, then fusing with each weight…"):
            tuning = tune_fusion(queries, collection, ws.embedder_for(collection), store=ws.store)
        if report.failed:
            return
        st.session_state[TUNING] = (collection, tuning)
    saved = st.session_state.get(TUNING)
    if not saved or saved[0] != collection:
        return
    tuning = saved[1]
    frame = pd.DataFrame({"dense weight": list(tuning.by_weight), tuning.metric: list(tuning.by_weight.values())})
    chart = alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("dense weight:Q", scale=alt.Scale(domain=[0, 1]), title="dense weight (0 = keywords only)"),
        y=alt.Y(f"{tuning.metric}:Q", scale=alt.Scale(zero=False)), tooltip=list(frame))
    st.altair_chart(chart.properties(height=220), width="stretch")
    st.write(f"Best on all {tuning.queries} questions: **{tuning.best.spec}** ({tuning.metric} "
             f"{tuning.by_weight[tuning.best.weight]:.3f}). Chosen fold by fold and scored on the held-out fold, "
             f"the weight earns {tuning.metric} {tuning.cv_metric:.3f}: that is what to expect on new questions.")
    if st.button(f"Save {tuning.best.spec} as the fusion of '{md(collection)}'", key="save_fusion",
                 icon=":material/save:"):
        with errors.reported() as report:
            ws.store.save_collection_setting(collection, "fusion", tuning.best.spec)
        if report.failed:
            return
        resources.store_changed()
        st.toast(f"Searches of {md(collection)} now fuse with {tuning.best.spec}.")
