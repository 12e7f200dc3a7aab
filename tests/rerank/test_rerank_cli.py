"""--rerank on search, context, eval and sweep, against the loopback stand-in reranker (real HTTP, real Qdrant)."""

from __future__ import annotations

import json

import pytest

from rag.cli import main
from rag.evaluation.querysets.squad import import_squad, write_import
from rag.runs.db import RunLog
from rag.store.open import open_store
from tests.conftest import run
from tests.rerank.stand_in import RerankServer, overlap

pytestmark = pytest.mark.timeout(300)
QUERY = "Passwörter mindestens 12 Zeichen"


@pytest.fixture
def server():
    stand_in = RerankServer()
    yield stand_in
    stand_in.close()


@pytest.fixture
def store(shared_data, tmp_path, capsys):
    folder = str(tmp_path / "qdrant")
    md = str(shared_data / "markdown/asvs-de-V2-Authentication.md")
    assert run(capsys, "ingest", md, "--collection", "t", "--embedder", "fake:32", "--store", folder)[0] == 0
    return folder


def test_search_reranks_the_depth_and_names_the_scale(server, store, capsys):
    argv = ["search", QUERY, "--collection", "t", "--store", store, "--top-k", "5", "--mode", "hybrid"]
    code, out, _ = run(capsys, *argv, "--top-k", "12", "--json")
    before = json.loads(out)["hits"]
    code, out, _ = run(capsys, *argv, "--rerank", f"tei:{server.url}", "--rerank-depth", "12", "--json")
    data = json.loads(out)
    hits = data["hits"]
    assert code == 0 and len(hits) == 5 and server.texts_seen == [[h["content"] for h in before]]
    assert data["rerank"] == {"spec": f"tei:{server.url}", "depth": 12, "scale": data["rerank"]["scale"]}
    assert "TEI" in data["rerank"]["scale"] and {h["score_kind"] for h in hits} == {"rerank"}
    assert [h["score"] for h in hits] == [overlap(QUERY, h["content"]) for h in hits]
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    for hit in hits:  # where each came from in the hybrid list, with its fused score
        assert before[hit["retrieved_rank"] - 1]["content"] == hit["content"]
        assert before[hit["retrieved_rank"] - 1]["score"] == hit["retrieved_score"]
    code, out, _ = run(capsys, *argv, "--rerank", f"tei:{server.url}")
    assert code == 0 and "score (reranker: TEI rerank score" in out and "hybrid rank (score)" in out


def test_a_collections_saved_reranker_is_its_default_until_turned_off(server, store, capsys):
    open_store(path=store).save_collection_setting("t", "rerank", f"tei:{server.url}")  # as sweep --apply-best does
    argv = ["search", QUERY, "--collection", "t", "--store", store, "--json"]
    code, out, err = run(capsys, *argv)
    assert code == 0 and json.loads(out)["rerank"]["spec"] == f"tei:{server.url}" and len(server.texts_seen) == 1
    assert "the default saved with 't'" in err
    code, out, _ = run(capsys, *argv, "--rerank", "off")
    assert code == 0 and json.loads(out)["rerank"] is None and len(server.texts_seen) == 1
    code, out, _ = run(capsys, "context", QUERY, "--collection", "t", "--store", store, "--json")
    assert code == 0 and {c["score_kind"] for c in json.loads(out)["included"]} == {"rerank"}


def test_context_is_built_from_the_reranked_hits(server, store, capsys):
    argv = ["context", QUERY, "--collection", "t", "--store", store, "--top-k", "3", "--json"]
    code, out, _ = run(capsys, *argv, "--rerank", f"tei:{server.url}", "--rerank-depth", "10")
    included = json.loads(out)["included"]
    assert code == 0 and {c["score_kind"] for c in included} == {"rerank"}
    assert [c["score"] for c in included] == sorted((c["score"] for c in included), reverse=True)
    assert len(server.texts_seen[0]) == 10


def test_a_failing_reranker_is_one_line_and_exit_1(store, capsys):
    failing = RerankServer("401")
    try:
        code, out, err = run(capsys, "search", QUERY, "--collection", "t", "--store", store, "--rerank",
                             f"tei:{failing.url}")
    finally:
        failing.close()
    assert code == 1 and out == "" and err.count("\n") == 1 and "HTTP 401" in err
    code, _, err = run(capsys, "search", QUERY, "--collection", "t", "--store", store, "--rerank", "bm25:x")
    assert code == 1 and "Unknown reranker 'bm25:x'" in err and "tei:<url>" in err
    with pytest.raises(SystemExit):
        main(["search", QUERY, "--rerank", f"tei:{failing.url}", "--rerank-depth", "0"])


