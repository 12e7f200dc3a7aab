"""rag.evaluation.metrics.metrics: query sets, span relevance and metrics (hand-computed), evaluation of a real
collection."""

from __future__ import annotations

import json
import math

import pytest
from qdrant_client import models

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.cli import main
from rag.documents.loader import SourceFile
from rag.embeddings import get_embedder
from rag.embeddings.cache import EmbeddingCache
from rag.errors import QuerySetError
from rag.evaluation.metrics.metrics import (
    covered_unit,
    evaluate,
    hit_at_k,
    metric_names,
    mrr_at_k,
    ndcg_at_k,
    parse_ks,
    precision_at_k,
    recall_at_k,
)
from rag.evaluation.querysets.queries import Query, load_query_set, resolve_labels
from rag.evaluation.sweeps.sweep import evaluate_collection
from rag.retrieval.records import Hit
from rag.store.open import open_store
from tests.conftest import PARAGRAPHS, span_query


def hit(document: str, start: int, end: int, content: str = "", score: float = 0.5, index: int = 0) -> Hit:
    return Hit(score, content or "x" * (end - start), f"id-{document}", document, f"{document}-{index}", index, (),
               1, 1, start, end)


# ---- metrics, by hand ------------------------------------------------------------------------------------

# ranks 1..5: not relevant, unit 0, not relevant, unit 0 again, unit 1; the query has 2 relevant units
COVERS = (None, 0, None, 0, 1)


def test_hit_precision_recall_mrr_by_hand():
    assert [hit_at_k(COVERS, k) for k in (1, 2, 5)] == [0.0, 1.0, 1.0]
    assert precision_at_k(COVERS, 1) == 0.0
    assert precision_at_k(COVERS, 3) == pytest.approx(1 / 3)
    assert precision_at_k(COVERS, 5) == pytest.approx(3 / 5)
    assert precision_at_k(COVERS, 10) == pytest.approx(3 / 10)  # missing hits count as not relevant
    assert recall_at_k(COVERS, 2, 1) == 0.0
    assert recall_at_k(COVERS, 2, 4) == 0.5  # unit 0 twice is still one unit
    assert recall_at_k(COVERS, 2, 5) == 1.0
    assert mrr_at_k(COVERS, 1) == 0.0
    assert mrr_at_k(COVERS, 2) == 0.5
    assert mrr_at_k(COVERS, 10) == 0.5
    assert mrr_at_k((None, None, 0), 3) == pytest.approx(1 / 3)


def test_ndcg_by_hand():
    # gains at rank 2 (unit 0) and rank 5 (unit 1); rank 4 repeats unit 0 and gains nothing
    dcg = 1 / math.log2(3) + 1 / math.log2(6)
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at_k(COVERS, 2, 5) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(COVERS, 2, 3) == pytest.approx((1 / math.log2(3)) / ideal)
    assert ndcg_at_k(COVERS, 2, 1) == 0.0
    assert ndcg_at_k((0,), 1, 10) == 1.0  # one unit found first: perfect, however large k
    assert ndcg_at_k((None, 0), 1, 10) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_k((), 1, 5) == 0.0


def test_evaluate_means_over_queries_and_cuts_at_each_k():
    queries = [Query("a", ("A",)), Query("b", ("B",)), Query("c", ("C",))]
    results = [
        [hit("A", 0, 10)],  # rank 1
        [hit("X", 0, 10), hit("X", 10, 20), hit("B", 0, 10)],  # rank 3
        [hit("X", 0, 10)],  # not found
    ]
    evaluation = evaluate(queries, results, [1, 3])
    assert evaluation.metrics["hit@1"] == pytest.approx(1 / 3)
    assert evaluation.metrics["hit@3"] == pytest.approx(2 / 3)
    assert evaluation.metrics["mrr@3"] == pytest.approx((1 + 1 / 3) / 3)
    assert evaluation.metrics["precision@3"] == pytest.approx((1 / 3 + 1 / 3 + 0) / 3)
    assert evaluation.metrics["ndcg@3"] == pytest.approx((1 + 1 / math.log2(4)) / 3)
    assert set(evaluation.metrics) == set(metric_names((1, 3)))
    ranks = [o.rank for o in evaluation.per_query]
    assert ranks == [1, 3, None]
    assert evaluation.per_query[1].score == results[1][2].score
    assert evaluation.per_query[1].top_score == results[1][0].score
    assert [o.query.text for o in evaluation.failures(1)] == ["c", "b"]  # unfound first, then by rank
    row = evaluation.to_json()["per_query"][1]
    assert row["rank"] == 3 and [r["relevant"] for r in row["retrieved"]] == [False, False, True]
    assert set(row) >= {"query", "rank", "score", "top_score", "retrieved"}
    assert set(row["retrieved"][0]) >= {"document_title", "chunk_index", "score"}


