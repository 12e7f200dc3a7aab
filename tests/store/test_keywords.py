"""rag.store.keywords: Qdrant's BM25 (stemmed, per language) against a reference, and in the real engine."""

from __future__ import annotations

import math
import re

import mmh3
import pytest
from py_rust_stemmers import SnowballStemmer

from rag.retrieval import SearchRequest
from rag.store import keywords
from rag.store.keywords import Analyzer, analyzer_for, detect_language
from rag.store.open import open_store
from tests.conftest import fake_embedder
from tests.conftest import store_texts as legacy_store_texts

BM25 = Analyzer(keywords.ANALYZER, ("de",))
GERMAN = ("Die Passwörter müssen mindestens zwölf Zeichen lang sein. Lange Passwörter schützen das Konto "
          "besser als kurze; jedes Passwort wird gehasht.")


def reference_vector(text: str, language: str) -> dict[int, float]:
    """fastembed's Qdrant/bm25, written out: lower-case words, stop words out, Snowball stems, abs(murmur3).

    Which words are stop words is asked of Qdrant's list (one word at a time), so stemming, hashing and the
    weights are checked independently of the implementation under test.
    """
    stemmer = SnowballStemmer({"de": "german", "en": "english"}[language])
    words = [w for w in re.findall(r"\w+", text.lower()) if BM25.document_vector(w, language)[0]]
    ids = [abs(mmh3.hash(stemmer.stem_word(w))) for w in words]
    norm = keywords.K * (1 - keywords.B + keywords.B * len(ids) / keywords.AVG_LEN)
    return {i: ids.count(i) * (keywords.K + 1) / (ids.count(i) + norm) for i in set(ids)}


@pytest.mark.parametrize("language,text", [("de", GERMAN), ("en", "The passwords must be long; a long password "
                                                                   "protects accounts better than short ones.")])
def test_vectors_follow_qdrants_bm25_conventions(language: str, text: str):
    indices, values = BM25.document_vector(text, language)
    assert dict(zip(indices, values, strict=True)) == pytest.approx(reference_vector(text, language))


def test_inflections_share_a_stem_and_stop_words_are_dropped():
    assert BM25.query_ids("Passwörter") == BM25.query_ids("Passwort") == BM25.query_ids("Passwörtern")
    assert BM25.query_ids("Straße") == BM25.query_ids("STRASSE")
    assert BM25.query_ids("die und der") == set()
    assert BM25.matching_words("Wie lang sind Passwörter?", GERMAN) == ["lang", "Passwörter"]
    indices, values = BM25.query_vector("Passwort passwort Länge")
    assert len(indices) == 2 and values == [1.0, 1.0]


def test_a_chunk_matches_query_words_in_its_own_language_only():
    """A query is analysed in each language of the collection; a chunk was indexed in its own: "die" is a German
    stop word but an English stem, so it matches no German chunk and is not listed as matching one."""
    both = Analyzer(keywords.ANALYZER, ("de", "en"))
    query = "Wo stehen die Passwörter?"
    assert both.matching_words(query, GERMAN, "de") == ["Passwörter"]
    assert not set(both.query_ids("die")) & set(both.document_vector(GERMAN, "de")[0])  # as the search sees it
    assert "die" in both.matching_words(query, GERMAN)  # without a language: the text as each language


def test_language_is_detected_from_stop_words():
    assert detect_language(GERMAN) == "de"
    assert detect_language("The quick brown fox jumps over the lazy dog and runs to the river.") == "en"
    assert detect_language("12 34 56 x y z") == "none"


def test_analyzer_from_collection_metadata():
    assert analyzer_for({"analyzer": keywords.ANALYZER, "language": "en"}).languages == ("en",)
    assert analyzer_for({"analyzer": keywords.ANALYZER, "language": "auto"}, ["en", "de"]).languages == ("de", "en")
    assert analyzer_for({"analyzer": "rag-lab-1 k1=1.2"}).legacy and analyzer_for({}).legacy


def test_engine_scores_are_bm25_with_stemming_and_idf():
    store, embedder = open_store(":memory:"), fake_embedder(16)
    texts = ["Das Passwort muss lang sein. Ein langes Passwort schützt.", "Die Straße ist gesperrt.",
             "Passwörter werden gehasht und gesalzen."]
    from tests.conftest import Chunk, ChunkSettings, Document, Page

    text = "\n\n".join(texts)
    document = Document(id="doc", title="doc.md", kind="markdown", pages=(Page(1, text),), text=text)
    chunks, start = [], 0
    for index, content in enumerate(texts):
        chunks.append(Chunk("doc", index, content, 5, (), 1, 1, start, start + len(content)))
        start += len(content) + 2
    store.upsert_document("c", document, chunks, embedder.embed_documents(texts), ChunkSettings(100, 0), embedder)
    ids = [h.chunk_id for h in store.document_chunks("c", "doc")]
    assert store.document_languages("c") == ["de"]
    assert {h.payload["language"] for h in store.document_chunks("c", "doc")} == {"de"}
    hits = store.search("c", None, None, SearchRequest(mode="sparse", top_k=10), query_text="Passwörter gehasht")
    weights = [dict(zip(*BM25.document_vector(t, "de"), strict=True)) for t in texts]
    (stem,) = BM25.query_ids("Passwort")
    (hashed,) = BM25.query_ids("gehasht")

    def idf(n: int) -> float:
        return math.log((3 - n + 0.5) / (n + 0.5) + 1)

    expected = {ids[0]: idf(2) * weights[0][stem], ids[2]: idf(2) * weights[2][stem] + idf(1) * weights[2][hashed]}
    assert [h.chunk_id for h in hits] == [ids[2], ids[0]]  # "Passwörter" found "Passwort" too
    assert {h.chunk_id: h.score for h in hits} == {k: pytest.approx(v, abs=1e-4) for k, v in expected.items()}


