"""Kept runs: eval and sweep keep theirs in runs.sqlite; listed and compared after a restart (another process);
old schemas stay readable; a locked or broken database costs one warning line, never the result; --apply-best."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rag import pipeline
from rag.chunking.tokens import count as count_tokens
from rag.cli import main
from rag.errors import QuerySetError, RunNotFoundError
from rag.evaluation.querysets.squad import import_squad, write_import
from rag.retrieval import SearchRequest
from rag.runs.compare import compare_runs
from rag.runs.db import RunLog, runs_path, runs_path_of
from rag.store.open import open_store

ROOT = Path(__file__).resolve().parents[2]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def cli(*argv: str) -> subprocess.CompletedProcess:
    """Run the CLI in a new process: a restart, with its own connection to the runs database."""
    env = os.environ | {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "rag", *argv], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def squad(shared_data, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("squad")
    write_import(import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=2), folder)
    return folder


@pytest.mark.slow
def test_a_sweep_is_kept_applied_and_compared_after_a_restart(squad, tmp_path, capsys):
    store_path = str(tmp_path / "qdrant")
    queries = str(squad / "queries.jsonl")
    code, out, err = run(capsys, "--store", store_path, "sweep", str(squad), "--queries", queries, "--chunk-size",
                         "100,250", "--overlap", "0,30", "--k", "1,5", "--embedder", "fake:32", "--mode",
                         "dense,hybrid", "--apply-best", "chosen", "--json")
    assert code == 0, err
    sweep = json.loads(out)
    best, sweep_id = sweep["best"], sweep["run"]
    assert isinstance(sweep_id, int) and f"kept as run {sweep_id}" in err
    assert sweep["applied"]["saved"] == {"mode": best["mode"], "fusion": best["fusion"], "rerank": None,
                                         "run": sweep_id}
    assert (tmp_path / "runs.sqlite").is_file()  # beside the Qdrant folder

    # the collection holds the best row's chunks: its size and overlap recorded, as many chunks, none too long
    store = open_store(path=store_path)
    documents = store.documents("chosen")
    assert {(d.chunk_size, d.overlap) for d in documents} == {(best["chunk_size"], best["overlap"])}
    assert sum(d.chunks for d in documents) == best["chunks"]
    tokens = [count_tokens(h.content) for d in documents for h in store.document_chunks("chosen", d.document_id)]
    assert max(tokens) <= best["chunk_size"] and round(sum(tokens) / len(tokens)) == round(best["mean_tokens"])
    assert pipeline.search_defaults(store, "chosen", SearchRequest()) == SearchRequest(best["mode"],
                                                                                      best["fusion"] or "rrf")
    code, out, _ = run(capsys, "--store", store_path, "collections", "--json")
    listed = {c["name"]: c for c in json.loads(out)}
    assert listed["chosen"]["defaults"] == {"mode": best["mode"], "fusion": best["fusion"], "rerank": None,
                                            "run": sweep_id}

    # an evaluation of the chosen collection at its defaults reproduces the best row, question by question
    code, out, err = run(capsys, "--store", store_path, "eval", queries, "--collection", "chosen", "--k", "1,5",
                         "--json")
    assert code == 0, err
    evaluation = json.loads(out)
    assert (evaluation["mode"], evaluation["fusion"]) == (best["mode"], best["fusion"])
    assert evaluation["metrics"] == best["metrics"]
    dense_row = next(i for i, c in enumerate(sweep["configs"], 1) if c["mode"] == "dense")

    # a new process (a restart) lists both runs and compares them
    listed = cli("--store", store_path, "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    runs = {r["id"]: r for r in json.loads(listed.stdout)}
    assert runs.keys() == {sweep_id, evaluation["run"]}
    kept = runs[sweep_id]
    assert kept["kind"] == "sweep" and len(kept["rows"]) == len(sweep["configs"]) and kept["has_report"]
    assert kept["settings"]["embedder"] == "fake:32" and kept["settings"]["query_set"] == "queries.jsonl"
    assert len(kept["settings"]["query_hash"]) == 64 and kept["settings"]["queries"] == sweep["queries"]
    assert kept["rows"][kept["best"]]["metrics"] == best["metrics"]
    assert kept["rows"][0]["intervals"]["mrr@5"] == sweep["configs"][0]["intervals"]["mrr@5"]
    assert runs[evaluation["run"]]["settings"]["collection"] == "chosen"
    assert runs[evaluation["run"]]["rows"][0]["chunk_size"] == best["chunk_size"]

    same = cli("--store", store_path, "runs", "compare", str(sweep_id), str(evaluation["run"]), "--json")
    assert same.returncode == 0, same.stderr
    same = json.loads(same.stdout)
    assert same["queries"] == sweep["queries"] and same["only_a"] == same["only_b"] == 0 and same["same_query_set"]
    assert same["paired"]["mrr@5"]["difference"] == 0 and same["paired"]["mrr@5"]["tied"]
    assert f"All {sweep['queries']} questions score the same" in same["verdict"]

    worse = cli("--store", store_path, "runs", "compare", str(evaluation["run"]), f"{sweep_id}/{dense_row}", "--json")
    worse = json.loads(worse.stdout)
    dense = sweep["configs"][dense_row - 1]
    assert worse["b"]["label"].endswith("dense") and worse["b"]["row"] == dense_row
    assert worse["paired"]["mrr@5"]["difference"] == pytest.approx(dense["metrics"]["mrr@5"] - best["metrics"]["mrr@5"],
                                                                   abs=1e-4)
    assert worse["verdict"].startswith("B - A: mrr@5") and worse["changes"]["worse"] > 0
    table = cli("--store", store_path, "runs", "compare", str(evaluation["run"]), f"{sweep_id}/{dense_row}")
    assert "95 % interval" in table.stdout and worse["verdict"] in table.stdout

    code, out, _ = run(capsys, "--store", store_path, "runs")
    assert code == 0 and str(sweep_id) in out and "sweep" in out and "chosen" in out
    code, out, _ = run(capsys, "--store", store_path, "runs", "delete", str(evaluation["run"]))
    assert code == 0 and [r["id"] for r in RunLog(tmp_path / "runs.sqlite").runs()] == [sweep_id]
    code, _, err = run(capsys, "--store", store_path, "runs", "delete", str(evaluation["run"]))
    assert code == 1 and err.count("\n") == 1 and f"no run {evaluation['run']}" in err


def test_apply_best_refuses_a_target_before_the_sweep_runs(squad, tmp_path, capsys):
    store_path = str(tmp_path / "qdrant")
    base = ["--store", store_path, "sweep", str(squad), "--queries", str(squad / "queries.jsonl"), "--chunk-size",
            "100", "--overlap", "0", "--embedder", "fake:32", "--mode", "dense"]
    code, _, err = run(capsys, *base, "--apply-best", "sweep-mine")
    assert code == 1 and "sweep's own collections" in err and "searching" not in err
    assert run(capsys, "--store", store_path, "ingest", str(squad / "Warsaw.txt"), "--collection", "other",
               "--embedder", "fake:16")[0] == 0
    code, _, err = run(capsys, *base, "--apply-best", "other")
    assert code == 1 and "fake:16" in err and "searching" not in err
    assert not (tmp_path / "runs.sqlite").exists()


def test_a_broken_runs_database_costs_one_warning_not_the_result(squad, tmp_path, capsys):
    store_path = str(tmp_path / "qdrant")
    assert run(capsys, "--store", store_path, "ingest", str(squad / "Warsaw.txt"), "--embedder", "fake:16")[0] == 0
    (tmp_path / "runs.sqlite").mkdir()  # where the file should be: it cannot be opened, like a full disk
    queries = squad / "warsaw.jsonl"
    queries.write_text("\n".join(line for line in (squad / "queries.jsonl").read_text().splitlines()
                                 if "Warsaw" in line), encoding="utf-8")
    code, out, err = run(capsys, "--store", store_path, "eval", str(queries), "--json")
    assert code == 0 and json.loads(out)["metrics"] and json.loads(out)["run"] is None
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "this run was not kept" in warnings[0] and "runs.sqlite" in warnings[0]


def test_a_locked_database_gives_the_warning_quickly(tmp_path):
    log = RunLog(tmp_path / "runs.sqlite", timeout=0.05)
    assert log.save(*record("a")) == 1
    holder = sqlite3.connect(tmp_path / "runs.sqlite")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        run_id, warning = log.save_quietly(*record("b"))
    finally:
        holder.rollback()
        holder.close()
    assert run_id is None and "locked" in warning and "\n" not in warning
    assert [r["id"] for r in log.runs()] == [1]


def record(query_set: str, questions=("q1", "q2", "q3"), ranks=(1, 2, None), ks=(1, 5)) -> tuple[dict, list]:
    """Return a kept run of today's schema with one row: questions at those ranks."""
    pairs = enumerate(zip(questions, ranks, strict=True), 1)
    outcomes = [{"query": q, "line": i, "documents": ["d.txt"], "rank": r, "score": 0.5 if r else None,
                 "score_kind": "cosine", "values": values(r, ks)} for i, (q, r) in pairs]
    metrics = {name: sum(o["values"][name] for o in outcomes) / len(outcomes) for name in outcomes[0]["values"]}
    run = {"schema": 1, "kind": "eval", "created_at": "2026-01-01T00:00:00+00:00", "seconds": 1.0,
           "settings": {"collection": "c", "embedder": "fake:8", "query_set": query_set, "ks": list(ks)},
           "rows": [{"label": "c dense", "mode": "dense", "collection": "c", "metrics": metrics, "intervals": {}}],
           "best": 0}
    return run, [outcomes]


