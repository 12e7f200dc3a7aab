"""One rule and one registry for provider specs (rag.providers): embedders, rerankers and LLMs parse alike, every
spec that worked before still works, and the errors say the valid forms or what is missing."""

from __future__ import annotations

import re

import pytest

from rag.embeddings import EMBEDDERS, SPEC_FORMS, get_embedder, parse_spec
from rag.errors import UnknownEmbedderError, UnknownLLMError, UnknownRerankerError
from rag.generation import LLM_SPECS, get_llm
from rag.generation.llm import LLMS
from rag.providers import Provider, Registry, split_spec
from rag.rerank import RERANK_SPECS, RERANKERS, get_reranker

KINDS = [(EMBEDDERS, UnknownEmbedderError), (RERANKERS, UnknownRerankerError), (LLMS, UnknownLLMError)]
WORKED = {  # specs each kind accepted before the registry: (spec, provider, argument)
    "embedder": [("local", "local", ""), ("local:int8", "local", "int8"), ("local:fp32", "local", "fp32"),
                 (" Local:all-MiniLM-L6-v2 ", "local", "all-MiniLM-L6-v2"), ("fake", "fake", ""),
                 ("fake:8", "fake", "8"), ("ollama:llama3.1:8b", "ollama", "llama3.1:8b"),
                 ("OpenAI: text-embedding-3-small", "openai", "text-embedding-3-small")],
    "reranker": [("tei:http://localhost:8080", "tei", "http://localhost:8080"), ("cohere:rerank-v3.5", "cohere",
                 "rerank-v3.5"), (" JINA : jina-reranker-v2 ", "jina", "jina-reranker-v2"),
                 ("local:models/x", "local", "models/x")],
    "LLM": [("ollama:llama3.1", "ollama", "llama3.1"), ("ollama:llama3.1:8b", "ollama", "llama3.1:8b"),
            ("openai:gpt-4o-mini ", "openai", "gpt-4o-mini"), (" ollama: qwen3", "ollama", "qwen3")],
}


def test_the_rule_splits_at_the_first_colon_and_lowercases_only_the_provider() -> None:
    assert split_spec("  TEI : http://Host:8080/Path ") == ("tei", "http://Host:8080/Path")
    assert split_spec("fake") == ("fake", "")


@pytest.mark.parametrize(("registry", "error"), KINDS)
def test_every_kind_is_one_registry_and_takes_the_specs_it_took_before(registry: Registry, error: type) -> None:
    assert isinstance(registry, Registry) and registry.error is error
    assert [registry.parse(spec) for spec, _, _ in WORKED[registry.kind]] == [
        (provider, argument) for _, provider, argument in WORKED[registry.kind]]


@pytest.mark.parametrize(("registry", "error"), KINDS)
def test_every_kind_names_its_forms_for_an_unknown_provider_and_what_a_bare_one_needs(registry, error) -> None:
    forms = re.escape(registry.forms)
    with pytest.raises(error, match=rf"^Unknown {registry.kind} 'word2vec:x'\. Use one of: {forms}"):
        registry.parse("word2vec:x")
    needy = next(p for p in registry.providers.values() if p.needs)
    with pytest.raises(error, match=rf"^The {registry.kind} '{needy.name}' needs {needy.needs}, e\.g\. "):
        registry.parse(f"{needy.name.upper()}:  ")


def test_the_forms_the_help_shows_come_from_the_registries() -> None:
    assert SPEC_FORMS == ("local, local:fp32, local:all-MiniLM-L6-v2, local:<path>, ollama:<model>, openai:<model>, "
                          "fake, fake:<dim>")
    assert RERANK_SPECS == "tei:<url>, cohere:<model>, jina:<model>, local:<path>"
    assert LLM_SPECS == ("ollama:<model>", "openai:<model>")


def test_the_makers_go_through_their_registry(monkeypatch) -> None:
    made = []
    for registry, make in ((EMBEDDERS, get_embedder), (RERANKERS, get_reranker), (LLMS, get_llm)):
        monkeypatch.setitem(registry.providers, "probe", Provider(
            "probe", lambda argument, **options: made.append(argument) or argument, ("probe:<x>",), "an x", "probe:1"))
        assert make("Probe:one") == "one"
    assert made == ["one", "one", "one"]
    assert parse_spec("probe:two") == ("probe", "two")


def test_a_bare_llm_provider_says_it_needs_a_model_and_a_provider_in_capitals_works() -> None:
    with pytest.raises(UnknownLLMError, match=r"^The LLM 'ollama' needs a model name, e\.g\. ollama:llama3\.1\.$"):
        get_llm("ollama")
    assert get_llm("OLLAMA:llama3.1").model == "llama3.1"
    with pytest.raises(UnknownEmbedderError, match="positive whole number"):
        get_embedder("fake:0")
