"""--child-size through the command line: ingest, search --json (a child per hit), eval and sweep (a dimension)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.store.test_crash_safety import rag

TEXT = ("# Haltung\n\nZebrafinken leben gern in Gruppen. Sie brauchen eine große Voliere.\n\n## Futter\n\n"
        + " ".join(f"Die Vögel fressen Hirse und Keimfutter der Sorte {i}." for i in range(30))
        + "\n\n## Wasser\n\nFrisches Wasser gibt es jeden Morgen in einer flachen Schale. Das Bad mögen sie.\n")


def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    guide = tmp_path / "ratgeber.md"
    guide.write_text(TEXT, encoding="utf-8")
    start = TEXT.index("flachen Schale")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "Worin gibt es das Wasser?", "document": "ratgeber.md",
                                   "answer": "flachen Schale", "answer_start": start}) + "\n", encoding="utf-8")
    return tmp_path / "qdrant", guide, queries


@pytest.mark.slow
def test_child_size_through_ingest_search_eval_and_sweep(tmp_path: Path):
    store, guide, queries = setup(tmp_path)
    ingested = json.loads(rag(store, "ingest", str(guide), "--embedder", "fake", "--chunk-size", "60", "--overlap",
                              "0", "--child-size", "16", "--json").stdout)
    assert ingested["results"][0]["status"] == "ingested"
    listed = json.loads(rag(store, "collections", "--json").stdout)
    assert listed[0]["child_size"] == 16
    hits = json.loads(rag(store, "search", "frisches Wasser Schale Hirse", "--top-k", "5", "--json").stdout)["hits"]
    assert len(hits) == 5 and len({h["chunk_id"] for h in hits}) == 5
    for hit in hits:
        start, end = hit["child"]["span"]
        assert set(hit["child"]) >= {"index", "span", "score"} and 0 <= start < end <= len(hit["content"])
    assert "Frisches Wasser" in hits[0]["content"][hits[0]["child"]["span"][0]:hits[0]["child"]["span"][1]]
    evaluated = json.loads(rag(store, "eval", str(queries), "--json", "--no-cache").stdout)
    assert evaluated["metrics"]["hit@5"] == 1.0
    swept = json.loads(rag(store, "sweep", str(guide), "--queries", str(queries), "--chunk-size", "60", "--overlap",
                           "0", "--child-size", "0,16", "--mode", "hybrid", "--embedder", "fake", "--json",
                           "--no-cache").stdout)
    rows = swept["configs"]
    assert sorted(r["child_size"] for r in rows) == [0, 16]
    assert any(r["collection"].endswith("fake-64") and "-ch16-" in r["collection"] for r in rows)


@pytest.mark.slow
def test_a_bad_child_size_is_one_line(tmp_path: Path):
    store, guide, _ = setup(tmp_path)
    failed = rag(store, "ingest", str(guide), "--embedder", "fake", "--child-size", "3", check=False)
    assert failed.returncode == 2 and "Child size must be 0" in failed.stderr
    rag(store, "ingest", str(guide), "--embedder", "fake", "--child-size", "16")
    again = rag(store, "ingest", str(guide), "--embedder", "fake", "--child-size", "32", check=False)
    assert again.returncode != 0 and "child size 16" in again.stderr


@pytest.mark.slow
def test_a_new_collection_gets_children_of_128_tokens_unless_told_0(tmp_path: Path):
    """The default measured in docs/benchmarks.md ("Parent–child retrieval"): children of 128 tokens; 0 turns
    them off, and an existing collection keeps what it was made with."""
    store, guide, _ = setup(tmp_path)
    rag(store, "ingest", str(guide), "--embedder", "fake", "--collection", "standard")
    rag(store, "ingest", str(guide), "--embedder", "fake", "--collection", "plain", "--child-size", "0")
    rag(store, "ingest", str(guide), "--embedder", "fake", "--collection", "plain")  # keeps its 0
    listed = {c["name"]: c["child_size"] for c in json.loads(rag(store, "collections", "--json").stdout)}
    assert listed == {"standard": 128, "plain": 0}
    swept = json.loads(rag(store, "sweep", str(guide), "--queries", str(setup(tmp_path)[2]), "--embedder", "fake",
                           "--chunk-size", "200", "--overlap", "0", "--json", "--no-cache").stdout)
    assert {r["child_size"] for r in swept["configs"]} == {128}  # one row per search mode
    rag(store, "ingest", str(guide), "--embedder", "fake", "--collection", "own", "--child-size", "0",
        "--chunk-size", "200", "--overlap", "0")
    own = json.loads(rag(store, "sweep", "--collection", "own", "--queries", str(setup(tmp_path)[2]),
                         "--embedder", "fake", "--chunk-size", "200", "--overlap", "0", "--json").stdout)
    assert {(r["child_size"], r["collection"]) for r in own["configs"]} == {(0, "own")}  # searched as stored
