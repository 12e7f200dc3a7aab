"""Synthetic query sets: every span is its document's text, queries are rewrites, the LLM path keeps only found
answers, and what cannot become a query is said."""

from __future__ import annotations

import json
import re

import pytest

from rag.documents.loader import load_document
from rag.documents.model import Document, Page
from rag.errors import LLMUnavailableError, NoTextLayerError, SyntheticQueriesError
from rag.evaluation.querysets.queries import check_spans, load_query_set, resolve_labels, squeezed
from rag.evaluation.synthetic.llm import locate, parse_reply
from rag.evaluation.synthetic.rewrite import Vocabulary, rewrite
from rag.evaluation.synthetic.sentences import rejection, sentence_pools
from rag.evaluation.synthetic.sets import SENTENCE, allocate, make_queries, spread
from rag.generation.llm import OllamaChat
from rag.http import RetryPolicy
from tests.conftest import FakeChatServer, read_shared

SHARED = ["pdfs/hausarbeit-jura.pdf", "pdfs/pdflatex-outline.pdf", "pdfs/crazyones.pdf",
          "markdown/asvs-de-V2-Authentication.md", "markdown/asvs-de-Using-ASVS.md", "markdown/LICENSE-ASVS.md"]
FRAME_WORDS = set("was steht zu sagt der text über wo geht es um what is said about does the say where covered".split())


@pytest.fixture(scope="module")
def documents(shared_data) -> list[Document]:
    return [load_document(read_shared(shared_data, path), path.rsplit("/", 1)[-1]) for path in SHARED]


def words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.casefold())


def test_every_answer_span_is_the_document_text_and_the_set_loads_as_a_query_set(documents):
    made = make_queries(documents, 60, seed=3)
    assert len(made.queries) == 60 and not any("Made" in note for note in made.notes)
    texts = {d.id: d.text for d in documents}
    for query in made.queries:
        text = texts[query.document_id]
        assert text[query.answer_start : query.answer_start + len(query.answer)] == query.answer
        assert query.passage_start <= query.answer_start < query.answer_start + len(query.answer) <= query.passage_end
        assert rejection(query.answer) is None and query.method == SENTENCE
    lines = [json.loads(line) for line in made.jsonl().splitlines()]
    assert all(line["synthetic"] is True and line["method"] == "sentence" for line in lines)
    loaded = resolve_labels(load_query_set(made.jsonl(), "synthetic.jsonl"), [(d.id, d.title) for d in documents],
                            "the shared documents")
    check_spans(loaded, texts)  # raises on a span that does not hold its answer
    assert [q.answer_start for q in loaded] == [line["answer_start"] for line in lines]


def test_queries_are_rewrites_of_their_sentence_not_copies(documents):
    made = make_queries(documents, 60, seed=1)
    for query in made.queries:
        sentence, asked = squeezed(query.answer).casefold(), squeezed(query.query).casefold()
        assert asked.rstrip("?") not in sentence
        content = [w for w in words(query.query) if w not in FRAME_WORDS]
        assert len(content) >= 3, query.query
        from_sentence = [w for w in content if any(s.startswith(w[:4]) for s in words(query.answer))]
        assert len(from_sentence) >= 0.8 * len(content), (query.query, query.answer)  # about the sentence
        assert len(content) <= 0.8 * len(words(query.answer)), (query.query, query.answer)  # but not all of it


def test_the_same_seed_makes_the_same_set_and_another_seed_another(documents):
    assert make_queries(documents, 25, seed=7).jsonl() == make_queries(documents, 25, seed=7).jsonl()
    assert make_queries(documents, 25, seed=7).jsonl() != make_queries(documents, 25, seed=8).jsonl()


def test_queries_are_spread_over_the_documents_by_length_and_over_each_document(documents):
    made = make_queries(documents, 40)
    counts = made.counts()
    assert counts["asvs-de-V2-Authentication.md"] > counts["asvs-de-Using-ASVS.md"] > counts["crazyones.pdf"]
    starts = [q.answer_start for q in made.queries if q.document == "asvs-de-V2-Authentication.md"]
    length = len(next(d for d in documents if d.title == "asvs-de-V2-Authentication.md").text)
    assert min(starts) < length / 4 and max(starts) > 3 * length / 4


