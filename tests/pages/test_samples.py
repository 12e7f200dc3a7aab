"""The sample set shipped in the package (issue 34, item 12): a fresh clone loads it from the Upload page and
evaluates its query set on the Evaluate page without RAG_SAMPLE_DIR; the files are small, licensed, and their
answer spans point at the text RAG Lab reads."""

from __future__ import annotations

import tomllib

import pytest

from rag.documents import samples
from rag.evaluation.querysets.queries import load_query_set
from rag.evaluation.sweeps.sweep import load_documents, prepare_queries
from tests.documents.sample_pdf import PATH, sample_pdf_bytes
from tests.pages.conftest import ROOT, button, plain, results, settled, start, texts
from ui import nav


@pytest.mark.slow
def test_a_fresh_clone_loads_the_bundled_samples_and_evaluates_them(app_env, monkeypatch):
    monkeypatch.delenv("RAG_SAMPLE_DIR")  # nothing configured: the set in rag/samples
    at = start()
    assert "4 sample files in" in texts(at.caption) and "rag/samples" in texts(at.caption)
    button(at, "Load the 4 sample documents").click()
    settled(at)
    assert not at.exception, at.exception
    rows = results(at)
    assert sorted(rows) == ["datensicherung.txt", "incident-response.pdf", "passwortrichtlinie.md",
                            "retrieval-basics.md"]
    assert {row["status"] for row in rows.values()} == {"ingested"}
    at.switch_page(nav.EVALUATE.path).run()
    at.radio(key="evaluate_query_from").set_value("Sample folder").run()
    assert at.selectbox(key="evaluate_sample").value.name == "queries.jsonl"
    assert "19 queries in queries.jsonl." in texts(at.caption)
    assert at.radio(key="evaluate_documents_from").value == "A collection"
    at.text_input(key="evaluate_sizes").set_value("350")
    at.text_input(key="evaluate_overlaps").set_value("50")
    next(b for b in at.button if b.label == "Run the sweep").click()
    settled(at)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]  # the spans hold: no "answer span(s) do not point"
    assert at.dataframe[0].value["chunk_size"].tolist() == [350]
    assert "350" in plain(at.success[0].value)


def test_the_sample_set_is_small_licensed_and_its_spans_hold():
    folder = samples.BUNDLED
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["LICENSE.md", "README.md", "datensicherung.txt", "incident-response.pdf",
                     "passwortrichtlinie.md", "queries.jsonl", "retrieval-basics.md"]
    assert sum(p.stat().st_size for p in folder.iterdir()) < 100_000
    assert "CC0" in (folder / "LICENSE.md").read_text()
    documents = load_documents(samples.sample_files(folder))
    assert {d.kind for d in documents} == {"pdf", "markdown", "text"}
    queries = load_query_set((folder / "queries.jsonl").read_bytes(), "queries.jsonl")
    assert len(prepare_queries(queries, documents)) == 19  # QuerySetError naming any span that is off
    assert {q.documents[0] for q in queries} == {d.title for d in documents}
    assert PATH.read_bytes() == sample_pdf_bytes()  # the PDF is what its script writes


def test_the_samples_are_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["tool"]["setuptools"]["package-data"]["rag"] == ["samples/*"]
    assert samples.BUNDLED == ROOT / "rag" / "samples"
