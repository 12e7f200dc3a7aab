"""Chart labels a reader must see whole (issue 34.10): the chunk_size label above the histogram's bars, the heatmap's
legend rounded as the table is, band titles that are not cut to a one-row plot, and a look of its own for every
document on the embedding map past the palette's colours."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from rag.evaluation.metrics.metrics import evaluate
from rag.evaluation.querysets.queries import Query
from rag.evaluation.sweeps.results import SweepResult
from rag.reports.embedding_map import EmbeddingMap, MapPoint
from tests.pages.test_charts import _rows
from ui import charts, render
from ui.parts import embedding_map


def _spec(chart) -> dict:
    return chart.to_dict()


def one_row() -> SweepResult:
    return SweepResult(_rows(400, "c400")[:1], "fake:8", (1,), 1, ["a.md"], 0.0)


def test_the_heatmap_legend_is_rounded_to_three_decimals():
    spec = _spec(charts.heatmap(one_row(), "hit@1"))
    colours = [layer["encoding"]["color"] for layer in spec["layer"] if layer.get("mark", {}) in ("rect",) or
               layer.get("mark", {}).get("type") == "rect"]
    assert colours and colours[0]["legend"]["format"] == ".3f"


def test_band_charts_name_their_bands_above_the_plot_not_in_a_cut_vertical_title():
    for chart in (charts.interval_chart(one_row(), "hit@1"), charts.time_chart(one_row())):
        spec = _spec(chart)
        assert spec["title"]["text"].startswith("chunk_size / overlap") and spec["title"]["anchor"] == "start"
        ys = [layer["encoding"]["y"] for layer in spec.get("layer", [spec]) if "y" in layer.get("encoding", {})]
        assert all(y.get("title") is None for y in ys if y.get("field") == "configuration"), ys
    heatmap = _spec(charts.heatmap(one_row(), "hit@1"))  # one chunk_size: its vertical title read "chunk_siz"
    assert heatmap["title"]["text"] == "chunk_size" and heatmap["layer"][0]["encoding"]["y"]["title"] is None


def test_the_chunk_size_label_sits_above_the_tallest_bar():
    spec = render.token_histogram(pd.DataFrame({"tokens": [100, 120, 120, 300]}), 350, (0, 600))
    [label] = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert label["encoding"]["y"] == {"value": 0}  # the plot's top edge ...
    assert label["mark"]["baseline"] == "bottom" and label["mark"]["dy"] < 0  # ... and above it, where no bar is


def test_every_document_on_the_map_keeps_a_colour_and_shape_of_its_own():
    points = tuple(MapPoint(float(i), float(i % 5), f"d{i}", f"Dokument {i:02d}", "", (), 0, "x", False, None)
                   for i in range(45))
    emap = EmbeddingMap("c", "pca", points, len(points), False)
    data = embedding_map.frame(emap, "document")
    assert embedding_map.OTHER not in set(data["colour"])  # none greyed out as "other"
    spec = _spec(embedding_map.chart(emap, data, "document"))
    encoding = spec["layer"][0]["encoding"]
    looks = list(zip(encoding["color"]["scale"]["range"], encoding["shape"]["scale"]["range"], strict=True))
    assert len(encoding["color"]["scale"]["domain"]) == 45 and len(set(looks)) == 45
    assert encoding["color"]["legend"]["symbolLimit"] >= 45


def test_the_rank_bands_stop_at_the_deepest_k():
    """With k up to 5 the legend offered a band "6–5"."""
    row = _rows(400, "c400")[0]
    row = replace(row, evaluation=evaluate([Query("Frage", ("a.md",))], [[]], ks=[1, 5]))
    spec = _spec(charts.rank_chart(row, None))
    colour = next(layer["encoding"]["color"] for layer in spec["layer"] if "color" in layer.get("encoding", {}))
    assert colour["scale"]["domain"] == ["1", "2–3", "4–5"]
