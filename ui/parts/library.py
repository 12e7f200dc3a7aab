"""The pieces of the Library: the collection's saved search defaults (and the run that chose them), its HNSW index
(state, recall, the build as a job), the repair of
a document an interrupted ingest left incomplete (delete the rest, or ingest again), and the collections sweeps
made, deleted one whole sweep at a time."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rag import pipeline
from rag.chunking import DEFAULT_CHUNK_SIZE, ChunkSettings
from rag.evaluation import sweep_groups
from rag.runs import RunLog, collection_defaults, runs_path_of
from rag.store import MIN_RECALL, DocumentInfo, IndexState, delete_collection, delete_document
from ui import errors, jobs, resources, state
from ui.parts import live_jobs
from ui.render import counted, md
from ui.workspace import Workspace

INDEX_SEEN = "library_index_seen"  # the session's last index job whose end it has shown
INDEX_CANCEL_HELP = "Stop the build; the collection and its searches stay as they were."


def defaults(workspace: Workspace) -> None:
    """Say how the collection indexes its chunks (chunk headers), the search defaults saved with it, and which
    kept run chose them (rag.runs.apply)."""
    if workspace.info is None or workspace.info.foreign:
        return
    if workspace.info.chunk_headers:
        st.caption("Chunk headers: on. Each chunk is embedded and keyword-indexed with its document title and "
                   "heading path before its text; the stored text (what searches show, what the LLM reads) is the "
                   "chunk's own.")
    saved = errors.attempt(collection_defaults, workspace.store, workspace.collection)
    if saved is None:
        return
    shown = ", ".join(f"{key} {value}" for key, value in saved.items() if key != "run" and value is not None)
    if shown:
        st.caption(f"Search defaults: {md(shown)}{_chosen_by(workspace, saved['run'])}.")


def index(workspace: Workspace) -> IndexState | None:
    """Say how searches of the collection run (exact, or through an HNSW index with its measured recall), queue the
    index build when the collection is due for one (not again after a build of it failed: the button retries), show
    it while it runs, and offer to build it now; return the state (None: a server's, or unreadable)."""
    if workspace.info is None:
        return None
    state_now = errors.attempt(workspace.store.index_state, workspace.collection)
    if state_now is None:
        if not workspace.store.local:
            st.caption("Index: the Qdrant server builds and keeps its HNSW index itself.")
        return None
    queue = live_jobs.queue()
    if state_now.due:
        queue.index_when_due(workspace.store, workspace.collection, workspace.location, _embedder(workspace),
                             after_failure=False)
    st.caption(f"Index: {md(state_now.summary())}")
    finished = live_jobs.show(workspace.location, jobs.IndexJob, INDEX_SEEN, INDEX_CANCEL_HELP)
    if finished is not None and finished.status == "done":
        state.announce(md(finished.summary()))
        st.rerun()
    running = any(j.active and j.collection == workspace.collection
                  for j in queue.jobs(workspace.location, jobs.IndexJob))
    if state_now.points and not running and st.button(
            "Build the index now" if state_now.recall_at_10 is None else "Build the index again",
            icon=":material/account_tree:", key=f"build_index-{workspace.collection}",
            help="An HNSW graph, built in a child process (about a minute per 100,000 chunks on 2 cores) and checked "
                 f"against exact search; searches use it from recall@10 {MIN_RECALL} on. Collections are indexed by "
                 f"themselves from {state_now.min_points:,} chunks on (RAG_INDEX_MIN_POINTS)."):
        queue.add(jobs.IndexJob(workspace.collection, workspace.store, workspace.location, state_now.points,
                                _embedder(workspace)))
        st.rerun()
    return state_now


def _embedder(workspace: Workspace):
    """Return the collection's embedder for the recall check's questions, None where it cannot be had (said)."""
    return errors.attempt(workspace.embedder)


def search_kind(workspace: Workspace, collection: str, known: IndexState | None = None) -> str:
    """Return how a collection's searches run, for the collections table: "exact" or "HNSW, recall@10 0.994"
    (known: its state, already read)."""
    index = known or errors.attempt(workspace.store.index_state, collection)
    if index is None:
        return "the server's" if not workspace.store.local else "exact"
    return f"HNSW, recall@10 {index.recall_at_10:.3f}" if index.searches == "indexed" else "exact"


def _chosen_by(workspace: Workspace, run_id: int | None) -> str:
    """Return ", chosen by run N (Experiments page)", saying so when that run has been deleted since."""
    if run_id is None:
        return ""
    with errors.reported() as report:
        kept = any(run["id"] == run_id for run in RunLog(runs_path_of(workspace.store)).runs())
    if report.failed or kept:
        return f", chosen by run {run_id} (Experiments page)"
    return f", chosen by run {run_id} (deleted from the Experiments page since)"


def repair(workspace: Workspace, document: DocumentInfo) -> None:
    """Explain what an unfinished write left of document and offer to delete it or to ingest it again."""
    if document.missing:
        st.warning(f"'{md(document.title)}' lost {document.missing} of its chunks to a delete that was cut short. "
                   "Ingest it again to repair it (from the archive kept at ingest), or delete the rest.")
    else:
        kept = "its earlier complete version stays searchable" if document.interrupted else "no version is searchable"
        st.warning(f"'{md(document.title)}' was not stored completely: {kept}. Ingest it again to repair it (from the "
                   "archive kept at ingest, no upload needed), or delete what the interrupted ingest left.")
    size, overlap, strategy = document.unfinished_settings or (document.chunk_size, document.overlap, document.strategy)
    settings = ChunkSettings(size or DEFAULT_CHUNK_SIZE, overlap or 0, strategy or "structure")
    st.caption(f"Ingesting again uses the settings of the interrupted ingest: chunk_size {settings.chunk_size}, "
               f"overlap {settings.overlap}, {settings.strategy}.")
    again, delete = st.columns(2)
    if again.button(f"Ingest '{md(document.title)}' again", icon=":material/restart_alt:",
                    key=f"repair_reingest_{document.document_id}", type="primary"):
        try:
            with errors.reported() as report, st.spinner("Ingesting again…"):
                (result,) = pipeline.reingest([document.document_id], workspace.collection, settings,
                                              workspace.embedder(), store=workspace.store,
                                              archive=resources.archive(workspace.store))
        finally:
            resources.store_changed()
        if report.failed:
            return
        if result.ok:
            state.announce(f"Stored {counted(result.chunks, 'chunk')} of {md(document.title)}.")
            st.rerun()
        st.error(md(result.error or "The ingest failed."))
    label = "Delete the rest of the document" if document.missing else "Delete what the interrupted ingest left"
    if delete.button(label, icon=":material/delete:", key=f"repair_delete_{document.document_id}"):
        with errors.reported() as report:
            removed = delete_document(workspace.store, resources.archive(workspace.store), workspace.collection,
                                      document.document_id, only_interrupted=not document.missing)
        if report.failed:
            return
        resources.store_changed()
        state.announce(f"Deleted {counted(removed, 'chunk')} left by the interrupted ingest of {md(document.title)}.")
        st.rerun()


def sweeps(ws: Workspace) -> None:
    """Draw the collections sweeps made, one row per sweep, and delete a whole sweep with one confirmation."""
    points = {c.name: c.points for c in ws.collections}
    groups = sweep_groups(list(points))
    if not groups:
        return
    total = sum(len(names) for names in groups.values())
    with st.expander(f"Sweep collections: {total} from {counted(len(groups), 'sweep')}", icon=":material/science:"):
        st.dataframe(pd.DataFrame([
            {"sweep": key, "collections": len(names), "chunks": sum(points[n] for n in names),
             "configurations": ", ".join(n.split("-", 2)[2] for n in names)}
            for key, names in groups.items()
        ]), hide_index=True, width="stretch")
        state.keep("library_sweep", list(groups), next(iter(groups)))  # a deleted sweep's label is no sweep
        key = st.selectbox("Sweep", list(groups), key="library_sweep",
                           format_func=lambda k: f"{k} · {counted(len(groups[k]), 'collection')}")
        names = groups[key]
        with st.popover(f"Delete sweep {md(key)} ({counted(len(names), 'collection')})",
                        icon=":material/delete_sweep:"):
            chunks = sum(points[n] for n in names)
            st.write(f"Delete the {counted(len(names), 'collection')} of sweep {md(key)} ({counted(chunks, 'chunk')})? "
                     "The next sweep over the same documents builds them again; cached embeddings are kept.")
            if st.button("Yes, delete the sweep", type="primary", key="confirm_delete_sweep"):
                deleted = 0
                with errors.reported():
                    for name in names:
                        delete_collection(ws.store, resources.archive(ws.store), name)  # and files it alone held
                        deleted += 1
                resources.store_changed()
                state.announce(f"Deleted {deleted} of {len(names)} collections of sweep {md(key)}.")
                st.rerun()
