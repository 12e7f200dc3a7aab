"""The Library says how searches run (exact, or through an HNSW index with its measured recall); an ingest that makes
a collection large enough queues the index build as a job, and the figures agree with `rag index --json`."""

from __future__ import annotations

import json

import pytest

from rag.store.open import open_store
from tests.conftest import run
from tests.pages.conftest import PDF, button, plain, settled, start, texts, upload
from ui import jobs, nav


def index_caption(at) -> str:
    return next((plain(c.value) for c in at.caption if plain(c.value).startswith("Index:")), "")


@pytest.mark.slow
def test_an_ingest_past_the_size_queues_the_build_and_the_library_shows_its_recall(app_env, shared_data, monkeypatch,
                                                                                   capsys):
    monkeypatch.setenv("RAG_INDEX_MIN_POINTS", "5")
    at = upload(start(), shared_data, PDF)
    built = [j for j in jobs.jobs_queue().jobs(kind=jobs.IndexJob) if j.location == str(app_env / "qdrant")]
    assert built and built[0].status == "done", [j.summary() for j in built]

    at.switch_page(nav.LIBRARY.path).run()
    assert not at.exception, at.exception
    store = open_store(path=str(app_env / "qdrant"))
    state = store.index_state("documents")
    caption = index_caption(at)
    chunks = store.collections()[0].points
    assert state.children == store.collections()[0].children > 0 and state.points == chunks + state.children
    assert (f"HNSW index over {state.points:,} of {state.points:,} points ({chunks:,} chunks and "
            f"{state.children:,} children)") in caption  # children by default: the index holds them too
    assert f"recall@10 {state.recall_at_10:.3f} against exact search on questions" in caption  # embedded sentences
    assert f"{chunks:,} chunk" in plain(texts(at.caption))  # the collection's own count says the same
    assert button(at, "Build the index again")
    (row,) = at.dataframe[-1].value.to_dict("records")  # the collections table
    assert row["chunks"] == chunks and row["search"] == f"HNSW, recall@10 {state.recall_at_10:.3f}"
    store.close()

    code, out, _ = run(capsys, "--store", str(app_env / "qdrant"), "index", "--status", "--json")
    cli = json.loads(out)
    assert code == 0 and (cli["points"], cli["indexed"], cli["recall_at_10"]) == (state.points, state.indexed,
                                                                                   state.recall_at_10)
    code, out, _ = run(capsys, "--store", str(app_env / "qdrant"), "collections", "--json")
    (listed,) = json.loads(out)
    assert (listed["points"], listed["children"], listed["index"]["points"]) == (chunks, state.children, state.points)


@pytest.mark.slow
def test_a_small_collection_says_from_which_size_it_is_indexed(app_env, shared_data):
    at = upload(start(), shared_data, PDF)
    assert not jobs.jobs_queue().jobs(str(app_env / "qdrant"), jobs.IndexJob)
    at.switch_page(nav.LIBRARY.path).run()
    caption = index_caption(at)
    assert caption.startswith("Index: Exact search over") and "an HNSW index is built from 50,000 points on" in caption
    settled(button(at, "Build the index now").click())
    assert not at.exception, at.exception
    assert "HNSW index over" in index_caption(at)


@pytest.mark.slow
def test_a_failed_build_is_shown_and_not_queued_again_on_every_visit(app_env, shared_data, monkeypatch):
    from rag.store.edge import index as edge_index

    monkeypatch.setenv("RAG_INDEX_MIN_POINTS", "5")
    monkeypatch.setattr(edge_index.sys, "executable", "/bin/false")  # every build's child dies at once
    at = upload(start(), shared_data, PDF)

    def builds() -> list:
        return jobs.jobs_queue().jobs(str(app_env / "qdrant"), jobs.IndexJob)

    assert [j.status for j in builds()] == ["failed"]  # queued by the ingest, failed
    at.switch_page(nav.LIBRARY.path).run()
    at.run()
    assert [j.status for j in builds()] == ["failed"]  # due, but the Library does not retry by itself
    assert "Building the index failed" in plain(texts(at.error))
    settled(button(at, "Build the index now").click())
    assert [j.status for j in builds()] == ["failed", "failed"]  # the button does