def test_repeated_sentences_are_left_out_and_said(documents):
    outline = next(d for d in documents if d.title == "pdflatex-outline.pdf")
    pool = sentence_pools([outline])[0]
    assert not pool.usable and pool.rejected["repeated"] > 40  # its blind text repeats in every section
    made = make_queries(documents, 60)
    assert made.counts()["pdflatex-outline.pdf"] == 0
    assert any(note.startswith("pdflatex-outline.pdf: no sentence") and "repeated" in note for note in made.notes)


def test_headings_tables_code_and_fragments_are_not_sources():
    assert rejection("2.1.1 Passwortsicherheit") == "too short"
    assert rejection("| **2.1.1** | Prüfen Sie, dass Passwörter lang sind. | ✓ | ✓ |") is not None
    assert rejection("Mit \\label{⟨Ankername⟩} wird dazu zunächst eine eindeutige Marke gesetzt.") is not None
    assert rejection("die eine erste Hausarbeit erstellen müssen und dabei nicht automatisch greifen.") is not None
    assert rejection("Copyright 2020 Example Corp. All rights reserved by the owners of this work.") is not None
    assert rejection("Passwörter müssen mindestens zwölf Zeichen lang sein und werden geprüft.") is None
    assert rejection("Dies zu ändern ist für die Zukunft sicherlich ein wichtiger Punkt.") == (
        "refers to a sentence before it")
    assert rejection("This makes the second step much easier for every reader.") is not None
    assert rejection("2024 wurde das Gesetz grundlegend für alle Bürger geändert.") is None  # a number first
    text = ("# Richtlinie\n\n| Nr | Regel |\n|---|---|\n| 1 | Passwörter müssen mindestens zwölf Zeichen lang sein. |"
            "\n\n```\nDies ist ein Beispiel im Code, das niemals eine Frage werden darf.\n```\n")
    pool = sentence_pools([Document("d", "r.md", "markdown", (Page(1, text),), text)])[0]
    assert [text[s.start:s.end] for s in pool.usable] == ["Passwörter müssen mindestens zwölf Zeichen lang sein."]


def test_rewrite_keeps_negations_and_numbers_and_uses_other_forms_of_words():
    sentence = "Passwörter dürfen nicht kürzer als 12 Zeichen sein, wenn Benutzer sie selbst wählen."
    vocabulary = Vocabulary([("Das Passwort und die Passwörter der Benutzer.", "de")])
    queries = {rewrite(sentence, "de", __import__("random").Random(seed), vocabulary) for seed in range(30)}
    assert all(q and "nicht" in q and "12" in q and q.endswith("?") for q in queries)
    assert any("Passwort " in q or q.startswith("Passwort") for q in queries)  # "Passwörter" in another form
    assert rewrite("Das ist es.", "de", __import__("random").Random(0)) is None


def test_german_compounds_are_split_into_words_that_stand_alone():
    vocabulary = Vocabulary([("Die Passwörter der Benutzer. Das Konto und seine Registrierung. "
                              "Benutzerpasswörter und Kontoregistrierung.", "de")])
    assert vocabulary.split("Benutzerpasswörter") == ["Passwörter", "Benutzer"]
    assert vocabulary.split("Kontoregistrierung") == ["Registrierung", "Konto"]
    assert vocabulary.split("Mehrfaktorauthentifizierung") == ["Mehrfaktorauthentifizierung"]  # parts unknown
    assert vocabulary.split("benutzerpasswörter") == ["benutzerpasswörter"]  # not a noun