def test_mixed_languages_are_analysed_per_document_and_queried_in_each():
    store, embedder = open_store(":memory:"), fake_embedder(16)
    from rag import pipeline

    files = [pipeline.SourceFile("de.md", GERMAN.encode()),
             pipeline.SourceFile("en.md", b"Passwords are hashed. Each password is salted before it is stored.")]
    pipeline.ingest(files, "c", embedder=embedder, store=store)
    assert store.document_languages("c") == ["de", "en"]
    found = {h.document_title for h in store.search("c", None, None, SearchRequest(mode="sparse", top_k=5),
                                                    query_text="passwords")}
    assert found == {"en.md"}  # English "passwords" -> "password"; the German stem is "passwort"
    found = {h.document_title for h in store.search("c", None, None, SearchRequest(mode="sparse", top_k=5),
                                                    query_text="Passwörter")}
    assert found == {"de.md"}


def test_a_collection_keeps_its_language_and_refuses_another(tmp_path):
    from rag import pipeline
    from rag.errors import InvalidSettingsError

    store, embedder = open_store(":memory:"), fake_embedder(16)
    pipeline.ingest([pipeline.SourceFile("a.md", GERMAN.encode())], "c", embedder=embedder, store=store,
                    language="de")
    assert store.collection_meta("c")["language"] == "de"
    with pytest.raises(InvalidSettingsError, match="cannot switch to 'en'"):  # before anything is embedded
        pipeline.ingest([pipeline.SourceFile("b.md", b"Noch ein Text.")], "c", embedder=embedder, store=store,
                        language="en")
    with pytest.raises(InvalidSettingsError, match="Unknown keyword language"):
        keywords.check_language("fr")


def test_legacy_collections_keep_their_unstemmed_analysis():
    store = open_store(":memory:")
    ids = legacy_store_texts(store, ["Passwörter werden geprüft.", "Das Passwort ist lang."], fake_embedder(16))
    assert store.analyzer("c").legacy
    (hit,) = store.search("c", None, None, SearchRequest(mode="sparse", top_k=5), query_text="Passwörter")
    assert hit.chunk_id == ids[0]


def test_dotted_numbers_are_extra_terms_with_qdrants_weight_formula():
    text = "Anforderung 2.1.1 gilt; 2.1.11 nicht. Passwort Passwort Länge"
    indices, values = BM25.document_vector(text, "de")
    weights = dict(zip(indices, values, strict=True))
    standard = keywords._model("de").embed_document(text)
    for index, value in zip(standard.indices, standard.values, strict=True):  # every standard term: Qdrant's
        assert weights[int(index)] == pytest.approx(float(value))
    number = keywords.term_id("2.1.1")
    words = len([w for w in re.findall(r"\w+", text.lower()) if BM25.document_vector(w, "de")[0]])
    norm = keywords.K * (1 - keywords.B + keywords.B * words / keywords.AVG_LEN)
    assert weights[number] == pytest.approx((keywords.K + 1) / (1 + norm))
    assert number in BM25.query_ids("Was verlangt 2.1.1?") and keywords.term_id("2.1.11") in weights


@pytest.mark.parametrize("mark", ["\u00ad", "\u200c", "\u200d", "\u2060"],
                         ids=["soft-hyphen", "zwnj", "zwj", "word-joiner"])
@pytest.mark.parametrize("name", ["notes.txt", "notes.md"])
def test_an_invisible_mark_inside_a_word_does_not_split_it_for_keyword_search(mark, name):
    from rag import pipeline

    store = open_store(":memory:")
    text = f"Das Pass{mark}wort muss lang sein. Die Straße ist gesperrt. Ein Satz über Wolken und Regen."
    pipeline.ingest([pipeline.SourceFile(name, text.encode())], "c", embedder=fake_embedder(16), store=store)
    (chunk,) = store.document_chunks("c", store.documents("c")[0].document_id)
    assert mark not in chunk.content and "Passwort" in chunk.content
    assert store.search("c", None, None, SearchRequest(mode="sparse", top_k=5), query_text="Passwort")
