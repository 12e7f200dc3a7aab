"""The Evaluate page after a round trip through the sidebar (another page, then Evaluate again in the same session):
the browser drops the URL's parameters and Streamlit the state of the widgets not drawn, yet the page shows the
inputs it had, names them in the URL again, and says when the result shown is of other inputs than those above it."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import get_embedder
from rag.evaluation.querysets.squad import import_squad
from rag.store.open import open_store
from tests.pages.conftest import settled
from tests.pages.test_evaluate_page import evaluate_page, plain, set_grid
from ui import nav

EARLIER = "This result is of earlier inputs"


@pytest.fixture
def env(sweep_env):
    return sweep_env


def round_trip(at: AppTest) -> None:
    """Go to Experiments through the sidebar and back to Evaluate, as a browser does: each page's URL is its own."""
    at.switch_page(nav.EXPERIMENTS.path)
    at.query_params.clear()
    at.run()
    assert not at.exception, at.exception
    at.switch_page(nav.EVALUATE.path)
    at.query_params.clear()
    at.run()
    assert not at.exception, at.exception


def warnings(at: AppTest) -> list[str]:
    return [plain(w.value) for w in at.warning]


def _set_up(env) -> tuple[bytes, list]:
    imported = import_squad((env / "samples/xquad.json").read_bytes(), articles=2)
    store = open_store(path=str(env / "qdrant"))
    files = [pipeline.SourceFile(d.filename, d.text.encode()) for d in imported.documents]
    for name in ("documents", "xquad"):
        pipeline.ingest(files, name, ChunkSettings(300, 30), get_embedder("fake:32"), store=store)
    store.close()
    lines = "\n".join(json.dumps(q, ensure_ascii=False) for q in imported.queries[:20]).encode()
    return lines, imported.documents


@pytest.mark.slow
def test_the_query_set_and_the_collection_come_back_after_the_sidebar(env):
    lines, _ = _set_up(env)
    at = evaluate_page()
    at.file_uploader(key="evaluate_query_file").upload("queries.jsonl", lines, "application/json")
    at.run()
    at.selectbox(key="evaluate_collection").set_value("xquad")
    at.run()
    set_grid(at, "300,200", "30", "1,3", modes=["dense"])
    assert not at.error, [e.value for e in at.error]
    round_trip(at)
    assert any("Using queries.jsonl as uploaded earlier" in plain(c.value) for c in at.caption)
    assert at.radio(key="evaluate_documents_from").value == "A collection"
    assert at.selectbox(key="evaluate_collection").value == "xquad"
    assert [at.text_input(key=k).value for k in ("evaluate_sizes", "evaluate_overlaps", "evaluate_ks")] == [
        "300,200", "30", "1,3"]
    assert {"query_set": "queries.jsonl", "collection": "xquad", "documents_from": "A collection",
            "chunk_size": "300,200"}.items() <= dict(at.query_params).items()
    assert at.session_state["evaluate_result"].results and not [w for w in warnings(at) if EARLIER in w]
    assert any("searched 'xquad' as stored" in plain(c.value) for c in at.caption)

    at.selectbox(key="evaluate_collection").set_value("documents")  # the inputs now differ from the result's
    at.run()
    assert f"{EARLIER}: queries.jsonl on the collection 'xquad'." in " ".join(warnings(at)), warnings(at)
    next(b for b in at.button if b.label == "Run the sweep").click()
    settled(at)
    assert not [w for w in warnings(at) if EARLIER in w]


@pytest.mark.slow
def test_uploaded_documents_come_back_after_the_sidebar(env):
    lines, documents = _set_up(env)
    at = evaluate_page()
    at.file_uploader(key="evaluate_query_file").upload("queries.jsonl", lines, "application/json")
    at.run()
    at.radio(key="evaluate_documents_from").set_value("Upload documents")
    at.run()
    at.file_uploader(key="evaluate_document_files").set_value(
        [(d.filename, d.text.encode(), "text/plain") for d in documents])
    at.run()
    set_grid(at, "150", "0", "1,3", modes=["dense"])
    assert not at.error, [e.value for e in at.error]
    kept = at.query_params["documents"]
    round_trip(at)
    assert at.radio(key="evaluate_documents_from").value == "Upload documents"
    assert any("Using 2 documents as uploaded earlier" in plain(c.value) for c in at.caption)
    assert at.query_params["documents"] == kept and at.query_params["query_set"] == "queries.jsonl"
    assert not [w for w in warnings(at) if EARLIER in w], warnings(at)
    next(b for b in at.button if b.label == "Run the sweep").click()
    settled(at)
    assert not at.error and sorted(at.session_state["evaluate_result"].documents) == sorted(
        d.filename for d in documents)
