"""`rag make-queries` end to end: files in, a verified JSONL query set out, notes and errors as one line each."""

from __future__ import annotations

import json
import re

import pytest

from rag.documents.loader import load_document
from tests.conftest import FakeChatServer, read_shared, run

HAUSARBEIT = "pdfs/hausarbeit-jura.pdf"
FIELDS = {"query", "document", "answer", "answer_start", "synthetic", "method", "passage_start", "passage_end"}


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_files_in_a_query_set_out_every_span_verified(capsys, tmp_path, shared_data):
    out = tmp_path / "q.jsonl"
    files = [str(shared_data / HAUSARBEIT), str(shared_data / "markdown/asvs-de-V2-Authentication.md")]
    code, stdout, stderr = run(capsys, "make-queries", *files, "--out", str(out), "--count", "20")
    assert code == 0, stderr
    assert stdout.strip() == f"20 synthetic queries (sentence) from 2 of 2 files written to {out}"
    assert "keyword (BM25) search finds them easily" in stderr
    made = lines(out)
    assert len(made) == 20 and {line["document"] for line in made} == {"hausarbeit-jura.pdf",
                                                                      "asvs-de-V2-Authentication.md"}
    texts = {d.title: d.text for d in (load_document(read_shared(shared_data, p), p.rsplit("/", 1)[-1])
                                       for p in (HAUSARBEIT, "markdown/asvs-de-V2-Authentication.md"))}
    for line in made:
        assert set(line) == FIELDS and line["synthetic"] is True and line["method"] == "sentence"
        start = line["answer_start"]
        assert texts[line["document"]][start : start + len(line["answer"])] == line["answer"]
        assert line["query"] != line["answer"]
    again = tmp_path / "again.jsonl"
    assert run(capsys, "make-queries", *files, "--out", str(again), "--count", "20")[0] == 0
    assert again.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")  # seed 0 both times


def test_a_bad_file_among_good_ones_is_one_error_line_and_the_others_are_used(capsys, tmp_path, shared_data):
    out = tmp_path / "q.jsonl"
    code, stdout, stderr = run(capsys, "make-queries", str(tmp_path / "missing.pdf"), str(shared_data / HAUSARBEIT),
                               str(shared_data / "pdfs/invalid.pdf"), str(shared_data / "pdfs/c02-22.pdf"),
                               "--out", str(out), "--count", "10")
    assert code == 1
    assert f"error: {tmp_path / 'missing.pdf'}: no such file." in stderr.splitlines()
    assert any(line.startswith("error: 'invalid.pdf'") for line in stderr.splitlines())
    assert any(line.startswith("note: 'c02-22.pdf' has no text layer") for line in stderr.splitlines())
    assert "10 synthetic queries (sentence) from 1 of 4 files" in stdout
    assert {line["document"] for line in lines(out)} == {"hausarbeit-jura.pdf"}


def test_fewer_than_asked_is_a_note(capsys, tmp_path, shared_data):
    out = tmp_path / "q.jsonl"
    code, stdout, stderr = run(capsys, "make-queries", str(shared_data / "pdfs/crazyones.pdf"), "--out", str(out),
                               "--count", "50")
    assert code == 0 and len(lines(out)) < 50
    assert f"note: Made {len(lines(out))} of the 50 queries asked for" in stderr


def test_nothing_to_make_queries_from_is_an_error_and_writes_nothing(capsys, tmp_path, shared_data):
    out = tmp_path / "q.jsonl"
    code, _, stderr = run(capsys, "make-queries", str(shared_data / "pdfs/c02-22.pdf"), "--out", str(out))
    assert code == 1 and stderr.splitlines()[-1].startswith("error: No synthetic query could be made")
    code, _, stderr = run(capsys, "make-queries", str(shared_data / "pdfs/pdflatex-outline.pdf"), "--out", str(out))
    assert code == 1 and "repeated" in stderr.splitlines()[-1]
    assert not out.exists() and not list(tmp_path.iterdir())


def test_out_must_be_a_file_in_an_existing_folder(capsys, tmp_path, shared_data):
    document = str(shared_data / "pdfs/crazyones.pdf")
    code, _, stderr = run(capsys, "make-queries", document, "--out", str(tmp_path / "no" / "q.jsonl"))
    assert code == 1 and stderr.strip() == (f"error: {tmp_path / 'no' / 'q.jsonl'}: the folder {tmp_path / 'no'} "
                                            "does not exist; create it or choose another.")
    code, _, stderr = run(capsys, "make-queries", document, "--out", str(tmp_path))
    assert code == 1 and "is a folder" in stderr
    assert not (tmp_path / "no").exists()


