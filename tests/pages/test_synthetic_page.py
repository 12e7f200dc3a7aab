"""The Evaluate page's synthetic query set with AppTest: made from an uploaded document, previewed, downloadable,
used as the sweep's query set; the page says what such questions measure and what not."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag.documents.loader import load_document
from tests.pages.conftest import settled
from ui import nav

ROOT = Path(__file__).resolve().parents[2]
PDF = "pdfs/hausarbeit-jura.pdf"


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_QDRANT_PATH", str(tmp_path / "qdrant"))
    monkeypatch.setenv("RAG_EMBEDDER", "fake:32")
    monkeypatch.setenv("RAG_SAMPLE_DIR", str(tmp_path / "samples"))
    monkeypatch.setenv("RAG_EMBEDDING_CACHE", str(tmp_path / "cache"))
    for name in ("QDRANT_URL", "RAG_COLLECTION", "RAG_LLM", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def plain(text: str) -> str:
    return text.replace("\\", "")


def evaluate_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page(nav.EVALUATE.path).run()
    assert not at.exception, at.exception
    return at


def button(at: AppTest, label: str):
    return next(b for b in at.button if plain(b.label) == label)


def upload_document(at: AppTest, shared_data: Path) -> None:
    at.radio(key="evaluate_documents_from").set_value("Upload documents").run()
    at.file_uploader(key="evaluate_document_files").set_value(
        [("hausarbeit-jura.pdf", (shared_data / PDF).read_bytes(), "application/pdf")]).run()


@pytest.mark.slow
def test_make_a_set_see_it_download_it_and_sweep_with_it(env, shared_data):
    at = evaluate_page()
    explained = " ".join(m.value for m in at.markdown)
    assert "What synthetic questions measure" in explained and "What it does not measure" in explained
    assert "lower bound on vocabulary mismatch" in explained and "multi-hop" in explained
    at.radio(key="evaluate_query_from").set_value("Synthetic set").run()
    assert any("No synthetic set yet" in plain(i.value) for i in at.info)

    upload_document(at, shared_data)
    at.number_input(key="synthetic_count").set_value(8)
    button(at, "Make the query set").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("8 synthetic queries (sentence) from 1 of 1 documents" in plain(s.value) for s in at.success)
    preview = at.dataframe[0].value
    assert list(preview.columns) == ["query", "document", "answer"] and len(preview) == 8
    text = load_document((shared_data / PDF).read_bytes(), "hausarbeit-jura.pdf").text
    assert all(answer in text and query != answer for query, answer in zip(preview["query"], preview["answer"],
                                                                           strict=True))
    assert "Download as .jsonl" in [b.label for b in at.get("download_button")]
    assert "8 synthetic queries (sentence) on hausarbeit-jura.pdf" in " ".join(plain(c.value) for c in at.caption)

    at.radio(key="evaluate_query_from").set_value("Upload").run()
    button(at, "Use as query set").click().run()
    assert at.radio(key="evaluate_query_from").value == "Synthetic set"
    at.multiselect(key="evaluate_modes").set_value(["sparse"])
    at.text_input(key="evaluate_sizes").set_value("200")
    at.text_input(key="evaluate_overlaps").set_value("0")
    at.text_input(key="evaluate_ks").set_value("1,5")
    settled(button(at, "Run the sweep").click())
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert plain(at.success[0].value).startswith("Best by")
    assert "8 queries on 1 documents" in " ".join(plain(c.value) for c in at.caption)


def test_without_documents_or_llm_name_the_page_says_what_is_missing(env, shared_data):
    at = evaluate_page()
    at.radio(key="evaluate_documents_from").set_value("Upload documents").run()
    button(at, "Make the query set").click().run()
    assert any("Choose documents above first" in plain(i.value) for i in at.info)
    upload_document(at, shared_data)
    at.radio(key="synthetic_method").set_value("An LLM").run()
    button(at, "Make the query set").click().run()
    assert any("Name the LLM" in plain(i.value) for i in at.info)
    at.text_input(key="synthetic_llm").set_value("llama3").run()
    button(at, "Make the query set").click().run()
    assert "Unknown LLM 'llama3'" in plain(at.error[0].value)


def test_llm_questions_in_another_language_are_counted_on_the_page(env, shared_data, monkeypatch):
    import re

    from tests.evaluation.test_synthetic import ScriptedChat, english, german

    server = ScriptedChat(english, german)  # every English question about this German document is dropped
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    try:
        at = evaluate_page()
        upload_document(at, shared_data)
        at.number_input(key="synthetic_count").set_value(3)
        at.radio(key="synthetic_method").set_value("An LLM").run()
        at.text_input(key="synthetic_llm").set_value("ollama:fake").run()
        button(at, "Make the query set").click().run()
    finally:
        server.close()
    assert not at.exception and not at.error, [e.value for e in at.error]
    captions = " ".join(plain(c.value) for c in at.caption)
    found = re.search(r"(\d+) of (\d+) questions rejected: not in the passage's language", captions)
    assert found and int(found[1]) == int(found[2]) - 3 >= 3 and int(found[2]) == len(server.requests)
    assert set(at.dataframe[0].value["query"]) == {"Was verlangt der Abschnitt von den Lesern?"}
