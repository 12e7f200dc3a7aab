"""The pieces of the Upload page: ingest jobs with a live progress bar per file and stage, then what each job
stored (and password retries), the settings of a new collection, the sample documents."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import streamlit as st

from rag.chunking import DEFAULT_CHILD_SIZE, DEFAULT_CHUNK_HEADERS, MIN_CHILD_SIZE, ChunkSettings
from rag.documents import SourceFile, check_size, sample_files, sample_paths
from rag.errors import DocumentError, RagError
from rag.ingested import IngestResult, Progress
from ui import errors, jobs, nav, resources, state
from ui.parts import upload_settings
from ui.render import counted, md, plural
from ui.workspace import Workspace

STAGE_WORDS = {"extract": "reading text", "chunk": "chunking", "embed": "embedding", "store": "storing"}


def fraction(progress: Progress) -> float:
    """Return how far one file is, 0.0-1.0: embedding (the slow part) takes most of the bar."""
    share = min(progress.done / progress.total, 1.0) if progress.total else 0.0
    return {"extract": 0.05 + 0.1 * share, "chunk": 0.15, "embed": 0.15 + 0.7 * share, "store": 0.9}.get(
        progress.stage, 1.0)


def describe(progress: Progress) -> str:
    """Return the one-line text of a file's progress bar."""
    name = md(progress.filename)
    if progress.stage == "done":
        return f"{name}: done, {counted(progress.total, 'chunk')}"
    if progress.stage == "error":
        return f"{name}: failed (see below)"
    if progress.stage == "cancelled":
        return f"{name}: cancelled, nothing of it stored"
    words = STAGE_WORDS.get(progress.stage, progress.stage)
    if progress.stage in ("embed", "store"):  # a count never passes its total, the document's chunks (and children)
        done = f"{name}: {words} {min(progress.done, progress.total)}/{progress.total}"
        if not progress.children:
            return f"{done} chunks"
        chunks = progress.total - progress.children
        return f"{done}: {counted(chunks, 'chunk')} and {counted(progress.children, 'child', 'children')}"
    if progress.stage == "extract" and progress.done:  # a long PDF
        return f"{name}: {words}, page {progress.done} of {progress.total}"
    return f"{name}: {words}"


def source_file(upload) -> SourceFile:
    """Return an uploaded file to ingest; one over the size limit is refused (by its size) without copying it."""
    try:
        check_size(upload.size, upload.name)
    except DocumentError:
        return SourceFile(upload.name, b"", size=upload.size)  # ingest reports the limit for it, the others go on
    return SourceFile(upload.name, upload.getvalue(), size=upload.size)


def replacement_notice(workspace: Workspace, collection: str, names: Sequence[str]) -> bool:
    """Say which uploads replace a document of the same name in collection; return "keep both versions"."""
    if not names or not collection or collection not in {c.name for c in workspace.collections}:
        return False
    try:
        existing = {d.title: d for d in resources.documents(workspace.store, workspace.location, collection,
                                                            resources.version())}
    except RagError:
        return False
    same = [existing[n] for n in dict.fromkeys(names) if n in existing]
    if not same:
        return False
    keep = st.checkbox("Keep both versions", key=state.KEEP_VERSIONS,
                       help="Store the new file next to the document of the same name instead of replacing it.")
    listed = ", ".join(f"'{md(d.title)}' ({counted(d.chunks, 'chunk')})" for d in same)
    if keep:
        st.info(f"{listed} stay in '{md(collection)}'; the new files are added next to them.")
    else:
        st.warning(f"{listed} {plural(len(same), 'is', 'are')} already in '{md(collection)}': ingesting replaces "
                   "the old version once the new one is stored whole.", icon=":material/sync:")
    return keep


LANGUAGE_LABELS = {"auto": "detect per document", "de": "German", "en": "English", "none": "no stemming"}


