"""rag.generation.prompts and citations: presets per language, templates, the window check, cited sources."""

from __future__ import annotations

import json

import pytest

from rag.chunking import tokens
from rag.errors import ContextWindowError, InvalidSettingsError
from rag.generation.citations import citations, cited_numbers
from rag.generation.prompts import Template, build_prompt, check_window, context_window, load_template
from rag.retrieval.context import build_context
from rag.retrieval.records import Hit


def hit(text: str, score: float, doc: str = "a", title: str = "vertrag.pdf", index: int = 0) -> Hit:
    return Hit(score, text, doc, title, f"{doc}-{index}", index, ("§ 5 Kündigung",), 3, 3, None, None)


CONTEXT = build_context([hit("Die Kündigungsfrist beträgt drei Monate zum Quartalsende.", 0.9),
                         hit("Eine fristlose Kündigung ist bei wichtigem Grund möglich.", 0.7, "b", "agb.md")])


def test_a_german_question_gets_the_german_chat_prompt_with_the_whole_context():
    prompt = build_prompt("Wie lang ist die Kündigungsfrist?", CONTEXT)
    assert prompt.language == "de" and prompt.preset == "chat"
    assert "Beantworte die Frage nur mit den Informationen aus den Quellen" in prompt.system
    assert "[Quelle 2]" in prompt.system  # the citation form the answer should use
    assert prompt.user == f"Quellen:\n\n{CONTEXT.text}\n\nFrage: Wie lang ist die Kündigungsfrist?"
    assert prompt.token_count == tokens.count(prompt.system) + tokens.count(prompt.user)
    assert [m["role"] for m in prompt.messages] == ["system", "user"]


def test_an_english_question_gets_english_and_generation_its_own_text():
    prompt = build_prompt("What is the notice period?", CONTEXT)
    assert prompt.language == "en" and "Answer in English" in prompt.system and "Question: What" in prompt.user
    generation = build_prompt("Schreibe eine Zusammenfassung der Kündigungsregeln für das Intranet.", CONTEXT,
                              "generation")
    assert "Du schreibst Texte" in generation.system and "Aufgabe: Schreibe" in generation.user


def test_document_text_with_braces_is_data_not_a_template():
    context = build_context([hit("Konfiguration: {question} und {0} bleiben stehen.", 0.9)])
    prompt = build_prompt("Was steht da?", context)
    assert "{question} und {0} bleiben stehen." in prompt.user


def test_a_template_from_a_file_is_checked(tmp_path):
    good = tmp_path / "t.json"
    good.write_text(json.dumps({"system": "Nur Fakten, [{label} N].", "user": "{context}\n---\n{question}"}))
    prompt = build_prompt("Frist?", CONTEXT, template=load_template(good))
    assert prompt.system == "Nur Fakten, [Quelle N]." and prompt.user.endswith("---\nFrist?")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"system": "x", "user": "{context} {frage}"}))
    with pytest.raises(InvalidSettingsError, match="unknown fields \\['frage'\\]"):
        load_template(bad)
    with pytest.raises(InvalidSettingsError, match="needs \\{question\\}"):
        build_prompt("Frist?", CONTEXT, template=Template("x", "{context}"))
    with pytest.raises(InvalidSettingsError, match="Unknown prompt preset"):
        build_prompt("Frist?", CONTEXT, "email")


def test_the_window_is_known_configurable_and_checked(monkeypatch):
    assert context_window("llama3.1:8b") == 131_072 and context_window("gpt-4o-mini") == 128_000
    assert context_window("some-private-model") == 8192
    monkeypatch.setenv("RAG_LLM_CONTEXT_WINDOW", "2048")
    assert context_window("llama3.1") == 2048
    big = build_context([hit("Wort " * 3000, 0.9)], max_tokens=5000)
    prompt = build_prompt("Frist?", big)
    with pytest.raises(ContextWindowError, match=f"The prompt has {prompt.token_count} tokens, and llama3 reads 2048"):
        check_window(prompt, "llama3")
    monkeypatch.setenv("RAG_LLM_CONTEXT_WINDOW", "viel")
    with pytest.raises(InvalidSettingsError, match="RAG_LLM_CONTEXT_WINDOW"):
        context_window("llama3")


def test_citations_are_mapped_to_sources_and_unknown_numbers_reported():
    answer = ("Die Frist beträgt drei Monate [Quelle 1]. Fristlos nur mit Grund [Quelle 2: agb.md]; "
              "siehe auch [Quelle 1, 7] und [Source 2].")
    assert cited_numbers(answer) == [1, 2, 7]
    found = citations(answer, CONTEXT)
    assert [s.number for s in found.cited] == [1, 2] and found.unknown == [7] and found.unused == []
    data = found.to_dict()
    assert data["citations"][0] == {"number": 1, "document_title": "vertrag.pdf", "document_id": "a",
                                    "chunk_index": 0, "heading_path": ["§ 5 Kündigung"], "page_start": 3,
                                    "page_end": 3}
    assert data["unknown_citations"] == [7] and data["unused_sources"] == []
    silent = citations("Drei Monate.", CONTEXT)
    assert silent.cited == [] and [s.number for s in silent.unused] == [1, 2]
