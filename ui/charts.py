"""Altair charts of a sweep: hit@k per configuration, a metric over chunk_size x overlap, time per stage, and where
each query's answer ranked. Data in, chart out: no Streamlit here."""

from __future__ import annotations

import altair as alt
import pandas as pd

from rag.evaluation import FUNNEL_STAGES as STAGES
from rag.evaluation import ConfigResult, FunnelSummary, SweepResult
from rag.reports import rank_rows

RANK_COLOURS = ["#2f9e44", "#f59f00", "#f76707", "#e03131"]  # rank 1, 2–3, 4–5, deeper: strong enough on white


FULL_WIDTH = 700  # pixels of the main column on a 1280 px window beside the sidebar (facets are drawn full width)


def per_mode(chart: alt.Chart | alt.LayerChart, result: SweepResult, width: int = FULL_WIDTH
             ) -> alt.Chart | alt.FacetChart:
    """Return chart as it is for one search mode, else one panel per mode side by side (same scales), the panels
    sized to fit width with the legend below them, where it cannot be pushed out of view."""
    if len(result.modes) < 2:
        return chart
    panel = max(150, (width - 40 * len(result.modes)) // len(result.modes))
    return chart.properties(width=panel).facet(column=alt.Column("mode:N", sort=result.modes, title=None)
                                               ).configure_legend(orient="bottom", direction="horizontal")


def hit_chart(result: SweepResult) -> alt.LayerChart | alt.FacetChart:
    """Return hit@k against k, one line per configuration: colour = chunk_size, dashes = overlap, bars = the 95 %
    interval; a panel per mode."""
    frame = pd.DataFrame([{"chunk_size": r.config.chunk_size, "overlap": r.config.overlap, "mode": r.mode.label,
                           "k": k, "hit": r.metrics[f"hit@{k}"], "low": r.evaluation.intervals[f"hit@{k}"][0],
                           "high": r.evaluation.intervals[f"hit@{k}"][1]} for r in result.results for k in result.ks])
    tooltip = ["chunk_size", "overlap", "mode", "k", alt.Tooltip("hit:Q", format=".3f"),
               alt.Tooltip("low:Q", format=".3f", title="95 % from"), alt.Tooltip("high:Q", format=".3f",
                                                                                  title="95 % to")]
    base = alt.Chart().encode(
        x=alt.X("k:Q", scale=alt.Scale(domain=[0, result.ks[-1]]), axis=alt.Axis(values=list(result.ks))),
        color=alt.Color("chunk_size:O", scale=alt.Scale(scheme="viridis")),
        detail=["chunk_size:O", "overlap:O", "mode:N"], tooltip=tooltip)
    lines = base.mark_line(point=True).encode(
        y=alt.Y("hit:Q", title="hit@k (bars: 95 % interval)", scale=alt.Scale(domain=[0, 1])),
        strokeDash=alt.StrokeDash("overlap:O", legend=alt.Legend(symbolType="stroke", symbolSize=400,
                                                                 symbolStrokeColor="#444", symbolStrokeWidth=2,
                                                                 symbolFillColor="transparent")))  # dashes, not dots
    bars = base.mark_rule(opacity=0.55, strokeWidth=1.5).encode(y="low:Q", y2="high:Q")
    return per_mode(alt.layer(lines, bars, data=frame).properties(height=300), result)


# Charts with one band per sweep row are sized per band: a fixed height is shared with axes and legend under
# Streamlit's fit, which left a few pixels per row and dropped the overlapping labels.
ROW_STEP = alt.Step(28)


def band_title(text: str) -> alt.TitleParams:
    """Return what the bands are, written above the chart from its left edge: as the y axis' vertical title it
    was cut to the plot's height ("chunk_siz…" over one or two rows)."""
    return alt.TitleParams(text, anchor="start", frame="bounds", orient="top", fontSize=11, fontWeight="bold",
                           color="#555555")
STANDING_COLOURS = {"best": "#1c7ed6", "tie": "#74c0fc", "worse": "#adb5bd"}


def interval_chart(result: SweepResult, metric: str) -> alt.LayerChart:
    """Return metric per row as a dot with its 95 % interval: the best, its ties (paired test) and the rest."""
    frame = pd.DataFrame([{"configuration": row_name(r), "value": r.metrics[metric],
                           "low": r.evaluation.intervals[metric][0], "high": r.evaluation.intervals[metric][1],
                           "standing": place.mark}
                          for place in result.standing(metric) for r in [place.row]])
    tooltip = ["configuration", "standing", alt.Tooltip("value:Q", format=".3f", title=metric),
               alt.Tooltip("low:Q", format=".3f", title="95 % from"), alt.Tooltip("high:Q", format=".3f",
                                                                                  title="95 % to")]
    base = alt.Chart(frame).encode(y=alt.Y("configuration:N", sort=None, title=None, axis=alt.Axis(labelLimit=260)),
                                   tooltip=tooltip)
    colour = alt.Color("standing:N", title=None, scale=alt.Scale(domain=list(STANDING_COLOURS),
                                                                 range=list(STANDING_COLOURS.values())),
                       legend=alt.Legend(orient="bottom", labelExpr="datum.label == 'tie' ? 'tied with the best' : "
                                         "datum.label == 'worse' ? 'worse (paired test)' : datum.label"))
    rules = base.mark_rule(strokeWidth=2).encode(x=alt.X("low:Q", title=f"{metric} (bars: 95 % interval)",
                                                         scale=alt.Scale(zero=False)), x2="high:Q", color=colour)
    dots = base.mark_circle(size=90, opacity=1).encode(x="value:Q", color=colour)
    return alt.layer(rules, dots).properties(height=ROW_STEP, title=band_title("chunk_size / overlap · mode"))


def heatmap(result: SweepResult, metric: str) -> alt.Chart:
    """Return chunk_size x overlap coloured by metric, with the value in each cell; a panel per mode."""
    frame = pd.DataFrame([{"chunk_size": r.config.chunk_size, "overlap": r.config.overlap, "mode": r.mode.label,
                           "value": r.metrics[metric]} for r in result.results])
    base = alt.Chart().encode(x=alt.X("overlap:O"), y=alt.Y("chunk_size:O", sort="descending", title=None))
    cells = base.mark_rect().encode(color=alt.Color("value:Q", title=metric, scale=alt.Scale(scheme="blues"),
                                                    legend=alt.Legend(format=".3f")),  # as the table rounds
                                    tooltip=["chunk_size", "overlap", "mode", alt.Tooltip("value:Q", format=".3f")])
    middle = (frame["value"].min() + frame["value"].max()) / 2 if len(frame) else 0.5  # the colour scale's middle
    text = base.mark_text(fontSize=13).encode(text=alt.Text("value:Q", format=".3f"),
                                              color=alt.condition(alt.datum.value > middle, alt.value("white"),
                                                                  alt.value("black")))
    chart = alt.layer(cells, text, data=frame).properties(height=60 + 45 * frame["chunk_size"].nunique(),
                                                          title=band_title("chunk_size"))
    return per_mode(chart, result)


def row_name(row: ConfigResult) -> str:
    return f"{row.config.chunk_size} / {row.config.overlap} · {row.mode.label}"


def time_frame(result: SweepResult) -> pd.DataFrame:
    """Return the seconds of each configuration (chunk_size / overlap with all its modes) per stage.

    The modes of a configuration share its collection and one search round trip, so the time is the
    configuration's, not a mode's: per mode rows would show it all on the first mode and nothing on the others.
    """
    groups: list[tuple[str, list]] = []
    for rows in result.configuration_runs():
        names = [name for name, _ in groups]
        name = rows[0].config.short.replace("/", " / ")
        groups.append((name + " (again)" * (name in names or f"{name} (again)" in names), rows))
    return pd.DataFrame([{"configuration": name, "modes": ", ".join(r.mode.label for r in rows), "stage": stage,
                          "seconds": sum(r.seconds.get(stage, 0.0) for r in rows)}
                         for name, rows in groups for stage in rows[0].seconds],
                        columns=["configuration", "modes", "stage", "seconds"])


def time_chart(result: SweepResult) -> alt.Chart:
    """Return the seconds of each configuration split into chunking, embedding, indexing and searching."""
    return alt.Chart(time_frame(result)).mark_bar().encode(
        y=alt.Y("configuration:N", sort=None, title=None, axis=alt.Axis(labelLimit=260)),
        x=alt.X("sum(seconds):Q", title="seconds"), color=alt.Color("stage:N", sort=None),
        tooltip=["configuration", "modes", "stage", alt.Tooltip("seconds:Q", format=".2f")],
    ).properties(height=ROW_STEP, title=band_title("chunk_size / overlap"))


def rank_chart(row: ConfigResult, threshold: float | None) -> alt.LayerChart:
    """Return each query's answer-chunk score (dot, coloured by rank) against its top score (tick) and threshold."""
    depth = row.evaluation.ks[-1]
    found = [r for r in rank_rows(row.evaluation, threshold) if r.rank is not None]
    found.sort(key=lambda r: -r.score)
    bands = ["1", "2–3", "4–5", f"6–{depth}"][: 1 + (depth > 1) + (depth > 3) + (depth > 5)]  # no "6–5" band
    frame = pd.DataFrame([{"query #": i, "query": r.query[:80], "rank": r.rank, "score": r.score,
                           "top score": r.top_score, "gap": r.gap,
                           "rank band": bands[0 if r.rank == 1 else 1 if r.rank <= 3 else 2 if r.rank <= 5 else 3]}
                          for i, r in enumerate(found, 1)], columns=["query #", "query", "rank", "score", "top score",
                                                                     "gap", "rank band"])
    base = alt.Chart(frame).encode(x=alt.X("query #:Q", title="queries whose answer was found, by its score"))
    tooltip = ["query", "rank", alt.Tooltip("score:Q", format=".3f"), alt.Tooltip("top score:Q", format=".3f"),
               alt.Tooltip("gap:Q", format=".3f")]
    top = base.mark_tick(color="#888888", thickness=1.5, size=9, orient="horizontal").encode(
        y=alt.Y("top score:Q", title="score"), tooltip=tooltip)
    dots = base.mark_circle(size=40).encode(
        y="score:Q", tooltip=tooltip,
        color=alt.Color("rank band:N", sort=bands, scale=alt.Scale(domain=bands, range=RANK_COLOURS[: len(bands)])))
    layers = [top, dots]
    if threshold is not None:
        layers.append(alt.Chart(pd.DataFrame({"threshold": [threshold]})).mark_rule(color="#d62728",
                                                                                      strokeDash=[4, 3]).encode(
            y="threshold:Q"))
    return alt.layer(*layers).properties(height=300)


def funnel_chart(summary: FunnelSummary) -> dict:
    """Return the misses by the stage that lost them, every stage in pipeline order (a Vega-Lite spec: bars with
    their count written on them; a stage that lost none shows 0)."""
    values = [{"stage": stage, "misses": count} for stage, count in summary.lost_at.items()]
    encoding = {"x": {"field": "stage", "type": "nominal", "sort": list(STAGES), "title": "lost at",
                      "axis": {"labelAngle": 0}},
                "y": {"field": "misses", "type": "quantitative", "title": "questions",
                      "axis": {"tickMinStep": 1, "format": "d"},  # whole questions; with no miss the axis read 0.000000
                      "scale": {"domainMin": 0, "nice": True}},
                "tooltip": [{"field": "stage", "type": "nominal"}, {"field": "misses", "type": "quantitative"}]}
    bars = {"mark": {"type": "bar", "color": RANK_COLOURS[3]}}
    labels = {"mark": {"type": "text", "dy": -6}, "encoding": {"text": {"field": "misses", "type": "quantitative"}}}
    return {"height": 220, "data": {"values": values}, "encoding": encoding, "layer": [bars, labels]}
