"""bench.paired.paired_table: the one table bench.headers and bench.children print for two evaluations of the
same queries (each side with its interval, the paired difference, its p, and the queries that moved)."""

from __future__ import annotations

from bench.paired import paired_table
from rag.evaluation.metrics.metrics import evaluate
from rag.evaluation.querysets.queries import Query
from rag.retrieval.records import Hit

QUERIES = [Query(f"Frage {i}", ("a",), document_ids=(frozenset({"id-a"}),)) for i in range(12)]


def hit(document: str, index: int) -> Hit:
    return Hit(0.5, "text", f"id-{document}", document, f"{document}-{index}", index, (), 1, 1, 0, 4)


def ranked(rank: int) -> list[Hit]:
    """Return five hits with the relevant one at rank (1-based)."""
    return [hit("a" if i == rank - 1 else "b", i) for i in range(5)]


def test_the_table_shows_both_sides_the_paired_difference_and_what_moved():
    base = evaluate(QUERIES, [ranked(2)] * 12, ks=(1, 5))
    side = evaluate(QUERIES, [ranked(1)] * 10 + [ranked(3)] * 2, ks=(1, 5))

    lines = paired_table(base, side, ["mrr@5", "hit@1"], ("headers off", "headers on"), "headers on")

    assert lines[0] == "| metric | headers off [95 %] | headers on [95 %] | difference [95 %] | p |"
    mrr = lines[2].split(" | ")
    assert mrr[0] == "| mrr@5" and mrr[1].startswith("0.500 ") and mrr[2].startswith(f"{(10 + 2 / 3) / 12:.3f} ")
    assert mrr[3].startswith(f"{(10 + 2 / 3) / 12 - 0.5:+.3f} ")
    assert float(mrr[4].rstrip(" |")) < 0.05  # ten of twelve better: not chance
    hit1 = lines[3].split(" | ")
    assert hit1[1].startswith("0.000 ") and hit1[2].startswith(f"{10 / 12:.3f} ")
    assert lines[-1] == "headers on ranks the answer higher on 10 queries, lower on 2"


def test_equal_sides_differ_by_nothing():
    same = evaluate(QUERIES, [ranked(2)] * 12, ks=(1, 5))
    lines = paired_table(same, same, ["mrr@5"], ("a", "b"), "b")
    assert lines[2].split(" | ")[3].startswith("+0.000 ")
    assert lines[-1] == "b ranks the answer higher on 0 queries, lower on 0"
