"""rag.evaluation.metrics.paired and a sweep's best and ties: the paired test on known cases, ties on a real sweep."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag.cli.sweep import print_sweep
from rag.embeddings import get_embedder
from rag.evaluation.comparisons.compare import EvaluationComparison
from rag.evaluation.metrics.metrics import evaluate
from rag.evaluation.metrics.modes import SearchMode
from rag.evaluation.metrics.paired import format_p, p_words, paired_difference
from rag.evaluation.querysets.queries import Query
from rag.evaluation.sweeps.results import ConfigResult, SweepConfig, SweepResult
from rag.evaluation.sweeps.sweep import Sweep, run_sweep
from rag.reports.evaluation_html import sweep_report
from rag.retrieval.records import Hit
from rag.store.open import open_store


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
    assert paired_difference(a, b).p_value == 0.25
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


def test_standing_is_one_rule_for_best_ties_and_the_rest_in_row_order():
    """Page, charts, CLI and report read a row's standing from SweepResult.standing, so they cannot disagree."""
    worse, best, close, twin = _row(100, 2), _row(400, 30), _row(200, 29), _row(400, 30)
    result = SweepResult([worse, best, close, twin], "fake:8", (1,), 40, ["a.md"], 0.0)
    places = result.standing()
    assert [place.row for place in places] == result.results  # the same objects, in the same order
    assert [place.mark for place in places] == ["worse", "best", "tie", "tie"]
    assert places[1].test is None and places[0].test.difference < 0 and not places[0].test.tied
    assert {id(row) for row, _ in result.ties()} == {id(p.row) for p in places if p.mark == "tie"}
    worse = f"worse ({p_words(places[0].test.p_value)})"
    assert [place.words() for place in places] == [worse, "best", "tie (too few differ)", "tie (too few differ)"]
    assert places[2].words("{mark}, {why}") == "tie, too few differ"


def test_every_rows_standing_is_written_in_the_cli_table_and_the_report(capsys):
    """A worse row's cell is not left empty: "worse (p = …)" as "tie (p = …)" and "best" are written."""
    result = SweepResult([_row(100, 2), _row(400, 30), _row(200, 29)], "fake:8", (1,), 40, ["a.md"], 0.0)
    worse = result.standing()[0]
    print_sweep(result)
    table = capsys.readouterr().out.splitlines()
    row = next(line for line in table if line.lstrip().startswith("100 "))
    assert row.rstrip().endswith(f"worse ({p_words(worse.test.p_value)})"), row
    assert '<span class="mark worse">worse</span>' in sweep_report(result, "mrr@1")


@pytest.mark.slow
def test_a_sweep_with_two_identical_configurations_reports_them_as_tied(xquad):
    documents, queries = xquad
    configs = [SweepConfig(200, 0), SweepConfig(100, 0), SweepConfig(200, 0)]
    result = run_sweep(Sweep(documents, queries, configs, ks=[1, 5], modes=["dense", "sparse"]),
                       get_embedder("fake:16"), store=open_store(":memory:"))
    data = json.loads(json.dumps(result.to_json()))
    best, metric = result.best(), data["best"]["by"]
    twin = next(r for r in result.results if r is not best and (r.config, r.mode) == (best.config, best.mode))
    tied = {(t["chunk_size"], t["overlap"], t["mode"]): t for t in data["ties"]}
    same = tied[(best.config.chunk_size, best.config.overlap, best.mode.mode)]
    assert same["paired"] == {"difference": 0.0, "interval": [0.0, 0.0], "p_value": 1.0, "queries": len(queries),
                              "tied": True, "differing": 0, "too_few_differ": True}
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


@pytest.mark.parametrize(("diffs", "p"), [([1.0] * 5, 2 / 32), ([1.0] * 6, 2 / 64), ([1.0, 1.0, 1.0, -1.0], 10 / 16),
                                          ([0.5, -0.25, 1.0, 0.2, 0.3, 0.1, 0.4], None)])
def test_known_exact_p_values(diffs, p):
    b = np.zeros(40)
    b[: len(diffs)] = diffs
    if p is None:  # by hand: the share of the 2**7 sign patterns whose |sum| reaches the observed one
        signs = np.array([[1 if (i >> j) & 1 else -1 for j in range(7)] for i in range(128)])
        p = float(np.mean(np.abs(signs @ np.array(diffs)) >= abs(sum(diffs)) - 1e-9))
    assert paired_difference(np.zeros(40), b).p_value == pytest.approx(p, abs=1e-12)


