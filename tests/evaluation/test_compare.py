"""rag.evaluation.comparisons.compare and the compare command: same text across chunkings, rank shifts, evaluation
deltas."""

from __future__ import annotations

import json

import pytest

from rag import pipeline
from rag.chunking import ChunkSettings
from rag.cli import main
from rag.cli.compare import parse_side
from rag.embeddings import get_embedder
from rag.errors import RagError
from rag.evaluation.comparisons.compare import compare_evaluations, compare_hits, document_difference, same_text
from rag.evaluation.metrics.metrics import evaluate
from rag.evaluation.metrics.modes import SearchMode
from rag.evaluation.querysets.queries import Query
from rag.pipeline import SourceFile
from rag.retrieval.records import Hit
from rag.store.open import open_store
from tests.conftest import PARAGRAPHS, ingest_paragraphs, span_query


def hit(document: str, start: int | None, end: int | None, score: float = 0.5, content: str = "",
        chunk_id: str | None = None, kind: str = "cosine") -> Hit:
    return Hit(score, content or f"{document} {start}-{end}", f"id-{document}", document,
               chunk_id or f"{document}-{start}-{end}", 0, (), 1, 1, start, end, score_kind=kind)


def test_same_text_needs_half_of_the_shorter_span():
    assert same_text(hit("X", 0, 100), hit("X", 50, 150))  # 50 of 100 in common: exactly half
    assert not same_text(hit("X", 0, 100), hit("X", 60, 160))  # 40 of 100: a neighbour sharing its overlap
    assert same_text(hit("X", 100, 300), hit("X", 0, 400))  # a small chunk inside a big one
    assert not same_text(hit("X", 0, 100), hit("X", 100, 200))  # touching is not overlapping
    assert not same_text(hit("X", 0, 100), hit("Y", 0, 100))  # same span, other document
    unplaced = hit("X", None, None, content="Ein  Satz.")  # a foreign chunk without offsets: compared by content
    assert same_text(unplaced, hit("X", None, None, content="Ein Satz.", chunk_id="o"))
    assert same_text(hit("X", None, None, chunk_id="7"), hit("Y", None, None, chunk_id="7"))  # same point


def test_compare_hits_across_chunkings_by_hand():
    a = [hit("X", 0, 200), hit("X", 200, 400), hit("Y", 0, 200)]  # chunk_size 200
    b = [hit("X", 0, 400), hit("Z", 0, 100), hit("Y", 150, 550)]  # chunk_size 400; Y shares only 50 of 200
    c = compare_hits(a, b)
    assert [(r.rank, r.other_ranks, r.shift) for r in c.a] == [(1, (1,), 0), (2, (1,), -1), (3, (), None)]
    assert [(r.rank, r.other_ranks, r.shift) for r in c.b] == [(1, (1, 2), 0), (2, (), None), (3, (), None)]
    assert [r.rank for r in c.shared_a] == [1, 2] and [r.rank for r in c.only_a] == [3]
    assert [r.rank for r in c.only_b] == [2, 3] and c.b[0].other_rank == 1
    assert c.summary() == ("2 of A's 3 hits are also among B's 3 (1 ranked higher in B, 0 lower, 1 at the same "
                           "rank); 1 only in A, 2 only in B.")


def test_compare_hits_same_chunking_moves():
    x = [hit("D", i * 100, i * 100 + 120) for i in range(4)]  # neighbours overlap by 20 of 120: never the same text
    c = compare_hits([x[0], x[1], x[2]], [x[2], x[0], x[3]])
    assert [r.shift for r in c.a] == [1, None, -2] and [r.shift for r in c.b] == [-2, 1, None]
    assert len(c.shared_a) == 2 and len(c.only_a) == 1 and len(c.only_b) == 1
    assert compare_hits([], x).only_b == list(compare_hits([], x).b)


