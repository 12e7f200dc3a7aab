"""The command line: JSON shapes, exit codes, one-line errors; in-process for speed, one real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.chunking import tokens
from rag.cli import main
from tests.conftest import run

ROOT = Path(__file__).resolve().parents[2]


def test_chunk_json_shape_on_a_real_pdf(shared_data, capsys):
    pdf = str(shared_data / "pdfs/hausarbeit-jura.pdf")
    code, out, _ = run(capsys, "chunk", pdf, "--chunk-size", "200", "--overlap", "20", "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"document", "embedder", "chunks"}
    assert data["embedder"] == {"model_id": "local:multilingual-e5-small-int8", "max_input_tokens": 512,
                                "windowed": True}
    assert {"id", "title", "kind", "pages", "text", "empty_pages"} <= set(data["document"])
    assert data["document"]["kind"] == "pdf" and data["document"]["pages"] == 8
    text = data["document"]["text"]
    for chunk in data["chunks"]:
        assert set(chunk) == {"chunk_index", "content", "token_count", "heading_path", "page_start", "page_end",
                              "start", "end", "table_header", "model_tokens", "boxes"}
        assert chunk["model_tokens"] > chunk["token_count"] // 2
        assert text[chunk["start"] : chunk["end"]] == chunk["content"]
        assert chunk["token_count"] == tokens.count(chunk["content"]) <= 200
    assert any(chunk["heading_path"] for chunk in data["chunks"])


def test_chunk_table_and_tokens_strategy(shared_data, capsys):
    md = str(shared_data / "markdown/asvs-de-Using-ASVS.md")
    code, out, _ = run(capsys, "chunk", md, "--strategy", "tokens", "--chunk-size", "100", "--overlap", "0")
    assert code == 0 and "tokens" in out.splitlines()[0] and "chunk_size 100, overlap 0, tokens" in out


@pytest.mark.parametrize(
    ("relative", "password", "message"),
    [("pdfs/encrypted-file.pdf", None, "password"), ("pdfs/encrypted-file.pdf", "falsch", "wrong"),
     ("pdfs/c02-22.pdf", None, "OCR"), ("pdfs/invalid.pdf", None, "damaged")],
)
def test_bad_files_give_one_line_and_exit_1(shared_data, capsys, relative, password, message):
    argv = ["chunk", str(shared_data / relative)] + (["--password", password] if password else [])
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message.lower() in err.lower()


def test_encrypted_pdf_opens_with_its_password(shared_data, capsys):
    code, out, _ = run(capsys, "chunk", str(shared_data / "pdfs/encrypted-file.pdf"), "--password", "test", "--json")
    assert code == 0 and json.loads(out)["chunks"]


def test_missing_file_and_folder_are_user_errors(tmp_path, capsys):
    assert run(capsys, "chunk", str(tmp_path / "nope.pdf"))[0] == 1
    code, _, err = run(capsys, "chunk", str(tmp_path))
    assert code == 1 and "folder" in err


@pytest.mark.parametrize("argv", [["chunk"], ["chunk", "x.pdf", "--chunk-size", "abc"],
                                  ["chunk", "x.pdf", "--chunk-size", "100", "--overlap", "100"],
                                  ["chunk", "x.pdf", "--strategy", "words"], ["frobnicate"]])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2


def test_store_commands_round_trip(shared_data, tmp_path, capsys):
    store = str(tmp_path / "qdrant")
    files = [str(shared_data / "pdfs/hausarbeit-jura.pdf"), str(shared_data / "pdfs/invalid.pdf"),
             str(shared_data / "markdown/asvs-de-V2-Authentication.md")]
    code, out, err = run(capsys, "ingest", *files, "--collection", "t", "--embedder", "fake:32", "--store", store,
                         "--chunk-size", "300", "--overlap", "30", "--child-size", "0", "--json")  # points = chunks
    assert code == 1, "one file failed, so the exit code says so"
    assert "error: 'invalid.pdf'" in err
    results = json.loads(out)["results"]
    assert [r["ok"] for r in results] == [True, False, True]

    code, out, _ = run(capsys, "--store", store, "collections", "--json")
    points = results[0]["chunks"] + results[2]["chunks"]
    (listed,) = json.loads(out)
    index = listed.pop("index")  # the embedded engine's HNSW index (tests/store/test_edge_index.py)
    assert listed == {"name": "t", "points": points, "embedder": "fake:32", "dimension": 32, "foreign": False,
                      "sparse": True, "chunk_headers": False, "child_size": 0, "children": 0,
                      "defaults": {"mode": None, "fusion": None, "rerank": None, "run": None}}
    assert (index["points"], index["indexed"], index["searches"], index["due"]) == (points, 0, "exact", False)

    code, out, _ = run(capsys, "documents", "--collection", "t", "--store", store, "--json")
    documents = json.loads(out)
    assert {d["title"] for d in documents} == {"hausarbeit-jura.pdf", "asvs-de-V2-Authentication.md"}
    assert all(d["chunk_size"] == 300 and d["overlap"] == 30 for d in documents)

    code, out, _ = run(capsys, "search", "Passwort Mindestlänge", "--collection", "t", "--store", store,
                       "--top-k", "4", "--json")
    assert {h["mode"] for h in json.loads(out)["hits"]} == {"hybrid"}  # the default where keyword vectors exist
    code, out, _ = run(capsys, "search", "Passwort Mindestlänge", "--collection", "t", "--store", store,
                       "--top-k", "4", "--json", "--mode", "dense")
    hits = json.loads(out)["hits"]
    assert code == 0 and len(hits) == 4
    assert set(hits[0]) == {"score", "document_title", "document_id", "chunk_index", "heading_path", "page_start",
                            "page_end", "content", "score_kind", "mode", "dense_score", "sparse_score", "dense_rank",
                            "sparse_rank", "chunk_id", "boxes"}
    assert hits[0]["mode"] == "dense" and hits[0]["score_kind"] == "cosine" and hits[0]["dense_rank"] == 1
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)

    code, out, _ = run(capsys, "context", "Passwort Mindestlänge", "--collection", "t", "--store", store,
                       "--top-k", "6", "--max-tokens", "800", "--json")
    context = json.loads(out)
    assert {"text", "token_count", "sources", "included", "dropped"} <= set(context)
    assert context["token_count"] == tokens.count(context["text"]) <= 800

    asvs = next(d for d in documents if d["title"].startswith("asvs"))
    code, out, _ = run(capsys, "delete", "--collection", "t", "--document", asvs["document_id"][:10], "--store", store)
    assert code == 0 and "asvs-de-V2-Authentication.md" in out
    code, out, _ = run(capsys, "documents", "--collection", "t", "--store", store, "--json")
    assert [d["title"] for d in json.loads(out)] == ["hausarbeit-jura.pdf"]
    assert run(capsys, "delete-collection", "t", "--store", store) == (0, "deleted collection 't'\n", "")
    code, _, err = run(capsys, "search", "x", "--collection", "t", "--store", store, "--embedder", "fake:32")
    assert code == 1 and "'t'" in err and err.count("\n") == 1


@pytest.mark.slow
def test_subprocess_exit_codes_and_stderr(shared_data, tmp_path):
    env = os.environ | {"RAG_QDRANT_PATH": str(tmp_path / "q")}
    ok = subprocess.run([sys.executable, "-m", "rag", "chunk", str(shared_data / "pdfs/crazyones.pdf"), "--json"],
                        capture_output=True, text=True, cwd=ROOT, env=env)
    assert ok.returncode == 0 and json.loads(ok.stdout)["document"]["kind"] == "pdf"
    bad = subprocess.run([sys.executable, "-m", "rag", "search", "x", "--collection", "nope", "--embedder", "fake"],
                         capture_output=True, text=True, cwd=ROOT, env=env)
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.strip().count("\n") == 0 and "nope" in bad.stderr, bad.stderr


def _piped(args: list[str], env: dict, keep: int) -> tuple[bytes, int, str]:
    """Run `python -m rag ARGS | head -c KEEP` with a real pipe: return what was read, the exit code, stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "rag", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT, env=env)
    head = proc.stdout.read(keep) if keep else b""
    proc.stdout.close()  # the reader is gone, as `head` is after its bytes
    err = proc.stderr.read().decode()
    return head, proc.wait(timeout=120), err