def test_five_questions_all_one_way_are_too_few_to_tell():
    a, b = np.zeros(40), np.zeros(40)
    b[:5] = 1.0  # B better on 5 questions, the same on 35: the smallest possible p is 2 / 2**5 = 0.0625
    test = paired_difference(a, b)
    assert test.p_value == 0.0625 and test.tied and test.too_few_differ and test.differing == 5
    assert test.low <= 0.0 <= test.high  # the interval agrees: 0 is not rejected
    assert test.to_json()["too_few_differ"] is True and test.to_json()["differing"] == 5
    assert test.few_words() == "only 5 of 40 questions differ: too few questions differ to tell"
    verdict = EvaluationComparison((1,), {"mrr@1": 0.0}, {"mrr@1": 0.125}, {"mrr@1": 0.125},
                                   paired={"mrr@1": test}).verdict()
    assert "Only 5 of 40 questions differ: too few questions differ to tell whether A or B is better" in verdict
    b[5] = 1.0  # six: 2 / 64 < 0.05, a difference can show, and here it does
    six = paired_difference(a, b)
    assert not six.too_few_differ and not six.tied and six.low > 0.0
    tiny = paired_difference(np.zeros(4), np.ones(4))  # four questions in all: no shift can be rejected
    assert tiny.too_few_differ and (tiny.low, tiny.high) == (-1.0, 1.0)


def test_the_interval_holds_zero_exactly_when_tied():
    rng = np.random.default_rng(11)
    outcomes = {True: 0, False: 0}
    for case in range(120):
        n = int(rng.integers(6, 60))
        a = 1.0 / rng.integers(1, 6, n) * (rng.random(n) < 0.7)  # reciprocal ranks, some misses
        b = a.copy()
        changed = rng.random(n) < rng.uniform(0.05, 0.5)
        b[changed] = (rng.random(changed.sum()) < rng.uniform(0.3, 1.0)) * 1.0  # found at rank 1, or missed
        test = paired_difference(a, b)
        excludes_zero = test.low > 0.0 or test.high < 0.0
        assert excludes_zero == (not test.tied), (case, test)
        assert test.low <= test.difference <= test.high
        outcomes[test.tied] += 1
    assert min(outcomes.values()) >= 10  # both kinds of case were seen


def test_the_issues_case_is_no_longer_a_tie_inside_an_interval_without_zero():
    # 40 questions, 5 moved one way by about 0.45 each: the old bootstrap interval excluded 0 with p = 0.062.
    a, b = np.zeros(40), np.zeros(40)
    b[:5] = [0.5, 0.5, 0.333, 0.5, 0.5]
    test = paired_difference(a, b)
    assert test.tied and test.too_few_differ and test.low <= 0.0 <= test.high
    assert "p = 0.062" in test.words("mrr@10")


def test_p_reads_as_words():
    assert (p_words(0.0004), p_words(0.062), p_words(0.35)) == ("p < 0.001", "p = 0.062", "p = 0.35")


def test_a_sweep_tie_on_too_few_questions_says_so_in_words_json_and_report():
    best, close = _row(400, 30), _row(200, 26)  # four questions apart: p = 2 / 16, no test could decide
    result = SweepResult([best, close, _row(100, 2)], "fake:8", (1,), 40, ["a.md"], 0.0)
    [(row, test)] = result.ties()
    assert row is close and test.too_few_differ and test.low <= 0.0 <= test.high
    assert "Too few questions differ to tell for 200/0 dense: 5 or fewer questions" in result.tie_summary()
    assert result.to_json()["ties"][0]["paired"]["too_few_differ"] is True
    page = sweep_report(result)
    assert "tie, too few differ" in page and "only 4 of 40 questions differ: too few questions differ to tell" in page
    assert "p = &lt; 0.001" not in page and "p = < 0.001" not in page


def _ranked(size: int, ranks: list[int]) -> ConfigResult:
    """A row whose question i finds its relevant chunk at rank ranks[i] (of 60 hits), scored at k 60."""
    questions = [Query(f"Frage {i}", ("richtig.md",)) for i in range(len(ranks))]
    results = [[_hit("falsch.md")] * (rank - 1) + [_hit("richtig.md")] + [_hit("falsch.md")] * (60 - rank)
               for rank in ranks]
    return ConfigResult(SweepConfig(size, 0), f"c{size}", evaluate(questions, results, ks=[60]), 10, 300.0, {},
                        False, 0, SearchMode())


def test_a_lead_that_rounds_to_zero_is_not_called_ahead():
    """Issue 39, item 10: "is ahead … by 0.000" named a lead the three decimals shown cannot see."""
    same = SweepResult([_row(400, 30), _row(200, 30), _row(100, 2)], "fake:8", (1,), 40, ["a.md"], 0.0)
    words = same.tie_summary()
    assert "ahead" not in words and "by 0.000" not in words
    assert f"400/0 dense and 200/0 dense score the same (mrr@1 {30 / 40:.3f}; the difference's 95 % interval" in words
    ranks = [1] * 20 + [50] + [2] * 19
    tiny = SweepResult([_ranked(400, ranks), _ranked(200, [*ranks[:20], 51, *ranks[21:]])], "fake:8", (60,), 40,
                       ["a.md"], 0.0)
    [(_, test)] = tiny.ties()
    assert 0 < -test.difference < 0.0005  # a lead, but not at three decimals
    words = tiny.tie_summary()
    assert "ahead" not in words and "400/0 dense and 200/0 dense are equal at three decimals (mrr@60" in words
    assert "ahead of 200/0 dense by 0.025" in SweepResult([_row(400, 30), _row(200, 29)], "fake:8", (1,), 40,
                                                          ["a.md"], 0.0).tie_summary()  # a lead that shows
