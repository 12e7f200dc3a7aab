"""rag.store.legacy_keywords, the keyword analyzer of collections made before Qdrant's BM25 (rag.store.keywords):
they keep it.

German/English analysis without stemming, BM25 weights, and BM25 scores from the real Qdrant engine on a
collection that records this analyzer.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.retrieval import SearchRequest
from rag.store import legacy_keywords as sparse
from rag.store.open import open_store
from tests.conftest import fake_embedder, store_texts

# ---- analysis ----------------------------------------------------------------------------------


def test_german_words_lowercased_with_umlauts_kept_and_sharp_s_folded() -> None:
    assert sparse.analyze("Größe der Passwörter") == ["grösse", "passwörter"]
    assert sparse.analyze("Straße STRASSE Strasse") == ["strasse"] * 3  # ß and its spellings meet
    assert sparse.analyze("schon schön zahlen zählen") == ["schon", "schön", "zahlen", "zählen"]  # umlauts differ
    assert sparse.analyze("Grösse") == sparse.analyze("Größe")  # Swiss spelling finds the German one


def test_nfkc_joins_decomposed_umlauts_and_ligatures() -> None:
    decomposed = unicodedata.normalize("NFD", "Prüfung")
    assert decomposed != "Prüfung" and sparse.analyze(decomposed) == ["prüfung"]
    assert sparse.analyze("ﬁnden Ｚｅｉｃｈｅｎ") == ["finden", "zeichen"]


def test_words_split_at_punctuation_numbers_kept_whole() -> None:
    text = "Mehrfaktor-Authentifizierung (siehe 2.1.1): 1.000,50 € für snake_case, Seite 12."
    assert sparse.analyze(text) == ["mehrfaktor", "authentifizierung", "siehe", "2.1.1", "1.000,50", "snake", "case",
                                    "seite", "12"]
    assert sparse.analyze("... — !!! ___") == []


def test_stop_words_are_optional_and_ambiguous_words_kept() -> None:
    assert sparse.analyze("Die Prüfung und the password of der Nutzer") == ["prüfung", "password", "nutzer"]
    assert sparse.analyze("Die Prüfung", stop_words=None) == ["die", "prüfung"]
    assert {"hat", "war", "will", "man", "bin"}.isdisjoint(sparse.STOP_WORDS)  # content words in the other language
    assert all(sparse.analyze(w, None) == [w] for w in sparse.STOP_WORDS)  # the list is in analysed form


@given(st.text(max_size=200))
def test_analysis_is_stable_under_its_own_normalisation(text: str) -> None:
    terms = sparse.analyze(text)
    assert sparse.analyze(" ".join(terms)) == terms
    assert all(t and not set(t) & set(" _-") for t in terms)


# ---- vectors -----------------------------------------------------------------------------------


def test_term_ids_are_stable_unsigned_32_bit() -> None:
    digest = hashlib.blake2b("grösse".encode(), digest_size=4).digest()
    assert sparse.term_id("grösse") == int.from_bytes(digest, "little") == 4279733544  # stored ids must not change
    assert sparse.term_id("passwort") == 2826305482
    assert 0 <= sparse.term_id("straße") < 2**32 and sparse.term_id("a") != sparse.term_id("b")


def test_chunk_vector_holds_bm25_term_frequency_weights() -> None:
    indices, values = sparse.chunk_vector("Passwort Passwort Länge Zeichen Zeichen Zeichen und die")
    weights = dict(zip(indices, values, strict=True))
    assert indices == sorted(set(indices)) and len(indices) == 3
    norm = 1.2 * (1 - 0.75 + 0.75 * 6 / 128)  # 6 terms after stop words, avgdl 128
    expected = {"passwort": 2 * 2.2 / (2 + norm), "länge": 2.2 / (1 + norm), "zeichen": 3 * 2.2 / (3 + norm)}
    assert {t: pytest.approx(weights[sparse.term_id(t)]) for t in expected} == expected
    assert sparse.chunk_vector("und die der") == ([], [])


def test_query_vector_weights_each_distinct_term_once() -> None:
    indices, values = sparse.query_vector("Passwort passwort PASSWORT Länge die")
    assert indices == sorted([sparse.term_id("passwort"), sparse.term_id("länge")]) and values == [1.0, 1.0]
    assert sparse.matching_terms("Passwort Länge Straße", "Die STRASSE hat ein Passwort") == ["passwort", "strasse"]


# ---- BM25 scores from the real engine ----------------------------------------------------------

TINY = [
    "Das Passwort muss lang sein. Ein langes Passwort schützt.",  # passwort×2 lang langes schützt: 5 terms
    "Die Straße ist gesperrt.",  # strasse gesperrt: 2 terms
    "Das Passwort wird gehasht und gesalzen.",  # passwort gehasht gesalzen: 3 terms
]


def idf(n: int, total: int = 3) -> float:
    """Qdrant's IDF modifier: ln((N - n + 0.5) / (n + 0.5) + 1)."""
    return math.log((total - n + 0.5) / (n + 0.5) + 1)


def weight(tf: int, length: int) -> float:
    """BM25's term-frequency part with k1 = 1.2, b = 0.75, avgdl = 128."""
    return tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / 128))


def test_sparse_scores_match_hand_computed_bm25() -> None:
    assert (sparse.K1, sparse.B, sparse.AVGDL) == (1.2, 0.75, 128)
    store = open_store(":memory:")
    ids = store_texts(store, TINY, fake_embedder(16))
    hits = store.search("c", None, None, SearchRequest(mode="sparse", top_k=10), query_text="Passwort gehasht")
    # passwort is in 2 of 3 chunks, gehasht in 1
    expected = {ids[0]: idf(2) * weight(2, 5), ids[2]: idf(2) * weight(1, 3) + idf(1) * weight(1, 3)}
    assert [h.chunk_id for h in hits] == [ids[2], ids[0]]
    assert {h.chunk_id: h.score for h in hits} == {k: pytest.approx(v, abs=1e-4) for k, v in expected.items()}
    assert all(h.score_kind == "bm25" and h.sparse_score == h.score for h in hits)
    assert [(h.sparse_rank, h.dense_rank, h.dense_score) for h in hits] == [(1, None, None), (2, None, None)]
    (street,) = store.search("c", None, None, SearchRequest(mode="sparse", top_k=10), query_text="Straße")
    assert street.chunk_id == ids[1] and street.score == pytest.approx(idf(1) * weight(1, 2), abs=1e-4)


def test_umlaut_and_sharp_s_queries_find_their_chunk_by_keyword() -> None:
    texts = ["Die maximale Größe einer Datei beträgt zehn Megabyte.", "Zugang nur über die STRASSE am Nordtor.",
             "Ein Laden in der Hauptstrasse verkauft Brot.", "Passwörter werden regelmäßig geprüft.",
             "Die Grosse Kreisstadt liegt im Norden."]
    store, embedder = open_store(":memory:"), fake_embedder(64)
    ids = store_texts(store, texts, embedder)
    for query, target in [("Straße", 1), ("Größe", 0), ("Grösse", 0), ("Passwörter", 3), ("geprüft", 3)]:
        keyword = store.search("c", None, None, SearchRequest(mode="sparse", top_k=5), query_text=query)
        assert keyword[0].chunk_id == ids[target], query
    # no stemming: plural only
    assert store.search("c", None, None, SearchRequest(mode="sparse", top_k=5), query_text="Passwort") == []