def test_parse_ks():
    assert parse_ks("10, 1,3,3") == (1, 3, 10)
    for bad in ("0", "a", "", "1,-2"):
        with pytest.raises(ValueError):
            parse_ks(bad)


# ---- relevance by spans ----------------------------------------------------------------------------------


def test_span_relevance_is_half_open_overlap():
    query = Query("q", ("A",), answer="abcde", answer_start=20)  # span [20, 25)
    assert covered_unit(query, hit("A", 10, 20)) is None  # ends where the answer starts
    assert covered_unit(query, hit("A", 10, 21)) == 0
    assert covered_unit(query, hit("A", 24, 40)) == 0
    assert covered_unit(query, hit("A", 25, 40)) is None
    assert covered_unit(query, hit("A", 0, 100)) == 0
    assert covered_unit(query, hit("B", 0, 100)) is None  # right place, wrong document


def test_answer_text_and_document_only_labels():
    answer = Query("q", ("A", "B"), answer="Berlin  ist")
    assert covered_unit(answer, hit("B", 0, 50, content="Die Hauptstadt Berlin\nist groß")) == 1
    assert covered_unit(answer, hit("A", 0, 50, content="Die Hauptstadt Bonn")) is None
    document = Query("q", ("A", "B"))
    assert covered_unit(document, hit("A", 500, 510)) == 0
    assert covered_unit(document, hit("B", 0, 1)) == 1
    assert covered_unit(document, hit("C", 0, 1)) is None


def test_labels_resolve_to_ids_and_unknown_documents_are_listed():
    queries = [Query("q", ("a.pdf",), line=1), Query("r", ("id-b",), line=2)]
    resolved = resolve_labels(queries, [("id-a", "a.pdf"), ("id-b", "b.pdf")], "collection 'c'")
    assert resolved[0].document_ids == (frozenset({"id-a"}),)
    assert covered_unit(resolved[0], Hit(1, "x", "id-a", "renamed.pdf", "c", 0, (), 1, 1, 0, 1)) == 0
    with pytest.raises(QuerySetError) as error:
        resolve_labels(queries + [Query("s", ("c.pdf",), line=7)], [("id-a", "a.pdf")], "collection 'c'")
    message = str(error.value)
    assert "'c.pdf' (line 7)" in message and "'id-b' (line 2)" in message and "a.pdf" in message


# ---- query set files -------------------------------------------------------------------------------------