@pytest.mark.slow
def test_a_closed_pipe_ends_the_command_quietly(tmp_path):
    """`rag documents --json | head -c 100` and a long `rag chunk --json` cut short: no traceback, exit 141."""
    env = os.environ | {"RAG_QDRANT_PATH": str(tmp_path / "q")}
    text = tmp_path / "lang.txt"
    text.write_text(("Ein Satz über Passwörter und ihre Länge. " * 20 + "\n\n") * 400)  # JSON far over a pipe's 64 kB
    head, code, err = _piped(["chunk", str(text), "--json"], env, keep=100)
    assert head.startswith(b'{"document"') and len(head) == 100
    assert (code, err) == (141, ""), err
    ingest = [sys.executable, "-m", "rag", "ingest", str(text), "--collection", "documents", "--embedder", "fake:32"]
    assert subprocess.run(ingest, capture_output=True, cwd=ROOT, env=env).returncode == 0
    head, code, err = _piped(["documents", "--json"], env, keep=0)  # closed before the first byte is written
    assert (code, err) == (141, ""), err


def test_search_and_context_modes(shared_data, tmp_path, capsys):
    store = str(tmp_path / "qdrant")
    md = str(shared_data / "markdown/asvs-de-V2-Authentication.md")
    assert run(capsys, "ingest", md, "--collection", "t", "--embedder", "fake:32", "--store", store,
               "--child-size", "0")[0] == 0  # the chunks' own ranks explain a score (children: test_children_cli)
    query = ["Passwörter mindestens 12 Zeichen", "--collection", "t", "--store", store, "--top-k", "5"]
    code, out, _ = run(capsys, "search", *query, "--mode", "hybrid", "--fusion", "rrf", "--json")
    hits = json.loads(out)["hits"]
    assert code == 0 and len(hits) == 5
    assert all(h["mode"] == "hybrid" and h["score_kind"] == "rrf" for h in hits)
    assert all(h["dense_rank"] is not None or h["sparse_rank"] is not None for h in hits)
    for h in hits:  # the fused score is explained by the two ranks (Qdrant's RRF, k = 2)
        ranks = [r for r in (h["dense_rank"], h["sparse_rank"]) if r is not None]
        assert h["score"] == pytest.approx(sum(1 / (r + 1) for r in ranks))
        assert (h["dense_rank"] is None) == (h["dense_score"] is None)
    code, out, _ = run(capsys, "search", *query, "--mode", "hybrid", "--fusion", "dbsf", "--json")
    assert {h["score_kind"] for h in json.loads(out)["hits"]} == {"dbsf"}
    code, out, _ = run(capsys, "search", "2.1.1", "--collection", "t", "--store", store, "--mode", "sparse", "--json")
    top = json.loads(out)["hits"][0]
    assert "**2.1.1**" in top["content"] and (top["score_kind"], top["sparse_rank"], top["dense_rank"]) == (
        "bm25", 1, None)
    code, out, _ = run(capsys, "search", *query, "--mode", "hybrid")
    assert code == 0 and "score (convex)" in out and "keyword rank (bm25)" in out
    code, out, _ = run(capsys, "context", *query, "--mode", "sparse", "--json")
    assert code == 0 and json.loads(out)["included"][0]["score_kind"] == "bm25"
    code, out, err = run(capsys, "search", "und die", "--collection", "t", "--store", store, "--mode", "sparse")
    assert code == 1 and "only stop words" in err and err.count("\n") == 1
    with pytest.raises(SystemExit):
        main(["search", "x", "--mode", "keyword"])


