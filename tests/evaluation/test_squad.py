"""rag.evaluation.querysets.squad on the real XQuAD file: every written answer span lands on its answer in the text
RAG Lab reads."""

from __future__ import annotations

import json

import pytest

from rag.cli import main
from rag.documents.loader import load_document
from rag.errors import QuerySetError
from rag.evaluation.querysets.queries import load_query_set
from rag.evaluation.querysets.squad import document_filename, import_squad


def answered(dataset: dict) -> int:
    return sum(1 for a in dataset["data"] for p in a["paragraphs"] for q in p["qas"] if q.get("answers"))


def test_xquad_import_every_span_lands_on_its_answer(shared_data, tmp_path, capsys):
    source = shared_data / "xquad-de/xquad.de.dev.json"
    dataset = json.loads(source.read_text(encoding="utf-8"))
    assert main(["import-squad", str(source), "--out", str(tmp_path)]) == 0
    assert "queries.jsonl" in capsys.readouterr().out
    texts = {}
    for path in tmp_path.glob("*.txt"):
        document = load_document(path.read_bytes(), path.name)  # exactly as an upload or the sweep reads it
        texts[document.title] = document.text
    assert len(texts) == len(dataset["data"])
    lines = (tmp_path / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == answered(dataset)
    for line in lines:
        query = json.loads(line)
        text = texts[query["document"]]
        assert text[query["answer_start"] : query["answer_start"] + len(query["answer"])] == query["answer"]
    queries = load_query_set((tmp_path / "queries.jsonl").read_bytes(), "queries.jsonl")
    assert len(queries) == len(lines) and all(q.answer_start is not None for q in queries)
    # one document per article: its paragraphs, in order
    article = dataset["data"][0]
    first = texts[document_filename(article["title"], set())]
    assert all(p["context"].strip() in first for p in article["paragraphs"])
    assert first.index(article["paragraphs"][1]["context"][:50]) > first.index(article["paragraphs"][0]["context"][:50])


def test_offsets_follow_the_cleaning_of_the_text():
    context = "  Erste Zeile.   \r\n\r\n\r\n\r\nDie Antwort steht hier: Köln.\u200b Und Köln noch einmal.  "
    answer_start = context.index("Köln noch")
    data = {"data": [{"title": "Städte/Test", "paragraphs": [
        {"context": "Absatz eins über Köln.", "qas": []},
        {"context": context, "qas": [
            {"id": "1", "question": "Welche Stadt?", "answers": [{"text": "Köln", "answer_start": answer_start}]},
            {"id": "2", "question": "Nichts?", "answers": [], "is_impossible": True},
            {"id": "3", "question": "Fehlt?", "answers": [{"text": "München", "answer_start": 3}]},
        ]},
    ]}]}
    result = import_squad(data)
    (document,) = result.documents
    assert document.filename == "Städte Test.txt"
    assert load_document(document.text.encode(), document.filename).text == document.text
    (query,) = result.queries
    assert query["query"] == "Welche Stadt?" and query["document"] == "Städte Test.txt" and query["id"] == "1"
    start = query["answer_start"]
    assert document.text[start : start + 4] == "Köln"
    assert document.text[start:].startswith("Köln noch einmal")  # the occurrence the label meant, not the first
    assert any("left out" in note for note in result.notes)


def test_file_names_are_safe_and_unique():
    taken: set[str] = set()
    assert document_filename("Fresno,_California", taken) == "Fresno, California.txt"
    assert document_filename('a/b:c*?"<>|d', taken) == "a b c d.txt"
    assert document_filename("Fresno, California", taken) == "Fresno, California (2).txt"
    assert document_filename("...", taken) == "article.txt"
    assert len(document_filename("x" * 500, taken)) <= 124


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"{not json", "is not JSON"), (b'{"version": "1.1"}', "SQuAD layout"),
     (b'{"data": [{"title": "a", "paragraphs": 3}]}', "no 'paragraphs' list"),
     (b'{"data": [{"title": "a", "paragraphs": [{"context": "text", "qas": []}]}]}', "no answered questions")],
)
def test_malformed_files_are_refused(data, message):
    with pytest.raises(QuerySetError, match=message):
        import_squad(data, "x.json")


def test_import_command_articles_and_errors(shared_data, tmp_path, capsys):
    source = str(shared_data / "xquad-de/xquad.de.dev.json")
    assert main(["import-squad", source, "--out", str(tmp_path / "two"), "--articles", "2"]) == 0
    assert len(list((tmp_path / "two").glob("*.txt"))) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("[]", encoding="utf-8")
    assert main(["import-squad", str(bad), "--out", str(tmp_path / "x")]) == 1
    assert "SQuAD layout" in capsys.readouterr().err
