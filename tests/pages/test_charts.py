"""Chart pieces that need no browser: time per configuration, rank labels on the map, the rank curve's axis title."""

from __future__ import annotations

import pandas as pd

from rag.evaluation.metrics.metrics import evaluate
from rag.evaluation.metrics.modes import parse_mode
from rag.evaluation.querysets.queries import Query
from rag.evaluation.sweeps.results import ConfigResult, SweepConfig, SweepResult
from rag.reports.scores import distribution_of
from rag.retrieval import SearchRequest
from ui import charts
from ui.parts import embedding_map, score_distribution


def _rows(size: int, collection: str) -> list[ConfigResult]:
    """Return the rows of one configuration in three modes, with their seconds as a sweep records them."""
    evaluation = evaluate([Query("Frage", ("a.md",))], [[]], ks=[1])
    first = {"chunking": 1.0, "embedding": 20.0, "indexing": 2.0, "searching": 3.0}  # builds and searches all modes
    later = {"chunking": 0.0, "embedding": 0.0, "indexing": 0.0, "searching": 0.001}  # its own scoring only
    return [ConfigResult(SweepConfig(size, 0), collection, evaluation, 10, 300.0, first if i == 0 else later, False,
                         10 if i == 0 else 0, parse_mode(mode))
            for i, mode in enumerate(("hybrid-rrf", "dense", "sparse"))]


def test_time_per_configuration_holds_all_its_modes():
    result = SweepResult([*_rows(400, "c400"), *_rows(200, "c200"), *_rows(400, "c400")], "fake:8", (1,), 1,
                         ["a.md"], 0.0)
    frame = charts.time_frame(result)
    totals = frame.groupby("configuration", sort=False)["seconds"].sum()
    assert list(totals.index) == ["400 / 0", "200 / 0", "400 / 0 (again)"]
    assert all(abs(t - 26.002) < 1e-9 for t in totals)  # no configuration (or mode) shows an empty bar
    assert set(frame["modes"]) == {"hybrid-rrf, dense, sparse"}
    assert frame[frame["stage"] == "searching"]["seconds"].round(3).tolist() == [3.002] * 3


def test_hits_close_on_the_map_share_one_rank_label():
    points = [(0.0, 0.0, 0), (0.001, 0.001, 1), (0.5, 0.5, 2), (0.51, 0.49, 3), (1.0, 1.0, 0), (0.02, -0.002, 4),
              (0.9, 0.1, 5)]
    data = pd.DataFrame([{"x": x, "y": y, "hit": rank or None, "is_hit": int(bool(rank))} for x, y, rank in points])
    labels = embedding_map.rank_labels(data)
    assert labels["label"].tolist() == ["1, 4", "2, 3", "5"]  # 1 and 4 overlap, 2 and 3 too; 5 stands alone
    assert labels[["x", "y"]].values.tolist()[:2] == [[0.001, 0.001], [0.5, 0.5]]  # at the better hit's place
    # every label is at least its own width plus a margin away from any other on the same height
    boxes = [(x, y, len(t) * embedding_map.CHAR) for x, y, t in labels.itertuples(index=False)]
    for i, (x, y, w) in enumerate(boxes):
        for u, v, _ in boxes[i + 1:]:
            assert abs(v - y) >= embedding_map.NEAR[1] or not -embedding_map.NEAR[0] < u - x < w + embedding_map.NEAR[0]


def test_the_rank_curve_keeps_its_y_title_shorter_than_the_plot():
    # A rotated title longer than the plot is tall made Vega's fit layout shrink the plot on every window resize
    # until the curve was a flat line (seen in Chromium with "weighted sum of normalised scores (convex)").
    dist = distribution_of([0.8] + [0.55 - i * 0.004 for i in range(60)], SearchRequest(top_k=5, mode="hybrid"),
                           score_kind="convex")
    spec = score_distribution.rank_line(dist, "weighted sum of normalised scores (convex)")  # a Vega-Lite spec
    axes = [layer["encoding"]["y"].get("axis", {}) for layer in spec["layer"]
            if layer["encoding"].get("y", {}).get("title")]
    assert axes and all(0 < axis.get("titleLimit", 10**6) <= score_distribution.HEIGHT - 80 for axis in axes)


def test_the_report_gives_every_mode_row_its_configurations_time():
    """The HTML report's time column showed about 0 for a configuration's later modes (the first held it all)."""
    import re

    from rag.reports.evaluation_html import sweep_report

    result = SweepResult([*_rows(400, "c400"), *_rows(200, "c200")], "fake:8", (1,), 1, ["a.md"], 0.0)
    assert [len(run) for run in result.configuration_runs()] == [3, 3]
    html = sweep_report(result)
    assert "time (s)" in html
    times = re.findall(r"<td>(\d+\.\d)(?:<br>|</td>)", html.split("<tbody>", 1)[1].split("</tbody>", 1)[0])
    assert times.count("26.0") == 6, times  # each of the 6 rows: 1 + 20 + 2 + 3 + 2 x 0.001 seconds
