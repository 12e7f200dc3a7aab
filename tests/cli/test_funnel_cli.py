"""`rag eval --json`'s "stages" and "lost_at", the funnel summary, and `rag search --explain CHUNK_ID`."""

from __future__ import annotations

import json

import pytest

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.documents.loader import SourceFile
from rag.embeddings import get_embedder
from rag.evaluation.funnel.stages import STAGES
from rag.store.open import open_store
from tests.conftest import PARAGRAPHS, run, span_query

OUTCOME_FIELDS = {"query", "documents", "answer", "rank", "score", "top_score", "retrieved"}


@pytest.fixture
def store_path(tmp_path) -> str:
    path = str(tmp_path / "qdrant")
    files = [SourceFile(name, "\n\n".join(p).encode()) for name, p in PARAGRAPHS.items()]
    pipeline.ingest(files, "c", ChunkSettings(30, 0), get_embedder("fake:64"), store=open_store(path=path))
    return path


def write_queries(tmp_path) -> str:
    queries = [span_query("berlin.txt", 1, "368 Meter", "Fernsehturm Höhe"),
               span_query("wien.txt", 2, "1897", "Wann Riesenrad Prater"),
               span_query("berlin.txt", 2, "Spandau", "Hauptstadt Deutschland Einwohner Millionen"),  # asks for another
               span_query("wien.txt", 1, "136 Meter", "Berlin Hauptstadt Deutschland Einwohner")]
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in queries), encoding="utf-8")
    return str(path)


def test_eval_json_names_where_each_miss_was_lost(store_path, tmp_path, capsys) -> None:
    argv = ["eval", write_queries(tmp_path), "--collection", "c", "--store", store_path, "--no-cache", "--k", "1"]
    code, out, _ = run(capsys, *argv, "--json")
    data = json.loads(out)
    assert code == 0 and data["funnel"]["k"] == 1
    for entry in data["per_query"]:
        assert set(entry) > OUTCOME_FIELDS and set(entry["stages"]) >= {*STAGES, "chunk_id", "read"}
        missed = entry["rank"] is None or entry["rank"] > 1
        assert (entry["lost_at"] is not None) == missed  # these small chunks always fit the context
        if entry["rank"] is not None:  # the hybrid ranking the funnel reads is the one eval scored
            assert entry["stages"]["fused"]["rank"] == entry["rank"]
            assert entry["stages"]["fused"]["score"] == pytest.approx(entry["score"])
    lost = [e["lost_at"] for e in data["per_query"] if e["lost_at"]]
    assert len(lost) == 2 and set(lost) <= set(STAGES)
    assert data["funnel"]["misses"] == 2 == sum(data["funnel"]["lost_at"].values())
    assert list(data["funnel"]["lost_at"]) == list(STAGES)
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "2 of 4 answers did not reach the context (top 1, 3000 tokens); lost at:" in out


def test_search_explain_gives_one_chunks_stages(store_path, capsys) -> None:
    base = ["search", "Fernsehturm Höhe", "--collection", "c", "--store", store_path, "--top-k", "1"]
    code, out, _ = run(capsys, *base, "--json", "--top-k", "5")
    hits = json.loads(out)["hits"]
    assert code == 0 and all(h["chunk_id"] for h in hits)
    first, second = hits[0], hits[1]
    code, out, _ = run(capsys, *base, "--explain", second["chunk_id"], "--json")
    data = json.loads(out)
    assert code == 0 and data["k"] == 1 and data["mode"] == "hybrid-convex"
    fused = data["stages"]["fused"]  # (with "child": the point that placed it, in a collection with children)
    assert (fused["rank"], fused["score"]) == (2, pytest.approx(second["score"]))
    assert data["stages"]["dense"]["rank"] == second["dense_rank"]
    assert data["stages"]["context"] == {"included": False, "reason": "not in the top k"}
    assert data["lost_at"] in ("dense", "keyword", "fused") and data["stages"]["read_whole"] is True
    code, out, _ = run(capsys, *base, "--explain", second["chunk_id"])  # the verdict names the ranks shown
    assert code == 0 and f"Lost at {data['lost_at']}: " in out
    assert ("#2 in the fused ranking" if data["lost_at"] == "fused" else
            f"the dense list ranked it #{second['dense_rank']}") in out, out
    code, out, _ = run(capsys, *base, "--explain", first["chunk_id"])
    assert code == 0 and "Found: it is in the context of the top 1." in out
    assert "dense" in out and "keyword" in out and "read whole" in out
    code, out, err = run(capsys, *base, "--explain", "not-a-chunk")
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert "has no chunk 'not-a-chunk'" in err
    code, _, err = run(capsys, *base, "--explain", "00000000-0000-0000-0000-000000000000")
    assert code == 1 and "has no chunk" in err
    code, _, err = run(capsys, *base, "--explain", first["chunk_id"], "--threshold", "0.5")
    assert code == 1 and "leave out --document, --include-toc and --threshold" in err
