"""rag.evaluation.metrics.intervals: bootstrap intervals of metrics over queries, checked on known cases."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag.evaluation.metrics.intervals import bootstrap_intervals
from rag.evaluation.metrics.metrics import evaluate
from rag.evaluation.querysets.queries import Query
from rag.retrieval.records import Hit


def hit(document: str, index: int = 0) -> Hit:
    return Hit(0.5, f"Text {document} {index}", document, document, f"{document}-{index}", index, (), None, None,
               None, None)


def outcome_set(found: int, missed: int):
    queries = [Query(f"Frage {i}", ("richtig.md",)) for i in range(found + missed)]
    results = [[hit("richtig.md")] if i < found else [hit("falsch.md")] for i in range(found + missed)]
    return evaluate(queries, results, ks=[1, 5])


def test_an_all_hit_set_has_no_doubt_and_a_half_hit_set_the_binomial_width():
    assert outcome_set(40, 0).intervals["hit@1"] == (1.0, 1.0)
    half = outcome_set(200, 200)
    low, high = half.intervals["hit@1"]
    assert half.metrics["hit@1"] == 0.5
    width = 1.96 * np.sqrt(0.25 / 400)  # the normal approximation of a binomial mean
    assert low == pytest.approx(0.5 - width, abs=0.01) and high == pytest.approx(0.5 + width, abs=0.01)
    assert outcome_set(0, 30).intervals["mrr@5"] == (0.0, 0.0)


def test_intervals_are_seeded_reproducible_and_in_the_json():
    evaluation = outcome_set(7, 5)
    again = outcome_set(7, 5)
    assert evaluation.intervals == again.intervals
    data = json.loads(json.dumps(evaluation.to_json()))
    assert set(data["intervals"]) == set(data["metrics"])
    for name, (low, high) in data["intervals"].items():
        assert low <= data["metrics"][name] <= high


def test_bad_shapes_are_refused_and_empty_sets_give_zero():
    with pytest.raises(ValueError):
        bootstrap_intervals(np.zeros((3, 2)), ["a"])
    assert bootstrap_intervals(np.zeros((0, 1)), ["a"]) == {"a": (0.0, 0.0)}
