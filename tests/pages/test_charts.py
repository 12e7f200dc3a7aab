"""ui.charts pieces that need no browser: the time per configuration of a sweep searched in several modes."""

from __future__ import annotations

from rag.evaluation.metrics import evaluate
from rag.evaluation.modes import parse_mode
from rag.evaluation.queries import Query
from rag.evaluation.results import ConfigResult, SweepConfig, SweepResult
from ui import charts


def _rows(size: int, collection: str) -> list[ConfigResult]:
    """Return the rows of one configuration in three modes, with their seconds as a sweep records them."""
    evaluation = evaluate([Query("Frage", ("a.md",))], [[]], ks=[1])
    first = {"chunking": 1.0, "embedding": 20.0, "indexing": 2.0, "searching": 3.0}  # builds and searches all modes
    later = {"chunking": 0.0, "embedding": 0.0, "indexing": 0.0, "searching": 0.001}  # its own scoring only
    return [ConfigResult(SweepConfig(size, 0), collection, evaluation, 10, 300.0, first if i == 0 else later, False,
                         10 if i == 0 else 0, parse_mode(mode)) for i, mode in enumerate(("hybrid", "dense", "sparse"))]


def test_time_per_configuration_holds_all_its_modes():
    result = SweepResult([*_rows(400, "c400"), *_rows(200, "c200"), *_rows(400, "c400")], "fake:8", (1,), 1,
                         ["a.md"], 0.0)
    frame = charts.time_frame(result)
    totals = frame.groupby("configuration", sort=False)["seconds"].sum()
    assert list(totals.index) == ["400 / 0", "200 / 0", "400 / 0 (again)"]
    assert all(abs(t - 26.002) < 1e-9 for t in totals)  # no configuration (or mode) shows an empty bar
    assert set(frame["modes"]) == {"hybrid-rrf, dense, sparse"}
    assert frame[frame["stage"] == "searching"]["seconds"].round(3).tolist() == [3.002] * 3
