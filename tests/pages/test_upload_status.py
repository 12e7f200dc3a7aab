"""The Upload page's words for how an ingest went (issue 34, item 9; issue 30, defect 1): a cancelled file says
cancelled, a job that stored nothing says so and why under an error mark, the "store is empty" box goes once the
first file is stored, and a file's progress line counts up to its own chunk count."""

from __future__ import annotations

import pytest

from rag.chunking import ChunkSettings, chunk_document
from rag.documents import load_document
from rag.ingested import Progress
from rag.store.open import open_store
from tests.pages.conftest import plain, results, start, texts, until, upload
from tests.pages.test_jobs import Gated, files
from ui import jobs
from ui.parts import upload as parts


def chunks_of(name: str) -> int:
    (file,) = files(name)
    return len(chunk_document(load_document(file.data, file.name), ChunkSettings().chunk_size,
                              ChunkSettings().overlap))


def expander(at, start_of_label: str):
    found = [e for e in at.expander if plain(e.label).startswith(start_of_label)]
    assert found, [plain(e.label) for e in at.expander]
    return found[0]


@pytest.mark.live_jobs
def test_a_cancelled_file_says_cancelled_not_failed(app_env):
    store = open_store(path=str(app_env / "qdrant"))
    embedder, queue = Gated(after=chunks_of("a.md")), jobs.jobs_queue()  # a.md is stored, b.md's embedding waits
    job = queue.submit(files("a.md", "b.md"), "documents", ChunkSettings(), embedder, store, store.location)
    assert embedder.waiting.wait(30)
    queue.cancel(job.id)
    embedder.gate.set()
    assert queue.wait_idle(60)
    at = start()
    assert expander(at, "Cancelled: 1 of 2 files stored in 'documents'").proto.icon == ":material/cancel:"
    rows = results(at)
    assert rows["a.md"]["status"] == "ingested" and rows["b.md"]["status"] == "cancelled"
    assert "failed" not in {row["status"] for row in rows.values()}
    assert "'b.md' was cancelled before it was stored" in texts(at.info)
    assert plain(parts.describe(job.progress[1])) == "b.md: cancelled, nothing of it stored"


def test_a_job_that_stored_none_of_its_files_says_so_and_why_under_an_error_mark(app_env, shared_data):
    at = upload(start(), shared_data, "pdfs/invalid.pdf", "pdfs/c02-22.pdf")
    head = expander(at, "None of 2 files stored in 'documents' in ")
    assert plain(head.label).endswith(" s: 2 failed (see below)") and head.proto.icon == ":material/error:"
    assert not [e for e in at.expander if plain(e.label).startswith("Done")]
    errors = texts(at.error)
    assert "'invalid.pdf' could not be read as a PDF" in errors and "'c02-22.pdf' has no text layer" in errors


def test_some_files_stored_and_some_refused_is_a_warning_mark(app_env, shared_data):
    at = upload(start(), shared_data, "pdfs/crazyones.pdf", "pdfs/invalid.pdf")
    assert expander(at, "Done: 1 of 2 files stored in 'documents'").proto.icon == ":material/warning:"
    at = upload(at, shared_data, "pdfs/crazyones.pdf")  # unchanged: nothing to say but done
    assert expander(at, "Done: 1 of 1 file stored in 'documents'").proto.icon == ":material/check_circle:"


@pytest.mark.live_jobs
def test_the_store_is_empty_box_goes_once_the_first_file_is_stored_during_the_ingest(app_env):
    store = open_store(path=str(app_env / "qdrant"))
    at = start()
    assert "The store is empty" in texts(at.markdown)
    embedder, queue = Gated(after=chunks_of("a.md")), jobs.jobs_queue()
    job = queue.submit(files("a.md", "b.md"), "documents", ChunkSettings(), embedder, store, store.location)
    try:
        assert embedder.waiting.wait(30)  # a.md is stored, b.md embeds
        until(lambda: job.progress[0].stage == "done", "a.md stored")
        at.run()  # the page's live progress redraws once a second
        assert "Ingesting into 'documents': 1 of 2 files done" in plain(texts(at.markdown))
        assert "The store is empty" not in texts(at.markdown)
    finally:
        embedder.gate.set()
        assert queue.wait_idle(60)


def test_a_progress_line_never_counts_past_its_total():
    line = plain(parts.describe(Progress(1, 2, "texlive-de.pdf", "embed", 5, 204)))
    assert line == "texlive-de.pdf: embedding 5/204 chunks"
    line = plain(parts.describe(Progress(1, 2, "texlive-de.pdf", "embed", 5, 2)))
    assert line == "texlive-de.pdf: embedding 2/2 chunks"
    assert parts.fraction(Progress(1, 2, "texlive-de.pdf", "embed", 5, 2)) == pytest.approx(0.85)


def test_a_progress_line_names_chunks_and_children_apart():
    line = plain(parts.describe(Progress(0, 1, "lang.txt", "embed", 5, 11, children=8)))
    assert line == "lang.txt: embedding 5/11: 3 chunks and 8 children"
    line = plain(parts.describe(Progress(0, 1, "lang.txt", "store", 11, 11, children=10)))
    assert line == "lang.txt: storing 11/11: 1 chunk and 10 children"
