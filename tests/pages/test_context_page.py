"""The Context page with AppTest: the exact context under a budget and an overflow policy, and Ask the LLM."""

from __future__ import annotations

import json
import re

import pytest

from rag.cli import main
from rag.retrieval.context import NO_SENTENCE
from rag.settings import DEFAULT_COLLECTION
from tests.pages.conftest import PDF, button, plain, search, settled, start, texts, upload
from ui import nav

BUDGET = 400  # the second block's budget holds its number "1.1.N." and not one sentence


def test_context_preview_builds_the_exact_text_with_budget_label_and_downloads(app_env, shared_data):
    at = upload(start(), shared_data, PDF)
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Literatur zitieren", top_k=10)
    at.switch_page(nav.CONTEXT.path).run()
    assert not at.exception
    text = at.code[0].value
    assert text.startswith("[Quelle 1: hausarbeit-jura.pdf")
    assert at.button_group(key="context_preset").value == "chat"
    assert at.slider(key="max_tokens").value == 3000
    assert len(at.get("download_button")) == 2
    at.text_input(key="source_label").set_value("Source").run()
    assert at.code[0].value.startswith("[Source 1: ")
    at.button_group(key="context_preset").set_value("generation").run()
    assert at.slider(key="max_tokens").value == 5000
    at.slider(key="max_tokens").set_value(600).run()
    assert at.button_group(key="context_preset").value == "custom"
    dropped = at.dataframe[1].value
    assert set(dropped["reason"]) == {"budget full"}  # truncate (the default): one chunk cut, then the end
    assert at.dataframe[0].value["cut to fit"].tolist()[-1] and at.code[0].value.endswith(" …")
    columns = json.loads(at.dataframe[0].proto.columns)  # the two flags say what they mean where they are shown
    assert "overlap" in columns["trimmed"]["help"] and "max_tokens" in columns["cut to fit"]["help"]
    assert "600 tokens used" in at.get("progress")[0].proto.text.replace(",", "")
    sources = next(m for m in at.metric if m.label == "sources")
    assert int(sources.value) == len(at.dataframe[0].value) and sources.delta == "from 1 document"
    at.button_group(key="context_overflow").set_value("skip").run()
    assert "over budget" in set(at.dataframe[1].value["reason"]) and not at.code[0].value.endswith(" …")


@pytest.mark.slow
def test_ask_the_llm_streams_an_answer_with_linked_citations(app_env, shared_data, chat_server, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", chat_server.url)
    monkeypatch.setenv("RAG_LLM", "ollama:llama3.1")
    at = upload(start(), shared_data, PDF)
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Wie zitiert man Literatur?", top_k=3)
    at.switch_page(nav.CONTEXT.path).run()
    context = at.code[0].value
    assert at.text_input(key="llm_spec").value == "ollama:llama3.1"
    at.button(key="ask_llm").click().run()
    assert not at.exception, at.exception
    [request] = chat_server.requests
    assert context in request["json"]["messages"][1]["content"]  # the exact context shown above
    answer = [m.value for m in at.markdown if "(#quelle-1)" in m.value]
    assert answer and "[Quelle 1](#quelle-1)" in answer[0] and "Quelle 9 (not in the context)" in answer[0]
    assert "cites Quelle 9, which the context does not have" in texts(at.warning)
    assert "Never cited: Quelle 2, Quelle 3." in texts(at.caption)
    assert [h.value for h in at.subheader if plain(h.value).startswith("Quelle 1:")]


def test_ask_the_llm_without_a_model_says_how_to_configure_one(app_env, shared_data, monkeypatch):
    monkeypatch.delenv("RAG_LLM", raising=False)
    at = upload(start(), shared_data, PDF)
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Literatur", top_k=3)
    at.switch_page(nav.CONTEXT.path).run()
    at.button(key="ask_llm").click().run()
    assert "No LLM is configured. The operator sets one with RAG_LLM=ollama:<model>" in texts(at.info)


def test_context_without_a_search_points_to_search(app_env, shared_data):
    at = upload(start(), shared_data, "pdfs/crazyones.pdf")
    at.switch_page(nav.CONTEXT.path).run()
    assert "Run a search" in texts(at.info)


def test_separators_round_trip_through_a_one_line_input():
    from ui.parts.context import parse_separator, show_separator

    assert show_separator("\n\n---\n\n") == r"\n\n---\n\n"
    assert parse_separator(r"\n\t===\n") == "\n\t===\n"


def numbered_rules() -> bytes:
    """Return a text of numbered paragraphs (`1.1.N.`), each one chunk at 350/0 and one long first sentence: a cut
    to the budget's last few tokens could keep only its number (issue 34.6)."""
    paragraphs = [f"1.1.{n}. Die Regel {n} gilt für " + " ".join(f"Absatz{n} Wort{i}" for i in range(50))
                  + f" und endet hier. Danach folgt der Satz {n} zur Frist." for n in range(1, 7)]
    return "\n\n".join(paragraphs).encode()


def test_a_cut_that_keeps_no_sentence_is_dropped_on_the_page_as_in_the_cli(app_env, capsys):
    at = start()
    at.number_input(key="upload_overlap").set_value(0)
    at.file_uploader[0].set_value([("regeln.txt", numbered_rules(), "text/plain")])
    at.run()
    settled(button(at, "Ingest").click())
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Regel Frist", top_k=6)
    at.switch_page(nav.CONTEXT.path).run()
    at.slider(key="max_tokens").set_value(BUDGET).run()
    assert not at.exception
    code = main(["context", "Regel Frist", "--collection", DEFAULT_COLLECTION, "--top-k", "6", "--max-tokens",
                 str(BUDGET), "--json"])
    cli = json.loads(capsys.readouterr().out)
    assert code == 0
    sources = next(m for m in at.metric if m.label == "sources")
    dropped = at.dataframe[1].value
    assert int(sources.value) == len(cli["sources"])
    assert list(dropped["reason"]) == [d["reason"] for d in cli["dropped"]]
    assert not re.search(r"1\.1\.\d\. …$", at.code[0].value)  # before: the last source held "1.1.2. …" only
    assert NO_SENTENCE in list(dropped["reason"]) and int(sources.value) == len(at.dataframe[0].value)