def new_collection_options(workspace: Workspace, collection: str
                           ) -> tuple[str | None, tuple[str, str] | None, bool | None, int | None]:
    """Draw the settings a new collection is made with (keyword language, prompts, chunk headers, child size); an
    existing collection keeps its own, drawn disabled: (None, None, None, None)."""
    info = next((c for c in workspace.collections if c.name == collection), None)
    if info is not None:
        upload_settings.kept_options(workspace, info, LANGUAGE_LABELS)
        return None, None, None, None
    with st.expander(f"New collection '{md(collection)}': keyword language, prompts, chunk headers and children"):
        language = st.selectbox("Keyword language", list(LANGUAGE_LABELS), format_func=LANGUAGE_LABELS.get,
                                key=state.UPLOAD_LANGUAGE, help="Stemming and stop words of keyword (BM25) search: "
                                "detected per document (German or English), or one for all.")
        chunk_headers = st.toggle("Chunk headers", DEFAULT_CHUNK_HEADERS, key=state.UPLOAD_CHUNK_HEADERS,
                                  help="Embed and keyword-index each chunk with its document title and heading path "
                                  "before its text. The stored chunk text (what searches show and the LLM reads) "
                                  "stays as it is. Measured in docs/benchmarks.md, “Contextual chunk headers”.")
        child_size = int(st.number_input(
            "Child size (tokens, 0 = off)", 0, 2048, DEFAULT_CHILD_SIZE, step=16, key=state.UPLOAD_CHILD_SIZE,
            help="Parent–child search: each chunk is also cut into children of about this many tokens at sentence "
            "ends; searches compare the question with the children and return their chunk, whole. 0 searches the "
            "chunks themselves. Measured (docs/benchmarks.md, “Parent–child retrieval”): with 1,304 German chunks "
            "competing, 128 raised MRR@10 0.953 → 0.965 and hit@1 0.926 → 0.941 (p < 0.05; no loss on the other "
            "sets) for about 1.4x the ingest time and 2.6x the store on disk (64: the same gain, 1.9x and 4.1x)."))
        if child_size and child_size < MIN_CHILD_SIZE:
            st.warning(f"A child needs at least {MIN_CHILD_SIZE} tokens; {child_size} is used as 0 (off).")
            child_size = 0
        with errors.reported() as report:
            model = workspace.embedder_for(collection)
        if report.failed:
            return language, None, chunk_headers, child_size
        left, right = st.columns(2)
        query = left.text_input("Query prompt", model.query_prompt, key=state.UPLOAD_QUERY_PROMPT,
                                help=f"Put before each query; {md(model.model_id)}'s own is {model.query_prompt!r}.")
        document = right.text_input("Document prompt", model.document_prompt, key=state.UPLOAD_DOCUMENT_PROMPT,
                                    help=f"Put before each chunk; the model's own is {model.document_prompt!r}.")
    return language, (query, document), chunk_headers, child_size


def run(files: Sequence[SourceFile], workspace: Workspace, collection: str, settings: ChunkSettings,
        keep_versions: bool = False, language: str | None = None, prompts: tuple[str, str] | None = None,
        chunk_headers: bool | None = None, child_size: int | None = None) -> bool:
    """Queue an ingest job of files into collection (it runs in the app's process, on after a reload).

    Return False (with the error shown) when nothing could start, e.g. the embedder is unavailable.
    """
    if not files:
        return False
    with errors.reported() as report:
        embedder = workspace.embedder_for(collection, prompts)
    if report.failed:
        return False
    job = jobs.jobs_queue(resources.change_hook()).submit(
        list(files), collection, settings, embedder, workspace.store, workspace.location,
        archive=resources.archive(workspace.store), keep_versions=keep_versions, language=language,
        chunk_headers=chunk_headers, child_size=child_size)
    state.put(state.MY_JOBS, [*state.get(state.MY_JOBS, []), job.id])
    resources.remember_collection(workspace.location, collection)  # a reload opens what this job writes
    return True