def test_jsonl_and_csv_query_sets():
    jsonl = "\n".join([
        json.dumps({"query": "Wer?", "document": "a.txt", "answer": "Anna", "answer_start": 3}),
        "",
        json.dumps({"query": "Was?", "documents": ["a.txt", "b.txt"], "id": "extra fields are fine"}),
    ])
    queries = load_query_set(jsonl.encode(), "set.jsonl")
    assert queries[0] == Query("Wer?", ("a.txt",), "Anna", 3, 1)
    assert queries[0].answer_end == 7
    assert queries[1].documents == ("a.txt", "b.txt") and queries[1].line == 3
    csv = "query,document,answer,answer_start,documents\nWer?,a.txt,Anna,3,\nWas?,,,,a.txt|b.txt\n"
    from_csv = load_query_set(("\ufeff" + csv).encode(), "set.csv")
    assert [(q.text, q.documents, q.answer, q.answer_start) for q in from_csv] == [
        ("Wer?", ("a.txt",), "Anna", 3), ("Was?", ("a.txt", "b.txt"), None, None)]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (['{"query": "a", "document": "x"}', '{"query": "b", "document": '], "line 2: not valid JSON"),
        (['["a", "x"]'], "line 1: expected a JSON object"),
        (['{"document": "x"}'], "line 1: 'query' is missing"),
        (['{"query": "a"}'], "line 1: no 'document'"),
        (['{"query": "a", "document": "x", "answer_start": 5}'], "line 1: 'answer_start' needs 'answer'"),
        (['{"query": "a", "document": "x", "answer": "y", "answer_start": "5a"}'], "line 1: 'answer_start' must"),
        (['{"query": "a", "document": "x", "answer": "y", "answer_start": -1}'], "line 1: 'answer_start' must"),
        (['{"query": "a", "documents": ["x", "y"], "answer": "z", "answer_start": 1}'], "names 2 documents"),
        (['{"query": "a", "documents": "x"}'], "'documents' must be a list"),
        (['{"query": "a", "document": 3}'], "named by its title"),
        (["", "  "], "holds no queries"),
    ],
)
def test_malformed_lines_say_which_and_what(lines, expected):
    with pytest.raises(QuerySetError) as error:
        load_query_set("\n".join(lines).encode(), "set.jsonl")
    assert expected in str(error.value) and "set.jsonl" in str(error.value)


def test_malformed_csv_and_encoding():
    with pytest.raises(QuerySetError, match="header with a 'query' column"):
        load_query_set(b"frage,dokument\na,b\n", "set.csv")
    with pytest.raises(QuerySetError, match="line 3: 'answer_start' must"):
        load_query_set(b"query,document,answer,answer_start\na,x,y,1\nb,x,y,eins\n", "set.csv")
    with pytest.raises(QuerySetError, match="not UTF-8"):
        load_query_set(b'{"query": "\xfc"}', "set.jsonl")


# ---- a real collection ---------------------------------------------------------------------------------


@pytest.fixture
def collection():
    store = open_store(":memory:")
    files = [SourceFile(name, "\n\n".join(p).encode()) for name, p in PARAGRAPHS.items()]
    results = pipeline.ingest(files, "c", ChunkSettings(30, 0), get_embedder("fake:64"), store=store)
    assert all(r.ok for r in results)
    return store


def test_collection_evaluation_finds_copied_paragraphs_first(collection):
    # each query is the very text of one chunk: the fake embedder scores that chunk 1.0, so rank 1
    lines = [span_query("berlin.txt", 1, "368 Meter"), span_query("wien.txt", 2, "1897"),
             # the right paragraph's text, but the label points at another paragraph: never rank 1
             span_query("wien.txt", 0, "Hauptstadt", text=PARAGRAPHS["wien.txt"][1])]
    queries = load_query_set("\n".join(json.dumps(q) for q in lines), "set.jsonl")
    cache = EmbeddingCache()
    evaluation = evaluate_collection(queries, "c", get_embedder("fake:64"), store=collection, cache=cache, ks=[1, 5])
    assert [o.rank for o in evaluation.per_query][:2] == [1, 1]
    assert evaluation.per_query[0].score == pytest.approx(1.0, abs=1e-5)
    assert evaluation.per_query[2].rank != 1
    assert evaluation.metrics["hit@1"] == pytest.approx(2 / 3)
    assert cache.misses == 3


def test_collection_evaluation_refuses_unknown_documents_and_wrong_spans(collection):
    fake = get_embedder("fake:64")
    unknown = load_query_set('{"query": "a", "document": "paris.txt"}', "set.jsonl")
    with pytest.raises(QuerySetError, match="'paris.txt' \\(line 1\\).*berlin.txt"):
        evaluate_collection(unknown, "c", fake, store=collection)
    wrong = dict(span_query("berlin.txt", 1, "368 Meter"))
    wrong["answer_start"] += 5
    with pytest.raises(QuerySetError, match="line 1: 'berlin.txt'"):
        evaluate_collection(load_query_set(json.dumps(wrong), "set.jsonl"), "c", fake, store=collection)