def test_compare_evaluations_by_hand():
    queries = [Query("a", ("A",), "x", 0), Query("b", ("B",), "x", 0), Query("c", ("C",), "x", 0)]
    first = evaluate(queries, [[hit("A", 0, 10, 0.9)], [hit("X", 0, 10), hit("B", 0, 10, 0.4)], [hit("X", 0, 10)]],
                     [1, 3])
    second = evaluate(queries, [[hit("X", 0, 10), hit("A", 0, 10, 0.7)], [hit("B", 0, 10, 0.8)],
                                [hit("C", 0, 10, 0.03, kind="rrf")]], [1, 3, 5])
    c = compare_evaluations(first, second)
    assert c.ks == (1, 3)
    assert [(q.rank_a, q.rank_b, q.rank_change, q.change) for q in c.per_query] == [
        (1, 2, 1, "worse"), (2, 1, -1, "better"), (None, 1, None, "better")]
    assert c.per_query[0].score_change == pytest.approx(-0.2)
    assert c.per_query[2].score_change is None  # not found in A; and rrf is another scale anyway
    assert c.per_query[0].deltas["mrr@3"] == pytest.approx(-0.5) and c.per_query[2].deltas["hit@3"] == 1.0
    assert c.metrics_a["mrr@3"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert c.metrics_b["mrr@3"] == pytest.approx((0.5 + 1 + 1) / 3)
    assert c.deltas["mrr@3"] == pytest.approx(1 / 3) and c.deltas["hit@1"] == pytest.approx(2 / 3 - 1 / 3)
    assert "hit@5" not in c.deltas
    data = c.to_json()
    assert data["changes"] == {"better": 2, "worse": 1, "same": 0} and data["per_query"][1]["rank_change"] == -1
    assert c.paired["mrr@3"].difference == pytest.approx(1 / 3) and set(data["paired"]) == set(data["deltas"])
    assert data["paired"]["mrr@3"]["tied"] and data["paired"]["mrr@3"]["too_few_differ"]  # 3 queries prove nothing
    assert "only 3 questions, all of them differing: too few questions differ to tell" in data["verdict"].lower()
    with pytest.raises(RagError, match="different query sets"):
        compare_evaluations(first, evaluate(queries[:2], [[], []], [1]))
    with pytest.raises(RagError, match="share no k"):
        compare_evaluations(first, evaluate(queries, [[], [], []], [10]))


def _side(found: list[bool]):
    queries = [Query(f"q{i}", ("A",)) for i in range(len(found))]
    return evaluate(queries, [[hit("A" if f else "X", 0, 10)] for f in found], [1])


def test_a_query_set_comparison_has_a_paired_difference_with_interval_and_p_value():
    a, b = _side([i % 2 == 0 for i in range(60)]), _side([True] * 60)  # B finds 30 answers more, loses none
    c = compare_evaluations(a, b)
    test = c.paired["hit@1"]
    assert test.difference == pytest.approx(0.5) and 0.35 < test.low < 0.5 < test.high < 0.65
    assert test.p_value < 0.001 and not test.tied
    assert c.verdict("hit@1").startswith("B - A: hit@1 +0.500 (95 % interval")
    assert "B is better on these 60 queries" in c.verdict("hit@1")
    same = compare_evaluations(a, _side([i % 2 == 1 for i in range(60)]))  # as many found, other queries
    assert same.paired["hit@1"].difference == 0.0 and same.paired["hit@1"].p_value == pytest.approx(1.0)
    assert "indistinguishable" in same.verdict("hit@1")


def test_parse_side():
    assert parse_side("docs") == parse_side("docs:dense")
    assert parse_side("docs:hybrid", "dbsf").mode == SearchMode("hybrid", "dbsf")
    assert parse_side("a:b:hybrid-rrf").collection == "a:b"
    assert parse_side("team:docs").collection == "team:docs"  # not a mode: part of the name


@pytest.fixture
def two_chunkings(tmp_path):
    """Return a store folder with the Berlin/Wien texts chunked at 30 tokens ('small') and 400 ('big')."""
    path = str(tmp_path / "qdrant")
    store = open_store(path=path)
    ingest_paragraphs(store, "small", chunk_size=30)
    ingest_paragraphs(store, "big", chunk_size=400)
    return path


def test_compare_command_one_query(two_chunkings, capsys):
    query = PARAGRAPHS["wien.txt"][1]
    argv = ["compare", query, "--a", "small", "--b", "big:hybrid", "--top-k", "3", "--store", two_chunkings]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["query"] == query and data["top_k"] == 3
    assert (data["a"]["mode"], data["a"]["fusion"], data["b"]["mode"], data["b"]["fusion"]) == (
        "dense", None, "hybrid", "convex")
    assert data["a"]["embedder"] == data["b"]["embedder"] == "fake:64"
    first = data["a"]["hits"][0]
    assert first["document_title"] == "wien.txt" and first["chunk_index"] == 1 and first["score_kind"] == "cosine"
    assert [(h["document_title"], h["rank"]) for h in data["b"]["hits"]] == [("wien.txt", 1), ("berlin.txt", 2)]
    # each document is one big chunk: every small hit lies inside the big chunk of its document
    assert [(h["other_ranks"], h["shift"]) for h in data["a"]["hits"]] == [([1], 0), ([2], 0), ([1], -2)]
    assert [h["other_ranks"] for h in data["b"]["hits"]] == [[1, 3], [2]]
    assert data["shared"] == {"a": 3, "b": 2} and data["only_a"] == data["only_b"] == 0
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("A: 'small' (dense)") and "B: 'big' (hybrid-convex)" in out and "only in B." in out


def test_compare_command_query_set(two_chunkings, tmp_path, capsys):
    lines = [span_query("berlin.txt", 1, "368 Meter"), span_query("wien.txt", 2, "1897"),
             span_query("wien.txt", 0, "Hauptstadt", text="Stephansdom Wahrzeichen")]
    queries = tmp_path / "set.jsonl"
    queries.write_text("\n".join(json.dumps(q) for q in lines), encoding="utf-8")
    argv = ["compare", "--queries", str(queries), "--a", "small", "--b", "small:sparse", "--k", "1,3",
            "--store", two_chunkings, "--no-cache"]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["queries"] == 3 and data["ks"] == [1, 3] and data["b"]["embedder"] is None
    assert data["a"]["metrics"]["hit@1"] == pytest.approx(2 / 3)
    assert data["deltas"]["mrr@3"] == pytest.approx(data["b"]["metrics"]["mrr@3"] - data["a"]["metrics"]["mrr@3"])
    assert sum(data["changes"].values()) == 3
    row = data["per_query"][0]
    assert row["rank_a"] == 1 and set(row) >= {"rank_b", "rank_change", "score_a", "score_b", "change", "deltas"}
    assert set(row["deltas"]) == {"hit@3", "recall@3", "precision@3", "mrr@3", "ndcg@3"}
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "B - A" in out and "mrr@3" in out and "queries" in out
    assert "95 % interval" in out and data["verdict"] in out and set(data["paired"]) == set(data["deltas"])
    assert main(["compare", "x", "--queries", str(queries), "--a", "small", "--b", "big",
                 "--store", two_chunkings]) == 1
    assert "either QUERY" in capsys.readouterr().err


@pytest.mark.slow
def test_collections_with_other_documents_are_named(two_chunkings, capsys):
    store = open_store(path=two_chunkings)
    assert document_difference(store, "small", "big") == ""  # the same two texts, chunked differently
    files = [SourceFile("graz.txt", b"Graz liegt an der Mur."), SourceFile("linz.txt", b"Linz an der Donau.")]
    pipeline.ingest(files, "big", ChunkSettings(400, 0), get_embedder("fake:64"), store=store)
    words = document_difference(store, "small", "big")
    assert words.startswith("'small' and 'big' hold different documents: 2 documents only in 'big' (graz.txt, "
                            "linz.txt).")
    assert "only in 'small'" not in words and document_difference(store, "big", "big") == ""
    store.close()
    assert main(["compare", "Donau", "--a", "small", "--b", "big", "--store", two_chunkings]) == 0
    assert "Note: 'small' and 'big' hold different documents" in capsys.readouterr().err
