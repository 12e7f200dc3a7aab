"""rag.evaluation.paired and a sweep's best and ties: the paired test on known cases, ties on a real sweep."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag.embeddings import get_embedder
from rag.evaluation.metrics import evaluate
from rag.evaluation.modes import SearchMode
from rag.evaluation.paired import format_p, paired_difference
from rag.evaluation.queries import Query
from rag.evaluation.results import ConfigResult, SweepConfig, SweepResult
from rag.evaluation.sweep import run_sweep
from rag.store.open import open_store
from rag.store.records import Hit


def test_identical_values_are_tied_with_p_one():
    values = np.array([1.0, 0.5, 0.0, 1 / 3] * 10)
    test = paired_difference(values, values.copy())
    assert (test.difference, test.low, test.high, test.p_value) == (0.0, 0.0, 0.0, 1.0) and test.tied


def test_a_side_better_on_every_query_is_not_tied():
    test = paired_difference(np.zeros(30), np.ones(30))
    assert test.difference == 1.0 and (test.low, test.high) == (1.0, 1.0)
    assert test.p_value < 0.001 and not test.tied
    assert paired_difference(np.ones(30), np.zeros(30)).difference == -1.0


def test_the_p_value_matches_the_exact_sign_flip_distribution():
    # 3 of 20 queries better by 1, the rest equal: |mean| >= 3/20 only when the 3 signs agree: 2 of 8 patterns.
    a, b = np.zeros(20), np.zeros(20)
    b[:3] = 1.0
    assert paired_difference(a, b).p_value == pytest.approx(0.25, abs=0.02)
    # As many queries better as worse: the observed mean is 0, every sign pattern is as extreme.
    b[3:6] = -1.0
    assert paired_difference(a, b).p_value == 1.0


def test_the_paired_test_is_seeded_and_refuses_unpaired_values():
    rng = np.random.default_rng(7)
    a, b = rng.random(50), rng.random(50)
    assert paired_difference(a, b) == paired_difference(a, b)
    with pytest.raises(ValueError, match="one value per query"):
        paired_difference(np.zeros(3), np.zeros(4))


def _hit(document: str) -> Hit:
    return Hit(0.5, f"Text {document}", document, document, f"{document}-0", 0, (), None, None, None, None)


def _row(size: int, found: int, queries: int = 40, tokens: float = 300.0, cut: float = 0.0) -> ConfigResult:
    questions = [Query(f"Frage {i}", ("richtig.md",)) for i in range(queries)]
    results = [[_hit("richtig.md" if i < found else "falsch.md")] for i in range(queries)]
    evaluation = evaluate(questions, results, ks=[1])
    return ConfigResult(SweepConfig(size, 0), f"c{size}", evaluation, 10, tokens, {}, False, 0, SearchMode(),
                        cut_share=cut)


def test_a_clearly_worse_row_is_no_tie_and_the_words_say_so():
    result = SweepResult([_row(400, 38), _row(200, 5)], "fake:8", (1,), 40, ["a.md"], 0.0)
    assert result.best().config.chunk_size == 400 and result.ties() == []
    assert "every other configuration is worse on these 40 queries" in result.tie_summary()
    assert "each tested against it one by one" in result.tie_summary()
    assert result.to_json()["ties"] == []


def test_a_close_row_is_a_tie_with_its_difference_and_tie_breakers():
    best, close = _row(400, 30, tokens=300.0, cut=0.8), _row(200, 29, tokens=150.0)
    result = SweepResult([best, close, _row(100, 2)], "fake:8", (1,), 40, ["a.md"], 0.0)
    [(row, test)] = result.ties()
    assert row is close and test.difference == pytest.approx(-1 / 40) and test.low <= test.difference <= test.high
    words = result.tie_summary()
    assert words.startswith("400/0 dense and 200/0 dense are indistinguishable by mrr@1 on these 40 queries")
    assert "ahead of 200/0 dense by 0.025" in words
    assert "200/0 dense embeds every chunk fully (80% of 400/0 dense's chunks are cut by the model)" in words
    assert "200/0 dense has the smallest chunks" in words


def test_a_sweep_with_two_identical_configurations_reports_them_as_tied(xquad):
    documents, queries = xquad
    configs = [SweepConfig(200, 0), SweepConfig(100, 0), SweepConfig(200, 0)]
    result = run_sweep(documents, queries, configs, get_embedder("fake:16"), store=open_store(":memory:"),
                       ks=[1, 5], modes=["dense", "sparse"])
    data = json.loads(json.dumps(result.to_json()))
    best, metric = result.best(), data["best"]["by"]
    twin = next(r for r in result.results if r is not best and (r.config, r.mode) == (best.config, best.mode))
    tied = {(t["chunk_size"], t["overlap"], t["mode"]): t for t in data["ties"]}
    same = tied[(best.config.chunk_size, best.config.overlap, best.mode.mode)]
    assert same["paired"] == {"difference": 0.0, "interval": [0.0, 0.0], "p_value": 1.0, "queries": len(queries),
                              "tied": True}
    assert same["metrics"] == data["best"]["metrics"] == twin.metrics
    assert set(same) - {"paired"} == set(data["configs"][0])  # a tie is a row as in "configs"
    for row, test in result.ties():
        assert test.p_value >= 0.05 and row is not best
    untied = [r for r in result.results if r is not best and all(r is not t for t, _ in result.ties())]
    for row in untied:
        assert result.paired(row).p_value < 0.05 and row.metrics[metric] < best.metrics[metric]
    assert data["tie_summary"].startswith(f"{best.short}, {best.short} (again)") and data["tie_test"]["alpha"] == 0.05


def test_p_values_near_the_level_never_read_across_it():
    assert format_p(500 / 10001) == "0.049"  # below 0.05: not a tie, and it does not read "0.050"
    assert format_p(0.0502) == "0.050" and format_p(0.054) == "0.054"  # ties read 0.050 or more
    assert (format_p(0.35), format_p(0.0004)) == ("0.35", "< 0.001")
