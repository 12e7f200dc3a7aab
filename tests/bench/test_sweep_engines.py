"""bench/sweep.py --engines: each engine really runs the sweep (its own store type, the setting restored after), and
the comparison of rows across engines names what differs, telling a different tie order from different scores."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from bench.sweep import sweep_engine
from bench.sweep_engines import ENGINE_VARIABLE, metric_differences, parse_engines, rows_agree, side_by_side
from rag.embeddings import get_embedder
from rag.evaluation.metrics.modes import parse_modes
from rag.evaluation.sweeps.sweep import Sweep, SweepConfig
from rag.retrieval.fusion import DEFAULT_FUSION


@pytest.fixture
def engines(xquad, tmp_path, monkeypatch):
    """Return the EngineRuns of a small sweep (3 XQuAD articles, fake:32) on local, then edge."""
    monkeypatch.setenv(ENGINE_VARIABLE, "local")
    documents, queries = xquad
    configs = [SweepConfig(120, 0), SweepConfig(300, 30)]
    sweep = Sweep(documents, queries, configs, ks=[1, 5], modes=parse_modes("dense,sparse,hybrid", DEFAULT_FUSION))
    runs = [sweep_engine(engine, str(tmp_path / engine), ["ahead"], sweep, get_embedder("fake:32"))
            for engine in ("edge", "local")]
    assert os.environ[ENGINE_VARIABLE] == "local"  # set for each run, then restored
    return runs


@pytest.mark.slow
def test_each_engine_runs_the_sweep_and_the_rows_agree(engines):
    edge, local = engines
    assert all(r.reused for r in edge.warm.results)  # the warm run reused the cold run's collections
    assert {e.engine for e in engines} == {"edge", "local"} and len(edge.warm.results) == 6
    # no tie at a cut-off here; on all of XQuAD the engines order some equal keyword scores differently
    # (docs/benchmarks.md)
    assert metric_differences(edge.colds["ahead"], local.colds["ahead"]) == []
    assert rows_agree(engines).startswith("yes: the 6 rows")
    lines = side_by_side(engines)
    assert any(line.startswith("searching edge/local: cold, ahead") for line in lines)
    assert sum(", edge: " in line or ", local: " in line for line in lines) == 4  # cold and warm, each engine


@pytest.mark.slow
def test_differences_name_the_row_and_tell_tie_order_from_other_scores(engines):
    result = engines[0].warm
    row = result.results[1]
    outcomes = list(row.evaluation.per_query)
    first = outcomes[0]
    hits = first.hits
    swapped = replace(first, rank=(first.rank or 0) + 1, covers=(None, *first.covers[:-1]))
    rescored = replace(swapped, hits=(replace(hits[0], score=hits[0].score + 1), *hits[1:]))
    for outcome, ties in ((swapped, 1), (rescored, 0)):
        metrics = {**row.metrics, "hit@1": row.metrics["hit@1"] - 0.25}
        changed = replace(row, evaluation=replace(row.evaluation, metrics=metrics,
                                                  per_query=(outcome, *outcomes[1:])))
        other = replace(result, results=[result.results[0], changed, *result.results[2:]])
        (found,) = metric_differences(result, other)
        assert found.startswith(f"{row.short}: hit@1 {row.metrics['hit@1']:.4f} vs {metrics['hit@1']:.4f} (1 of ")
        assert f"differently, {ties} of them with the same scores" in found
        assert rows_agree([replace(engines[0], warm=other)]).startswith(f"no: edge warm: {row.short}")
    fewer = replace(result, results=result.results[:-1])
    assert metric_differences(result, fewer) == ["other rows: 6 vs 5"]


def test_engines_are_checked():
    assert parse_engines(" local, edge ") == ["local", "edge"]
    for bad in ("local,local", "edge,server", ""):
        with pytest.raises(ValueError, match="--engines takes local, edge"):
            parse_engines(bad)