def test_ingest_table_shows_notes_and_the_size_is_checked_before_reading(shared_data, tmp_path, capsys, monkeypatch):
    big = tmp_path / "gross.txt"
    big.write_bytes(b"Wort " * 900_000)  # 4.5 MB, over a limit of 3 MB
    store = str(tmp_path / "q")
    monkeypatch.setenv("RAG_MAX_FILE_MB", "3")
    real_read, read = Path.read_bytes, []
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self.name) or real_read(self))
    code, out, err = run(capsys, "ingest", str(big), str(shared_data / "pdfs/multipage.pdf"), "--store", store,
                         "--embedder", "fake")
    assert code == 1 and "error: 'gross.txt' is 4.29 MB; the limit is 3 MB" in err
    assert "gross.txt" not in read, "a file over the limit is refused by its size, never read"
    assert "note: multipage.pdf: 5 of 6 pages have no text" in out


def test_ingest_records_prompts_and_search_uses_them(tmp_path, capsys):
    doc = tmp_path / "a.md"
    doc.write_text("# Frist\n\nDie Kündigungsfrist beträgt drei Monate.\n", encoding="utf-8")
    store = str(tmp_path / "q")
    assert run(capsys, "ingest", str(doc), "--embedder", "fake:16", "--store", store, "--query-prompt", "Frage: ",
               "--document-prompt", "Text: ")[0] == 0
    from rag import pipeline
    from rag.store.open import open_store

    opened = open_store(path=store)
    try:
        meta = opened.collection_meta("documents")
        assert (meta["query_prompt"], meta["document_prompt"]) == ("Frage: ", "Text: ")
        embedder = pipeline.embedder_for(opened, "documents")
        assert (embedder.query_prompt, embedder.document_prompt) == ("Frage: ", "Text: ")
    finally:
        opened.close()
    code, _, err = run(capsys, "ingest", str(doc), "--store", store, "--document-prompt", "Other: ")
    assert code == 1 and "document prompt 'Text: '" in err