def show_jobs(workspace: Workspace) -> None:
    """Draw the jobs of this store: the running and waiting ones live, then what the last ones stored (each marked by
    how it ended: every file stored, some, none)."""
    queue = jobs.jobs_queue(resources.change_hook())
    listed = queue.jobs(workspace.location)
    if state.MY_JOBS not in st.session_state:  # a new session (a reload): it follows the jobs running now
        state.put(state.MY_JOBS, [job.id for job in listed if job.active])
    if any(job.active for job in listed):
        _live(workspace.location, workspace.store_empty)
    finished = [job for job in listed if not job.active][:5]
    _adopt(finished)
    retried: set[tuple[str, str]] = set()  # (collection, file) a newer job ingested again: no older password form
    stored: set[tuple[str, str]] = set()  # ... and stored: an older job's summary counts it (no stale "1 of 3")
    for number, job in enumerate(finished):
        later = {name for collection, name in stored if collection == job.collection}
        with st.expander(md(job.summary(later)), expanded=number == 0, icon=_ICONS[job.mark_after(later)]):
            show_results(workspace, job, retried, later)
        retried |= {(job.collection, name) for name in job.names}
        stored |= {(job.collection, r.filename) for r in job.results if r.ok}


_ICONS = {"done": ":material/check_circle:", "warning": ":material/warning:", "error": ":material/error:",
          "cancelled": ":material/cancel:",
          "queued": ":material/schedule:", "running": ":material/sync:"}


@st.fragment(run_every=1.0)
def _live(location: str, store_empty: bool = False) -> None:
    """Draw the progress of the jobs that wait or run, once a second; when none is left, or the first file went into a
    store the page drew as empty (its "Start here" box), redraw the whole page."""
    queue = jobs.jobs_queue()
    active = [job for job in queue.jobs(location) if job.active]
    if store_empty and any(p.stage == "done" for job in active for p in job.progress.values()):
        resources.store_changed()  # the listings the page drew from predate the file: read the store again
        st.rerun()
    if not active:
        st.rerun()
    st.subheader("Ingesting")
    for job in reversed(active):
        head, stop = st.columns([4, 1], vertical_alignment="center")
        if stop.button("Cancel", key=f"cancel-job-{job.id}", icon=":material/cancel:",
                       disabled=job.cancel_requested, help="Stops after the embedding batch under way (about a "
                       "second); files already stored stay, nothing is left half-stored."):
            queue.cancel(job.id)  # before the head is drawn: it says "Cancelling …" in this very run
        head.markdown(f"**{md(job.summary())}**")
        for index, name in enumerate(job.names):
            progress = job.progress.get(index)
            if progress is None:
                st.progress(0.0, text=f"{md(name)}: waiting")
            else:
                st.progress(fraction(progress), text=describe(progress))


def _adopt(finished: list[jobs.IngestJob]) -> None:
    """For the jobs this session started and that ended since: open the last stored document and its collection."""
    mine, adopted = set(state.get(state.MY_JOBS, [])), set(state.get(state.ADOPTED_JOBS, []))
    new = [job for job in reversed(finished) if job.id in mine and job.id not in adopted]
    for job in new:
        done = [r for r in job.results if r.ok]
        if done:
            state.put(state.CHUNKS_DOCUMENT, done[-1].document_id)
            state.put(state.PENDING_COLLECTION, job.collection)
    state.put(state.ADOPTED_JOBS, sorted(adopted | {job.id for job in new}))
    if new:  # the sidebar was drawn before the job ended: draw it again with what the job stored
        st.rerun()


def results_frame(results: Sequence[IngestResult]) -> pd.DataFrame:
    """Return one row per file: status, pages, characters, chunks, seconds."""
    rows = []
    for r in results:
        status = r.status
        message = r.error or " ".join(r.notes)
        rows.append({"file": r.filename, "status": status, "pages": r.pages if r.ok else None,
                     "characters": r.characters if r.ok else None, "chunks": r.chunks if r.ok else None,
                     "seconds": round(r.seconds, 2), "message": message,
                     "stages": " · ".join(f"{k} {v:.2f}s" for k, v in r.stage_seconds.items())})
    frame = pd.DataFrame(rows)
    return frame.astype({"pages": "Int64", "characters": "Int64", "chunks": "Int64"})


