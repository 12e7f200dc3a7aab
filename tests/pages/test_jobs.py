"""Ingest jobs (ui.jobs): owned by the app's process, one writer at a time, cancelled between files and batches,
seen from a fresh session (a reload, a second tab) while they run and after they ended."""

from __future__ import annotations

import threading

import pytest

from rag import pipeline
from rag.chunking import ChunkSettings, chunk_document
from rag.documents import SourceFile, load_document
from rag.embeddings import get_embedder
from rag.store.open import open_store
from tests.pages.conftest import button, plain, start, texts
from ui import jobs

TEXT = "# Frist\n\n" + "".join(f"Die Frist {i} beträgt drei Monate zum Quartalsende. " for i in range(40))  # no
# two chunks alike, in one file or two: identical chunk texts are embedded once (the cache), which the gate counts


class Gated:
    """The fake embedder, held at its first call after `after` texts until released (a model that takes its time)."""

    def __init__(self, after: int = 0):
        self.inner, self.gate, self.waiting = get_embedder("fake:16"), threading.Event(), threading.Event()
        self.after, self.calls, self.texts = after, 0, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_documents(self, texts):
        self.calls += 1
        self.texts += len(texts)
        if self.texts - len(texts) >= self.after:
            self.waiting.set()
            assert self.gate.wait(60), "the test never released the embedder"
        return self.inner.embed_documents(texts)


def files(*names: str) -> list[SourceFile]:
    return [SourceFile(name, TEXT.replace("Frist", f"Frist {name}").encode()) for name in names]


def test_jobs_run_one_at_a_time_and_a_cancel_keeps_what_was_stored(tmp_path):
    store = open_store(path=str(tmp_path / "q"))
    (a,) = files("a.md")
    chunks = len(chunk_document(load_document(a.data, a.name), ChunkSettings().chunk_size, ChunkSettings().overlap))
    queue, embedder = jobs.JobQueue(), Gated(after=chunks)  # a.md passes; b.md's embedding waits for the test
    first = queue.submit(files("a.md", "b.md"), "documents", ChunkSettings(), embedder, store, "here")
    second = queue.submit(files("c.md"), "documents", ChunkSettings(), embedder, store, "here")
    assert embedder.waiting.wait(30)
    assert (first.status, second.status) == ("running", "queued")  # never two writers at once
    assert first.progress[1].stage == "embed" and first.progress[1].done == 0  # said before the batch ends
    queue.cancel(second.id)
    queue.cancel(first.id)
    embedder.gate.set()  # b.md's batch returns; the cancel stops it before its store stage
    assert queue.wait_idle(60)
    assert second.status == "cancelled" and second.results == []
    assert first.status == "cancelled" and [r.ok for r in first.results] == [True, False]
    assert first.results[1].error_type == "IngestCancelled" and "nothing of it is searchable" in first.results[1].error
    assert first.summary().startswith("Cancelled: 1 of 2 files stored in 'documents'")
    stored = {d.title: d for d in store.documents("documents")}
    assert list(stored) == ["a.md"] and stored["a.md"].complete  # whole, and nothing of b.md or c.md
    store.close()


@pytest.mark.live_jobs
def test_a_fresh_session_sees_the_running_job_and_then_what_it_stored(app_env):
    store = open_store(path=str(app_env / "qdrant"))
    embedder = Gated()
    queue = jobs.jobs_queue()
    job = queue.submit(files("vertrag.md"), "documents", ChunkSettings(), embedder, store, store.location,
                       child_size=0)  # 3 chunks to embed (with children, embedding counts them too)
    assert embedder.waiting.wait(30)
    at = start()  # a new session: as after a reload, or from another tab
    assert "Ingesting into 'documents': 0 of 1 file done" in plain(texts(at.markdown))
    assert [b for b in at.button if b.key == f"cancel-job-{job.id}"]
    assert any(plain(p.proto.text) == "vertrag.md: embedding 0/3 chunks" for p in at.get("progress")), [
        p.proto.text for p in at.get("progress")]
    embedder.gate.set()
    assert queue.wait_idle(60)
    at = start()
    assert [plain(e.label) for e in at.expander if plain(e.label).startswith("Done: 1 of 1 file stored in "
                                                                              "'documents'")]
    assert at.dataframe[0].value["file"].tolist() == ["vertrag.md"]
    assert button(at, "Ingest").disabled


@pytest.mark.live_jobs
def test_cancel_says_cancelling_in_the_same_run_and_the_job_ends_after_its_batch(app_env):
    store = open_store(path=str(app_env / "qdrant"))
    embedder = Gated()
    queue = jobs.jobs_queue()
    job = queue.submit(files("frist.md"), "documents", ChunkSettings(), embedder, store, store.location)
    assert embedder.waiting.wait(30)
    at = start()
    at.button(key=f"cancel-job-{job.id}").click().run()
    assert job.cancel_requested
    assert "Cancelling … (after the batch under way; what is stored in 'documents' stays)" in plain(texts(at.markdown))
    embedder.gate.set()  # the batch under way returns: nothing after it runs
    assert queue.wait_idle(60)
    assert job.status == "cancelled" and embedder.calls == 1 and job.results[0].error_type == "IngestCancelled"


def test_a_running_job_says_the_time_left_of_its_latest_file():
    job = jobs.IngestJob(1, files("a.md", "b.md"), "documents", "here", ChunkSettings(), get_embedder("fake:16"),
                         None, status="running")
    job.progress[0] = pipeline.Progress(0, 2, "a.md", "done", 3, 3, 50.0)
    job.progress[1] = pipeline.Progress(1, 2, "b.md", "embed", 2, 3, 125.0)
    assert job.summary() == "Ingesting into 'documents': 1 of 2 files done, about 2 min left"


def test_stopping_the_process_cancels_every_job_and_any_queued_after(tmp_path):
    """What SIGTERM does before the app exits (ui.shutdown): the running job ends as Cancel ends it, the queued one
    and one queued afterwards never run."""
    store = open_store(path=str(tmp_path / "q"))
    (a,) = files("a.md")
    chunks = len(chunk_document(load_document(a.data, a.name), ChunkSettings().chunk_size, ChunkSettings().overlap))
    queue, embedder = jobs.JobQueue(), Gated(after=chunks)
    running = queue.submit(files("a.md", "b.md"), "documents", ChunkSettings(), embedder, store, "here")
    waiting = queue.submit(files("c.md"), "documents", ChunkSettings(), embedder, store, "here")
    assert embedder.waiting.wait(30)
    threading.Timer(0.5, embedder.gate.set).start()  # b.md's batch returns while stop() waits
    assert queue.stop(60) == [running, waiting]
    later = queue.submit(files("d.md"), "documents", ChunkSettings(), embedder, store, "here")
    assert queue.wait_idle(60)
    assert [running.status, waiting.status, later.status] == ["cancelled"] * 3
    assert [r.ok for r in running.results] == [True, False]
    assert running.summary().startswith("Cancelled: 1 of 2 files stored in 'documents'")
    assert [d.title for d in store.documents("documents") if d.complete] == ["a.md"]