@pytest.mark.slow
def test_answer_streams_the_llm_and_reports_its_citations(tmp_path, capsys, monkeypatch, chat_server):
    doc = tmp_path / "vertrag.md"
    doc.write_text("# § 5 Kündigung\n\nDie Kündigungsfrist beträgt drei Monate zum Quartalsende.\n", encoding="utf-8")
    store = str(tmp_path / "q")
    assert run(capsys, "ingest", str(doc), "--embedder", "fake:16", "--store", store)[0] == 0
    monkeypatch.setenv("OLLAMA_HOST", chat_server.url)
    code, out, err = run(capsys, "answer", "Wie lang ist die Kündigungsfrist?", "--store", store,
                         "--llm", "ollama:llama3.1", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["answer"] == "Die Frist beträgt drei Monate [Quelle 1]. Siehe auch [Quelle 9]."
    assert data["citations"] == [{"number": 1, "document_title": "vertrag.md", "document_id": data["context"]
                                  ["sources"][0]["document_id"], "chunk_index": 0, "heading_path": ["§ 5 Kündigung"],
                                  "page_start": None, "page_end": None}]  # Markdown has no pages
    assert data["unknown_citations"] == [9] and data["model"] == "ollama:llama3.1" and data["preset"] == "chat"
    assert data["context"]["text"].startswith("[Quelle 1: vertrag.md — § 5 Kündigung]\n")  # no "S. 1"
    [request] = chat_server.requests
    assert request["path"] == "/api/chat" and request["json"]["model"] == "llama3.1"
    system, user = request["json"]["messages"]
    assert data["context"]["text"] in user["content"] and "Frage: Wie lang ist die Kündigungsfrist?" in user["content"]
    assert data["prompt_tokens"] == tokens.count(system["content"]) + tokens.count(user["content"])
    code, out, err = run(capsys, "answer", "Wie lang ist die Kündigungsfrist?", "--store", store, "--llm",
                         "ollama:llama3.1", "--preset", "generation")
    assert code == 0 and out.strip() == data["answer"]
    assert "cited: [Quelle 1] vertrag.md" in err and "cited but not in the context: 9" in err
    assert chat_server.requests[-1]["json"]["messages"][0]["content"].startswith("Du schreibst Texte")


def test_answer_without_a_reachable_llm_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RAG_LLM", raising=False)
    code, _, err = run(capsys, "answer", "Frist?", "--store", str(tmp_path / "q"))
    assert code == 1 and err.startswith("error: No LLM is configured. Give --llm ollama:<model>")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    code, _, err = run(capsys, "answer", "Frist?", "--store", str(tmp_path / "q"), "--llm", "ollama:llama3.1",
                       "--mode", "sparse")
    assert code == 1 and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["delete", "--collection", "t"], "delete-collection t"),
     (["delete", "--collection", "t", "--interrupted"], "--interrupted needs --document ID"),
     (["delete", "--collection", "t", "--document", ""], "the document id is empty"),
     (["delete", "--collection", "t", "--document", "  "], "the document id is empty"),
     (["delete", "--collection", "t", "--all", "--document", "abc"], "not allowed with"),
     (["delete", "--collection", "t", "--all", "--interrupted"], "--interrupted needs --document ID"),
     (["delete", "--collection", "", "--document", "abc"], "the collection name is empty"),
     (["delete-collection", ""], "the collection name is empty")],
)
def test_deleting_a_collection_must_be_asked_for(capsys, tmp_path, argv, message):
    """A typo or an empty $ID never deletes the collection: it is a usage error (exit 2) that says what to write."""
    store = str(tmp_path / "q")
    (tmp_path / "a.md").write_text("# A\n\nDie Frist beträgt drei Monate.\n", encoding="utf-8")
    assert run(capsys, "ingest", str(tmp_path / "a.md"), "--collection", "t", "--embedder", "fake:32",
               "--store", store)[0] == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--store", store])
    assert exited.value.code == 2 and message in capsys.readouterr().err
    code, out, _ = run(capsys, "documents", "--collection", "t", "--store", store, "--json")
    assert code == 0 and [d["title"] for d in json.loads(out)] == ["a.md"]


def test_delete_all_deletes_the_collection(capsys, tmp_path):
    store = str(tmp_path / "q")
    (tmp_path / "a.md").write_text("# A\n\nDie Frist beträgt drei Monate.\n", encoding="utf-8")
    run(capsys, "ingest", str(tmp_path / "a.md"), "--collection", "t", "--embedder", "fake:32", "--store", store)
    assert run(capsys, "delete", "--collection", "t", "--all", "--store", store)[:2] == (0, "deleted collection 't'\n")
    code, out, _ = run(capsys, "collections", "--store", store, "--json")
    assert json.loads(out) == []