@pytest.mark.slow
def test_eval_and_a_sweep_with_rerank_off_and_on_say_whether_it_helps(server, shared_data, tmp_path, capsys):
    imported = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=2)
    write_import(imported, tmp_path / "docs")
    queries = str(tmp_path / "docs/queries.jsonl")
    argv = ["sweep", str(tmp_path / "docs"), "--queries", queries, "--chunk-size", "100", "--overlap", "0", "--k",
            "1,5", "--embedder", "fake:32", "--store", str(tmp_path / "q"), "--mode", "dense",
            "--rerank", f"tei:{server.url}", "--rerank-depth", "20"]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["modes"] == ["dense", "dense+rerank"] and [c["rerank"] for c in data["configs"]] == [False, True]
    off, on = (c["metrics"]["mrr@5"] for c in data["configs"])
    effect = data["rerank"]["effect"]
    assert data["rerank"]["spec"] == f"tei:{server.url}" and data["rerank"]["depth"] == 20 and len(effect) == 1
    assert effect[0]["paired"]["difference"] == pytest.approx(on - off, abs=1e-4) and effect[0]["by"] == "mrr@5"
    assert on > off and effect[0]["verdict"] == "helps"  # word overlap beats a hashing embedder on XQuAD
    assert main([*argv, "--rerank-modes", "on"]) == 0
    out = capsys.readouterr().out
    assert "dense+rerank" in out and "no row ran both with and without it" in out
    assert main([*argv[:-4], "--rerank-modes", "on"]) == 1
    assert "--rerank-modes needs a reranker" in capsys.readouterr().err

    collection = data["configs"][0]["collection"]
    evaluate = ["eval", queries, "--collection", collection, "--store", str(tmp_path / "q"), "--k", "1,5",
                "--embedder", "fake:32", "--mode", "dense", "--json"]
    assert main([*evaluate, "--rerank", f"tei:{server.url}", "--rerank-depth", "20"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["rerank"]["depth"] == 20 and result["metrics"]["mrr@5"] == pytest.approx(on)
    found = [q for q in result["per_query"] if q["rank"] is not None and q["rank"] <= 5]
    assert found and all(q["stages"]["reranked"]["rank"] == q["rank"] for q in found)  # the funnel saw the reranker
    assert sum(result["funnel"]["lost_at"].values()) == result["funnel"]["misses"]
    assert main(evaluate) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["rerank"] is None and plain["metrics"]["mrr@5"] == pytest.approx(off)
    assert all(q["stages"]["reranked"] is None for q in plain["per_query"])
    assert plain["funnel"]["lost_at"]["reranked"] == 0
    kept = RunLog(tmp_path / "runs.sqlite").run(data["run"])  # beside the store folder
    assert [row["rerank"] for row in kept["rows"]] == [None, f"tei:{server.url}"]  # the spec, for apply-best


@pytest.mark.slow
def test_answer_sends_the_llm_the_reranked_context_and_takes_the_saved_reranker(server, store, capsys, monkeypatch,
                                                                               chat_server):
    monkeypatch.setenv("OLLAMA_HOST", chat_server.url)
    argv = ["answer", QUERY, "--collection", "t", "--store", store, "--llm", "ollama:llama3.1", "--top-k", "3",
            "--json"]
    code, out, err = run(capsys, *argv, "--rerank", f"tei:{server.url}", "--rerank-depth", "10")
    assert code == 0, err
    data = json.loads(out)
    included = data["context"]["included"]
    assert len(server.texts_seen) == 1 and len(server.texts_seen[0]) == 10
    assert data["rerank"] == {"spec": f"tei:{server.url}", "depth": 10, "scale": data["rerank"]["scale"]}
    assert {c["score_kind"] for c in included} == {"rerank"}
    assert [c["score"] for c in included] == sorted((c["score"] for c in included), reverse=True)
    assert data["context"]["text"] in chat_server.requests[-1]["json"]["messages"][1]["content"]
    # the same context as `rag context` with the same reranker
    code, out, _ = run(capsys, "context", QUERY, "--collection", "t", "--store", store, "--top-k", "3", "--json",
                       "--rerank", f"tei:{server.url}", "--rerank-depth", "10")
    assert json.loads(out)["text"] == data["context"]["text"]

    open_store(path=store).save_collection_setting("t", "rerank", f"tei:{server.url}")  # as sweep --apply-best does
    code, out, err = run(capsys, *argv)
    assert code == 0 and json.loads(out)["rerank"]["spec"] == f"tei:{server.url}" and len(server.texts_seen) == 3
    assert "the default saved with 't'" in err
    assert {c["score_kind"] for c in json.loads(out)["context"]["included"]} == {"rerank"}
    code, out, _ = run(capsys, *argv, "--rerank", "off")
    data = json.loads(out)
    assert code == 0 and data["rerank"] is None and len(server.texts_seen) == 3
    assert "rerank" not in {c["score_kind"] for c in data["context"]["included"]}