def test_eval_command_json_and_table(tmp_path, capsys):
    store_path = str(tmp_path / "qdrant")
    files = [SourceFile(name, "\n\n".join(p).encode()) for name, p in PARAGRAPHS.items()]
    pipeline.ingest(files, "c", ChunkSettings(30, 0), get_embedder("fake:64"), store=open_store(path=store_path))
    queries = tmp_path / "set.jsonl"
    queries.write_text("\n".join(json.dumps(span_query("berlin.txt", i, PARAGRAPHS["berlin.txt"][i][:6]))
                                 for i in range(3)), encoding="utf-8")
    argv = ["eval", str(queries), "--collection", "c", "--store", store_path, "--cache", str(tmp_path / "cache")]
    assert main([*argv, "--json", "--k", "1,2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["queries"] == 3 and set(data["metrics"]) == set(metric_names((1, 2)))
    assert data["metrics"]["hit@1"] == 1.0 and [q["rank"] for q in data["per_query"]] == [1, 1, 1]
    assert data["intervals"]["hit@1"] == [1.0, 1.0] and set(data["intervals"]) == set(data["metrics"])
    assert data["per_query"][0]["retrieved"][0]["document_title"] == "berlin.txt"
    assert (tmp_path / "cache" / "embeddings.sqlite").exists()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "hit" in out and "ndcg" in out and "0 of 3 queries have no relevant chunk in the top 5" in out
    assert "1.000 ±0.000" in out and "95 % bootstrap interval" in out
    queries.write_text('{"query": "a", "document": "paris.txt"}\n', encoding="utf-8")
    assert main(argv) == 1
    assert "paris.txt" in capsys.readouterr().err


@pytest.mark.slow
def test_eval_command_modes(tmp_path, capsys):
    store_path = str(tmp_path / "qdrant")
    store = open_store(path=store_path)
    files = [SourceFile(name, "\n\n".join(p).encode()) for name, p in PARAGRAPHS.items()]
    pipeline.ingest(files, "c", ChunkSettings(30, 0), get_embedder("fake:64"), store=store)
    queries = tmp_path / "set.jsonl"
    queries.write_text("\n".join(json.dumps(q) for q in [span_query("berlin.txt", 1, "368 Meter", "Fernsehturm Höhe"),
                                                         span_query("wien.txt", 2, "1897", "Wann Riesenrad Prater")]),
                       encoding="utf-8")
    argv = ["eval", str(queries), "--collection", "c", "--store", store_path, "--no-cache", "--k", "1,3"]
    assert main([*argv, "--mode", "sparse", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["mode"], data["fusion"], data["embedder"], data["collection"]) == ("sparse", None, None, "c")
    assert [q["rank"] for q in data["per_query"]] == [1, 1]  # each query's words occur in its paragraph only
    assert main([*argv, "--mode", "hybrid", "--fusion", "dbsf", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["mode"], data["fusion"], data["embedder"]) == ("hybrid", "dbsf", "fake:64")
    assert data["metrics"]["hit@3"] == 1.0
    assert main([*argv, "--mode", "hybrid"]) == 0
    assert "2 queries on 'c' (fake:64, hybrid-convex search)" in capsys.readouterr().out
    # a collection from before keyword vectors: dense works, the keyword modes say to re-ingest
    meta = {"rag_lab": {"embedder": "fake:64", "dimension": 64, "vector": "fake-64"}}
    params = models.VectorParams(size=64, distance=models.Distance.COSINE)
    store.client.create_collection("old", vectors_config={"fake-64": params}, metadata=meta)
    pipeline.ingest(files, "old", ChunkSettings(30, 0), get_embedder("fake:64"), store=store)
    old = [*argv[:3], "old", *argv[4:]]
    assert main([*old, "--mode", "dense"]) == 0
    capsys.readouterr()
    assert main([*old, "--mode", "sparse"]) == 1
    err = capsys.readouterr().err
    assert "Collection 'old' has no keyword (sparse) vectors" in err and "Re-ingest" in err