def values(rank: int | None, ks) -> dict:
    return {f"{m}@{k}": (1.0 if rank and rank <= k else 0.0) * (1 / rank if m == "mrr" and rank else 1.0)
            for k in ks for m in ("hit", "mrr")}


def test_a_run_of_an_older_schema_still_lists_and_compares(tmp_path, capsys):
    log = RunLog(tmp_path / "runs.sqlite")
    log.save(*record("new.jsonl"))
    old = {"schema": 0, "kind": "sweep", "created_at": "2025-06-01T00:00:00+00:00",  # no rerank, prompts, hash, ks
           "settings": {"embedder": "e5", "query_set": "old.jsonl", "documents": ["d.txt"]},
           "rows": [{"chunk_size": 200, "overlap": 0, "mode": "hybrid", "fusion": "rrf",
                     "metrics": {"hit@1": 0.0, "mrr@1": 0.0, "hit@10": 1.0, "mrr@10": 0.5}},
                    {"chunk_size": 400, "overlap": 50, "mode": "dense", "metrics": {"hit@1": 1.0, "mrr@1": 1.0,
                                                                                    "hit@10": 1.0, "mrr@10": 1.0}}]}
    rows = [[{"query": q, "documents": ["d.txt"], "rank": r, "values": values(r, (1, 10))}  # no line, score, kind
             for q, r in (("q1", 2), ("q2", 2), ("q4", 1))],
            [{"query": q, "documents": ["d.txt"], "rank": 1, "values": values(1, (1, 10))} for q in ("q1", "q2")]]
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        db.execute("INSERT INTO runs (kind, created_at, schema, data) VALUES ('sweep', '2025', 0, ?)",
                   (json.dumps(old),))
        db.executemany("INSERT INTO outcomes VALUES (2, ?, ?)", [(i, json.dumps(r)) for i, r in enumerate(rows)])
    kept = log.run(2)
    assert kept["settings"]["ks"] == [1, 10] and kept["settings"]["metric"] == "mrr@10" and kept["best"] == 1
    assert [r["label"] for r in kept["rows"]] == ["200/0 hybrid-rrf", "400/50 dense"]
    assert kept["rows"][0]["rerank"] is None and kept["settings"]["query_hash"] is None
    compared = compare_runs(log, "1", "2/1").to_json()  # questions q1, q2 shared; k 1 shared
    assert compared["queries"] == 2 and compared["only_a"] == 1 and compared["only_b"] == 1 and compared["ks"] == [1]
    assert compared["per_query"][0]["rank_b"] is None  # rank 2 is beyond the shared k 1
    assert compared["a"]["metrics"]["hit@1"] == 0.5 and compared["b"]["metrics"]["hit@1"] == 0.0
    assert "verdict" in compared and "too few questions differ" in compared["verdict"]
    assert compare_runs(log, "1", "2").b.row == 1  # a run's best row by default
    code, out, _ = run(capsys, "--store", str(tmp_path / "qdrant"), "runs")
    assert code == 0 and "400/50 dense" in out and "mrr@10 1.000" in out
    with pytest.raises(RunNotFoundError, match="rows 1 to 2"):
        compare_runs(log, "1", "2/3")
    with pytest.raises(RunNotFoundError, match="write a run id"):
        compare_runs(log, "1", "two")
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:  # a row damaged by hand is left out, not a crash
        db.execute("INSERT INTO runs (kind, created_at, schema, data) VALUES ('eval', '2025', 1, '{\"rows\": [')")
    assert [r["id"] for r in log.runs()] == [2, 1]
    with pytest.raises(RunNotFoundError, match="no run 3"):
        log.run(3)
    log.save(*record("other.jsonl", questions=("x", "y"), ranks=(1, None)))
    with pytest.raises(QuerySetError, match="share no question"):
        compare_runs(log, "1", "4")