def test_usage_errors_exit_2(capsys, tmp_path, shared_data):
    document = str(shared_data / "pdfs/crazyones.pdf")
    try:
        run(capsys, "make-queries", document, "--out", str(tmp_path / "q.jsonl"), "--count", "0")
    except SystemExit as stop:
        assert stop.code == 2
    else:
        raise AssertionError("--count 0 was accepted")
    try:
        run(capsys, "make-queries", document)
    except SystemExit as stop:
        assert stop.code == 2
    else:
        raise AssertionError("a missing --out was accepted")


def test_llm_questions_through_the_command(capsys, tmp_path, shared_data, monkeypatch):
    server = FakeChatServer('{"question": "Wovon handelt die Anleitung?", "answer": "Juristische Hausarbeiten"}')
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    out = tmp_path / "q.jsonl"
    try:
        code, stdout, stderr = run(capsys, "make-queries", str(shared_data / HAUSARBEIT), "--out", str(out),
                                   "--count", "3", "--llm", "ollama:fake")
    finally:
        server.close()
    made = lines(out)
    assert code == 0 and "(llm:ollama:fake)" in stdout
    # the answer is in one passage only: the others' replies are dropped, and said
    assert [line["answer"] for line in made] == ["Juristische Hausarbeiten"]
    assert made[0]["method"] == "llm:ollama:fake" and made[0]["synthetic"] is True
    assert "answer not in the passage" in stderr and "note: Made 1 of the 3" in stderr
    assert "[0/3] hausarbeit-jura.pdf: asking ollama:fake" in stderr


@pytest.mark.slow
def test_a_down_llm_or_a_bad_spec_is_one_line(capsys, tmp_path, shared_data, monkeypatch):
    document, out = str(shared_data / "pdfs/crazyones.pdf"), str(tmp_path / "q.jsonl")
    code, _, stderr = run(capsys, "make-queries", document, "--out", out, "--llm", "llama3")
    assert code == 1 and stderr.strip().startswith("error: Unknown LLM 'llama3'") and len(stderr.splitlines()) == 1
    server = FakeChatServer()
    server.close()
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    code, _, stderr = run(capsys, "make-queries", document, "--out", out, "--llm", "ollama:fake")
    assert code == 1 and stderr.splitlines()[-1].startswith(f"error: Could not reach Ollama at {server.url}")
    assert not (tmp_path / "q.jsonl").exists()


def test_the_set_is_a_query_set_for_rag_sweep(capsys, tmp_path, shared_data):
    out = tmp_path / "q.jsonl"
    document = str(shared_data / HAUSARBEIT)
    assert run(capsys, "make-queries", document, "--out", str(out), "--count", "12")[0] == 0
    code, stdout, stderr = run(capsys, "--store", str(tmp_path / "store"), "sweep", document, "--queries", str(out),
                               "--chunk-size", "200", "--overlap", "0", "--mode", "sparse", "--json",
                               "--embedder", "fake:32", "--no-cache")
    assert code == 0, stderr
    result = json.loads(stdout)
    assert result["queries"] == 12
    hit = result["configs"][0]["metrics"]["hit@10"]
    assert 0.5 <= hit <= 1.0  # the keyword search finds most passages the rewritten sentences came from


def test_questions_in_another_language_are_rejected_and_counted_in_the_json(capsys, tmp_path, shared_data,
                                                                              monkeypatch):
    from tests.evaluation.test_synthetic import ScriptedChat, english, german

    server = ScriptedChat(english, german)
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    out = tmp_path / "q.jsonl"
    try:
        code, stdout, _ = run(capsys, "make-queries", str(shared_data / HAUSARBEIT), "--out", str(out),
                              "--count", "3", "--llm", "ollama:fake", "--json")
        plain = run(capsys, "make-queries", str(shared_data / HAUSARBEIT), "--out", str(out), "--count", "3",
                    "--llm", "ollama:fake")[1]
    finally:
        server.close()
    summary = json.loads(stdout)
    # every English question is dropped (and a German one about the document's English change history)
    assert code == 0 and summary["queries"] == 3 and summary["wrong_language"] == summary["asked"] - 3 >= 3
    assert summary["rejected"] == {"question not in the passage's language": summary["wrong_language"]}
    assert summary["out"] == str(out)
    assert {line["query"] for line in lines(out)} == {"Was verlangt der Abschnitt von den Lesern?"}
    assert re.search(r"^\d+ of \d+ questions rejected: not in the passage's language$", plain, re.MULTILINE)