def show_results(workspace: Workspace, job: jobs.IngestJob, retried: set[tuple[str, str]] = frozenset(),
                 later: set[str] = frozenset()) -> None:
    """Draw what a job did: a table, the errors in words, notes, and password retries for encrypted files (not
    for those a newer job in retried took again; later: the names of those a newer job stored)."""
    if job.error:
        st.error(md(job.error))
    results = job.results
    if not results:
        return
    ok = sum(r.ok for r in results)
    again = [md(r.filename) for r in job.stored_later(later)]
    st.caption(f"{ok} of {counted(len(results), 'file')} ingested."
               + (f" Stored later by a newer ingest: {', '.join(again)}." if again else ""))
    st.dataframe(results_frame(results), hide_index=True, width="stretch", placeholder="–",
                 column_config={"file": st.column_config.TextColumn(width=220),
                                "status": st.column_config.TextColumn(width=120),
                                "pages": st.column_config.NumberColumn(width=60),
                                "characters": st.column_config.NumberColumn(width=90),
                                "chunks": st.column_config.NumberColumn(width=65),
                                "seconds": st.column_config.NumberColumn(format="%.2f s", width=75),
                                "message": st.column_config.TextColumn(width="large")})
    for result in results:
        if result.error and (result.skipped or result.error_type == "IngestCancelled"):
            st.info(md(result.error))
        elif result.error and not result.needs_password:
            st.error(md(result.error))
        for note in result.notes:
            st.warning(f"{md(result.filename)}: {md(note)}")
    for file, result in zip(job.files, results, strict=False):
        if result.needs_password and file.data is not None and (job.collection, file.name) not in retried:
            _password_form(workspace, job, file, result)
    if ok:
        st.page_link(nav.CHUNKS.path, label="See how they were chunked", icon=":material/view_agenda:")


def _password_form(workspace: Workspace, job: jobs.IngestJob, file: SourceFile, result: IngestResult) -> None:
    name = file.name
    with st.form(key=f"password-{job.id}-{name}"):
        asked = (f"'{md(name)}' is encrypted. Type its password here: the file is kept, nothing needs to be "
                 "uploaded again.")
        st.warning(md(result.error) if result.wrong_password else asked)
        password = st.text_input(f"Password for {md(name)}", type="password")
        submitted = st.form_submit_button("Open and ingest", type="primary")
        if submitted and run([SourceFile(name, file.data, password)], workspace, job.collection, job.settings):
            st.rerun()


def sample_section(workspace: Workspace, folder: Path | None, settings: ChunkSettings | None, collection: str,
                   options: tuple = (None, None, None, None)) -> None:
    """Draw the button that ingests the sample documents of RAG_SAMPLE_DIR into collection with the page's settings:
    settings (None: the fields hold an error) and options, new_collection_options' answer for collection."""
    if folder is None:
        st.caption("Set RAG_SAMPLE_DIR to a folder of PDF, Markdown or text files to offer sample documents here.")
        return
    if not folder.is_dir():
        st.info(f"No sample documents here: the folder {md(str(folder))} does not exist. Point RAG_SAMPLE_DIR at a "
                "folder of PDF, Markdown or text files to offer them in one click, or drop files above.")
        return
    paths = sample_paths(folder)
    st.caption(f"{counted(len(paths), 'sample file')} in {md(str(folder))}: "
               + ", ".join(md(p.name) for p in paths[:12]) + (" …" if len(paths) > 12 else ""))
    loading = [job for job in jobs.jobs_queue().jobs(workspace.location) if job.active and job.collection == collection
               and job.names == [p.name for p in paths]]
    if loading:  # the job's progress is further down the page: say here that the click is being worked on
        st.info(f"Loading the {len(paths)} sample documents into '{md(collection)}'… their progress is under "
                "Ingesting below.", icon=":material/hourglass_top:")
    elif settings is not None and collection:
        words = upload_settings.settings_words(workspace, collection, settings, options)
        st.caption(f"Into '{md(collection)}' with {words}.")
    clicked = st.button(f"Load the {len(paths)} sample documents", key="load_samples", icon=":material/library_add:",
                        disabled=not paths or settings is None or not collection or bool(loading))
    if clicked and run(sample_files(folder), workspace, collection, settings, False, *options):
        st.rerun()