def test_the_runs_file_lies_beside_the_qdrant_folder_or_in_the_data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_DATA_ROOT", str(tmp_path / "root"))
    monkeypatch.delenv("QDRANT_URL", raising=False)
    monkeypatch.setenv("RAG_QDRANT_PATH", str(tmp_path / "env" / "qdrant"))
    assert runs_path() == tmp_path / "env" / "runs.sqlite"
    assert runs_path(str(tmp_path / "given" / "qdrant")) == tmp_path / "given" / "runs.sqlite"
    assert runs_path(url="http://localhost:6333") == (tmp_path / "root" / "runs.sqlite").resolve()
    assert runs_path_of(open_store(path=str(tmp_path / "opened" / "qdrant"))) == tmp_path / "opened" / "runs.sqlite"
    assert runs_path_of(open_store(":memory:")) == (tmp_path / "root" / "runs.sqlite").resolve()


@pytest.mark.slow
def test_the_best_row_with_chunk_headers_is_applied_with_them(squad, tmp_path, capsys):
    store_path = str(tmp_path / "qdrant")
    code, out, err = run(capsys, "--store", store_path, "sweep", str(squad), "--queries", str(squad / "queries.jsonl"),
                         "--chunk-size", "250", "--overlap", "0", "--chunk-headers", "on", "--k", "1,5",
                         "--embedder", "fake:32", "--mode", "dense", "--apply-best", "headed", "--json")
    assert code == 0, err
    sweep = json.loads(out)
    assert sweep["best"]["chunk_headers"] is True
    store = open_store(path=store_path)
    assert store.chunk_headers("headed") is True  # recorded with the collection: later ingests index the same way
    assert RunLog(tmp_path / "runs.sqlite").run(sweep["run"])["rows"][0]["chunk_headers"] is True