def test_allocate_is_proportional_capped_and_spread_picks_one_per_stretch():
    assert allocate(10, [1, 1], [10, 10]) == [5, 5]
    assert allocate(10, [3, 1], [10, 10]) == [8, 2]  # 7.5 / 2.5: the larger remainder first, then by order
    assert allocate(10, [1, 1], [2, 10]) == [2, 8]  # a document with too few sentences gives its share away
    assert allocate(10, [1, 1, 1], [1, 1, 1]) == [1, 1, 1]
    assert allocate(5, [1, 0], [5, 5]) == [5, 0]
    import random

    picks = spread(list(range(100)), 4, random.Random(0))
    assert [p // 25 for p in picks[:4]] == [0, 1, 2, 3] and sorted(picks) == list(range(100))


def test_a_scanned_pdf_is_an_error_of_the_loader_and_a_textless_document_a_note(shared_data, documents):
    with pytest.raises(NoTextLayerError):
        load_document(read_shared(shared_data, "pdfs/c02-22.pdf"), "c02-22.pdf")
    empty = Document("scan", "scan.pdf", "pdf", (Page(1, ""),), "", empty_pages=(1,))
    made = make_queries([empty, documents[2]], 5)
    assert made.counts()["scan.pdf"] == 0 and any(n.startswith("scan.pdf: no sentence") for n in made.notes)
    with pytest.raises(SyntheticQueriesError, match="No synthetic query could be made from scan.pdf"):
        make_queries([empty], 5)


def test_two_documents_of_one_title_use_the_first_and_say_so(documents):
    other = Document("other", "crazyones.pdf", "text", (Page(1, documents[3].text),), documents[3].text)
    made = make_queries([documents[2], other], 5)
    assert {q.document_id for q in made.queries} == {documents[2].id}
    assert any("Two documents are named crazyones.pdf" in note for note in made.notes)


# ---- with an LLM ---------------------------------------------------------------------------------------


class ScriptedChat(FakeChatServer):
    """The fake chat server, answering each request with reply(passage) of the next script entry in turn."""

    def __init__(self, *script):
        self.script = script
        super().__init__()

    @property
    def answer(self) -> str:
        body = self.requests[-1]["json"]
        passage = body["messages"][-1]["content"].split('"""')[1].strip()
        return self.script[(len(self.requests) - 1) % len(self.script)](passage)

    @answer.setter
    def answer(self, value: str) -> None:
        pass


def quoted(passage: str) -> str:
    """A good reply: the passage's first sentence, its line breaks written as spaces, in a code fence."""
    first = " ".join(re.split(r"(?<=[.!?])\s", passage, maxsplit=1)[0].split())
    reply = {"question": "Welche Vorgabe beschreibt dieser Abschnitt?", "answer": first}
    return f"```json\n{json.dumps(reply, ensure_ascii=False)}\n```"


def invented(passage: str) -> str:
    return '{"question": "Was steht nirgends?", "answer": "Dieser Satz steht in keinem Dokument der Sammlung."}'


def rambling(passage: str) -> str:
    return "Gern! Hier ist eine Frage zu dem Abschnitt, leider ohne JSON."


def model(server: FakeChatServer) -> OllamaChat:
    return OllamaChat("fake", host=server.url, retry=RetryPolicy(sleep=lambda seconds: None))


def test_llm_questions_keep_only_answers_found_in_the_passage(documents):
    server = ScriptedChat(quoted, invented, rambling)
    try:
        hausarbeit = documents[0]
        made = make_queries([hausarbeit], 4, llm=model(server))
    finally:
        server.close()
    assert len(made.queries) == 4 and len(server.requests) == 10  # every third reply is usable
    for query, request in zip(made.queries, server.requests[::3], strict=False):
        assert hausarbeit.text[query.answer_start : query.answer_start + len(query.answer)] == query.answer
        assert query.passage_start <= query.answer_start and query.answer_start + len(query.answer) <= query.passage_end
        assert query.query == "Welche Vorgabe beschreibt dieser Abschnitt?" and query.method == "llm:ollama:fake"
        assert "German" in request["json"]["messages"][-1]["content"]
    assert any("\n" in q.answer for q in made.queries)  # found across a line break the model wrote as a space
    assert any("answer not in the passage: 3" in n and "not the JSON asked for: 3" in n for n in made.notes)
    check_spans(resolve_labels(load_query_set(made.jsonl()), [(hausarbeit.id, hausarbeit.title)], "it"),
                {hausarbeit.id: hausarbeit.text})


def test_an_llm_that_never_gives_a_usable_reply_makes_no_set(documents):
    server = ScriptedChat(rambling)
    try:
        with pytest.raises(SyntheticQueriesError, match="not the JSON asked for: 16"):
            make_queries([documents[3]], 3, llm=model(server))
    finally:
        server.close()
    assert len(server.requests) == 16  # 2 * 3 + 10: it gives up instead of asking about every sentence


def test_an_llm_server_that_is_down_is_one_clear_error(documents):
    server = FakeChatServer()
    server.close()  # nothing listens on its port any more
    with pytest.raises(LLMUnavailableError) as raised:
        make_queries([documents[0]], 3, llm=model(server))
    message = str(raised.value)
    assert "\n" not in message and f"Could not reach Ollama at {server.url}" in message and "ollama serve" in message


def test_replies_are_read_from_json_in_fences_and_answers_found_across_whitespace():
    assert parse_reply('Sure:\n```json\n{"question": "Wie lang?", "answer": "„zwölf Zeichen“"}\n```') == (
        "Wie lang?", "zwölf Zeichen")
    assert parse_reply('{"question": "Wie lang?"}') is None
    assert parse_reply('{"question": 3, "answer": "x"}') is None
    assert parse_reply("[1, 2]") is None
    text = "Vorher. Passwörter müssen\nmindestens  zwölf Zeichen haben. Danach."
    assert locate("Passwörter müssen mindestens zwölf Zeichen", text, 0, len(text)) == (8, 51)
    assert locate("Vorher.", text, 5, len(text)) is None  # only inside the passage


def test_a_short_set_says_why_without_calling_a_document_with_text_empty():
    text = ("Passwörter müssen mindestens zwölf Zeichen lang sein und werden beim Anlegen geprüft.\n\n"
            "Ein Konto wird nach zehn falschen Anmeldungen für eine Stunde gesperrt.")
    made = make_queries([Document("g", "g.md", "markdown", (Page(1, text),), text)], 10)
    [note] = [n for n in made.notes if n.startswith("Made ")]
    assert "g.md: 2 usable, 2 used, left out: none" in note and "no text" not in note


# ---- questions in the passage's language ----------------------------------------------------------------


def first_sentence(passage: str) -> str:
    return " ".join(re.split(r"(?<=[.!?])\s", passage, maxsplit=1)[0].split())


def german(passage: str) -> str:
    return json.dumps({"question": "Was verlangt der Abschnitt von den Lesern?", "answer": first_sentence(passage)})


def english(passage: str) -> str:
    return json.dumps({"question": "What does this section ask of the reader?", "answer": first_sentence(passage)})


@pytest.mark.slow
def test_questions_not_in_the_passage_language_are_rejected_and_counted(documents):
    server = ScriptedChat(german, english)  # every second question is English, about a German passage
    try:
        made = make_queries([documents[0]], 4, llm=model(server))
    finally:
        server.close()
    assert len(made.queries) == 4 and len(server.requests) == 7
    assert {q.query for q in made.queries} == {"Was verlangt der Abschnitt von den Lesern?"}
    assert made.wrong_language == 3 and made.asked == 7
    assert made.rejected == {"question not in the passage's language": 3}
    assert made.summary()["wrong_language"] == 3 and made.summary()["rejected"] == made.rejected
    assert any("question not in the passage's language: 3" in note for note in made.notes)
    assert all("in German" in r["json"]["messages"][-1]["content"] for r in server.requests)


@pytest.mark.slow
def test_an_english_document_gets_english_questions_only(documents):
    license_text = documents[5]  # LICENSE-ASVS.md, English
    server = ScriptedChat(german)
    try:
        with pytest.raises(SyntheticQueriesError, match="question not in the passage's language: 12"):
            make_queries([license_text], 1, llm=model(server))
    finally:
        server.close()
    assert all("in English" in r["json"]["messages"][-1]["content"] for r in server.requests)
    server = ScriptedChat(english)
    try:
        made = make_queries([license_text], 2, llm=model(server))
    finally:
        server.close()
    assert len(made.queries) == 2 and made.wrong_language == 0
    assert "question not in the passage's language" not in made.rejected


def test_a_question_too_short_to_tell_its_language_is_kept():
    from rag.evaluation.synthetic.llm import in_language, passage_language

    assert in_language("Wo liegt Wien?", "en")  # no stop word of either language: cannot tell, kept
    assert not in_language("Where is the tower of Vienna?", "de")
    assert in_language("Wo steht der Turm?", "de") and not in_language("Wo steht der Turm?", "en")
    assert passage_language("Berlin 1969 2024", "de") == "de"  # neither language's stop words: the document's
    assert passage_language("The tower is in the city and it is tall.", "de") == "en"
