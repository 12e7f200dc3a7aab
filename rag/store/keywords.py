"""Keyword (BM25) vectors as Qdrant makes them: German and English stemming and stop words, per document.

New collections use Qdrant's own BM25 (qdrant-edge-py, the engine's Rust code, offline): text is
lower-cased and split into words, stop words of the language are dropped, each word is Snowball-stemmed
("Passwörter", "Passwörtern" -> "passwort"), and a stem's id is abs(murmur3_32(stem)), as Qdrant's server
side BM25 and fastembed's `Qdrant/bm25` make them. A chunk stores tf * (k + 1) / (tf + k * (1 - b + b *
|d| / avg_len)) per stem (k 1.2, b 0.75, avg_len 256: Qdrant's defaults), a query 1.0 per distinct stem,
and the collection's IDF modifier multiplies in idf at search time. So another Qdrant tool can query these
vectors with `Bm25("Qdrant/bm25", language="german")`.

One addition: numbers with dots or commas ("2.1.1", "§ 5.3", "1.000,50"), which Qdrant's tokenizer splits
into digits, are also kept whole as extra terms (same id rule, same weight formula), so requirement and
section numbers match exactly; every other term's weight is exactly Qdrant's.

Language: set per collection ("de", "en", "none": no stemming, no stop words) or "auto": detected per
document from its stop words; a query is analysed in every language the collection holds (the stems of
each, united). Collections made before carry the "rag-lab-1" analyzer (rag.store.legacy_keywords: no
stemming) and keep it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import rag.store.legacy_keywords as sparse
from rag.documents import detect_language
from rag.errors import InvalidSettingsError

ANALYZER = "qdrant-bm25"  # recorded in the collection metadata, with "language"
LANGUAGE_CHOICES = ("auto", "de", "en", "none")
DEFAULT_LANGUAGE = "auto"
K, B, AVG_LEN = 1.2, 0.75, 256.0
_EDGE_LANGUAGES = {"de": "german", "en": "english", "none": "english"}
_WORD = re.compile(r"[^\W_]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)+")
_QUERY_WORD = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+")  # the words a query is shown as matching by


def check_language(language: str) -> str:
    """Return language if it is a known choice; InvalidSettingsError listing them otherwise."""
    if language not in LANGUAGE_CHOICES:
        raise InvalidSettingsError(f"Unknown keyword language '{language}'. Use one of: {', '.join(LANGUAGE_CHOICES)}.")
    return language


def _model(language: str) -> Any:
    """Return Qdrant's BM25 model for a language ("none": words as they are, no stop words)."""
    from rag.store.edge import api

    return api.bm25("none" if language == "none" else _EDGE_LANGUAGES[language], K, B, AVG_LEN)


@dataclass(frozen=True)
class Analyzer:
    """How one collection turns text into keyword vectors; made by analyzer_for from its metadata."""

    name: str  # ANALYZER or the legacy sparse.ANALYZER
    languages: tuple[str, ...] = ("de",)  # the languages a query is analysed in

    @property
    def legacy(self) -> bool:
        return self.name != ANALYZER

    def document_vector(self, text: str, language: str) -> tuple[list[int], list[float]]:
        """Return (indices, values) of a chunk in its document's language."""
        if self.legacy:
            return sparse.chunk_vector(text)
        vector = _model(language).embed_document(text)
        weights = {int(i): float(v) for i, v in zip(vector.indices, vector.values, strict=True)}
        numbers = Counter(_NUMBER.findall(text))
        if numbers:
            norm = _length_norm(_model(language), text, vector)
            for number, tf in numbers.items():
                weights.setdefault(term_id(number), tf * (K + 1) / (tf + norm))
        indices = sorted(weights)
        return indices, [weights[i] for i in indices]

    def query_ids(self, text: str) -> set[int]:
        """Return the term ids of a query, in every language the collection holds."""
        if self.legacy:
            return set(sparse.query_vector(text)[0])
        ids = {int(i) for language in self.languages for i in _model(language).embed_query(text).indices}
        return ids | {term_id(number) for number in _NUMBER.findall(text)}

    def query_vector(self, text: str) -> tuple[list[int], list[float]]:
        """Return (indices, values) of a query: each distinct term id with weight 1.0 ([] without terms)."""
        indices = sorted(self.query_ids(text))
        return indices, [1.0] * len(indices)

    def matching_words(self, query: str, text: str, language: str | None = None) -> list[str]:
        """Return the words of query (as typed, each once) whose terms occur in text: why a chunk matched.

        language: the one the chunk was indexed in (its payload's "language"): a query is analysed in every
        language of the collection, a chunk in its own, so a German stop word ("die") that is an English stem
        matches no German chunk, and is not listed for one. None: text as each of the collection's languages.
        """
        if self.legacy:
            present = set(sparse.analyze(text))
            return [w for w in dict.fromkeys(_WORD.findall(query)) if present.intersection(sparse.analyze(w))]
        found = {i for language in ((language,) if language else self.languages)
                 for i in self.document_vector(text, language)[0]}
        return [w for w in dict.fromkeys(_QUERY_WORD.findall(query)) if self.query_ids(w) & found]


def term_id(term: str) -> int:
    """Return a term's id as Qdrant's BM25 makes it: abs(murmur3_32(term)), signed, seed 0."""
    import mmh3

    return abs(mmh3.hash(term))


_SENTINEL = "xqzvxqzv"  # a word no text holds: appended once, its weight gives the document's length norm


def _length_norm(model: Any, text: str, vector: Any) -> float:
    """Return k * (1 - b + b * |d| / avg_len) of a document as Qdrant's BM25 computed it.

    The weights alone do not tell |d| (tf is unknown), so the text is embedded once more with one extra
    word: that word has tf 1, so its weight w = (k + 1) / (1 + norm'), and norm' is norm plus one word.
    """
    with_sentinel = model.embed_document(f"{text} {_SENTINEL}")
    extra = set(with_sentinel.indices) - set(vector.indices)
    if len(extra) != 1:
        return K * (1 - B + B * len(_WORD.findall(text)) / AVG_LEN)  # cannot happen for real text; an estimate
    (index,) = extra
    weight = float(with_sentinel.values[list(with_sentinel.indices).index(index)])
    return (K + 1) / weight - 1 - K * B / AVG_LEN


def analyzer_for(meta: dict, languages: Sequence[str] | None = None) -> Analyzer:
    """Return the analyzer a collection records: Qdrant's BM25 in its languages, else the legacy one."""
    if meta.get("analyzer") != ANALYZER:
        return Analyzer(str(meta.get("analyzer") or sparse.ANALYZER))
    setting = meta.get("language", DEFAULT_LANGUAGE)
    if setting != "auto":
        return Analyzer(ANALYZER, (setting,))
    return Analyzer(ANALYZER, tuple(sorted(languages or ())) or ("de", "en"))


def document_language(setting: str, text: str) -> str:
    """Return the language a document's chunks are analysed in: the collection's setting, or detected."""
    return detect_language(text) if setting == "auto" else setting


def union(languages: Iterable[str]) -> list[str]:
    return sorted(set(languages))
