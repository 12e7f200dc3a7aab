"""Charts as inline SVG for the HTML reports: values with their 95 % intervals as dots and error bars.

No JavaScript and nothing loaded: each chart is one <svg> element to paste into a page. Every string that
reaches the markup goes through html.escape (labels can be document titles); coordinates are numbers
formatted here. Each error bar is a <path class="error-bar"> with end caps, so it has a size even when an
interval is a single point. Hovering a dot shows its exact value and interval (<title>).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")  # Okabe-Ito: colour-blind safe
INK, MUTED, GRID = "#1f1f1f", "#555555", "#dddddd"
FONT = 15  # px at the chart's own width: readable when the chart fills a slide
CHAR = 0.56 * FONT  # a rough width of one character, for sizing label columns
WIDTH = 960
ROW = 30


@dataclass(frozen=True)
class Estimate:
    """One value with its 95 % interval, as a dot with an error bar."""

    label: str
    value: float
    low: float
    high: float
    colour: str = PALETTE[0]
    note: str = ""  # written to the right of the plot, e.g. "best", "tie, p = 0.35"
    strong: bool = False  # a larger dot with a dark ring, the label in bold


@dataclass(frozen=True)
class Series:
    """A line of estimates, one per x (in the order of the chart's xs)."""

    name: str
    points: Sequence[Estimate]
    colour: str


def esc(text: object) -> str:
    """Return text escaped for SVG/HTML text and attribute values (quotes included)."""
    return html.escape(str(text), quote=True)


def value_range(lows: Sequence[float], highs: Sequence[float]) -> tuple[float, float]:
    """Return the axis range: the intervals rounded out to tenths, at least 0.1 wide, within [0, 1] for rates."""
    low, high = min(lows, default=0.0), max(highs, default=1.0)
    start, end = math.floor(low * 10 + 1e-9) / 10, math.ceil(high * 10 - 1e-9) / 10
    if low >= 0 and high <= 1:
        start, end = max(start, 0.0), min(end, 1.0)
    if end - start < 0.1:
        start, end = (end - 0.1, end) if end - 0.1 >= 0 else (start, start + 0.1)
    return start, end


def ticks(start: float, end: float) -> list[float]:
    """Return round tick values from start to end, at most about 8 of them."""
    step = next(s for s in (0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0) if (end - start) / s <= 8.0001)
    first = math.ceil(start / step - 1e-9)
    return [round(i * step, 4) for i in range(first, int(math.floor(end / step + 1e-9)) + 1)]


def _tick_label(value: float, values: Sequence[float]) -> str:
    digits = 2 if any(round(v * 10) != v * 10 for v in values) else 1
    return f"{value:.{digits}f}"


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = FONT, fill: str = INK,
          bold: bool = False, extra: str = "") -> str:
    weight = ' font-weight="700"' if bold else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}" text-anchor="{anchor}"{weight}{extra}>'
            f"{esc(text)}</text>")


def _svg(width: float, height: float, title: str, body: list[str]) -> str:
    return (f'<svg class="chart" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
            f'role="img" aria-label="{esc(title)}"><title>{esc(title)}</title>{"".join(body)}</svg>')


def _hover(point: Estimate) -> str:
    return f"<title>{esc(point.label)}: {point.value:.3f} (95 % interval {point.low:.3f} to {point.high:.3f})</title>"


def _dot(x: float, y: float, point: Estimate) -> str:
    ring = ' stroke="#000" stroke-width="2"' if point.strong else ' stroke="#fff" stroke-width="1"'
    return (f'<circle class="dot" cx="{x:.1f}" cy="{y:.1f}" r="{7 if point.strong else 5}" fill="{point.colour}"'
            f"{ring}>{_hover(point)}</circle>")


def _bar(a: float, b: float, across: float, colour: str, horizontal: bool, cap: float = 6) -> str:
    """Return an error bar from a to b at `across`, with caps, as one path."""
    if horizontal:
        d = f"M{a:.1f} {across - cap:.1f}V{across + cap:.1f}M{a:.1f} {across:.1f}H{b:.1f}M{b:.1f} {across - cap:.1f}" \
            f"V{across + cap:.1f}"
    else:
        d = f"M{across - cap:.1f} {a:.1f}H{across + cap:.1f}M{across:.1f} {a:.1f}V{b:.1f}M{across - cap:.1f} {b:.1f}" \
            f"H{across + cap:.1f}"
    return f'<path class="error-bar" d="{d}" stroke="{colour}" stroke-width="2.2" fill="none"/>'


def legend_items(items: Sequence[tuple[str, str]], x: float, y: float) -> tuple[str, float]:
    """Return a one-line legend (colour, text) from x at baseline y and its width: a dot and error bar each."""
    parts, at = [], x
    for colour, text in items:
        parts.append(_bar(at, at + 26, y - 5, colour, True, 5) + f'<circle cx="{at + 13:.1f}" cy="{y - 5:.1f}" r="5" '
                     f'fill="{colour}"/>' + _text(at + 34, y, text))
        at += 34 + len(text) * CHAR + 24
    return "".join(parts), at - x


def dot_chart(groups: Sequence[tuple[str | None, Sequence[Estimate]]], *, axis: str, title: str,
              legend: Sequence[tuple[str, str]] = ()) -> str:
    """Return a horizontal chart: a line per estimate (label left, note right), grouped under headings."""
    points = [p for _, group in groups for p in group]
    label_width = min(max([len(p.label) for p in points] + [6]) * CHAR + 24, 320)
    note_width = min(max([len(p.note) for p in points] + [0]) * CHAR + 28, 300)
    left, right = label_width, WIDTH - note_width
    start, end = value_range([p.low for p in points], [p.high for p in points])
    scale = (right - left - 16) / (end - start)

    def x_of(v: float) -> float:
        return left + 8 + (v - start) * scale

    body: list[str] = []
    top = 12
    if legend:
        part, _ = legend_items(legend, left, top + 16)
        body.append(part)
        top += 34
    rows, y = [], top
    for heading, group in groups:
        if heading:
            rows.append(_text(8, y + 20, heading, bold=True, fill=group[0].colour if group else INK))
            rows.append(f'<line x1="8" y1="{y + 27:.1f}" x2="{WIDTH - 8}" y2="{y + 27:.1f}" stroke="{GRID}"/>')
            y += 32
        for point in group:
            middle = y + ROW / 2
            rows.append(_text(left - 12, middle + 5, point.label, anchor="end", bold=point.strong))
            rows.append(_bar(x_of(point.low), x_of(point.high), middle, point.colour, True))
            rows.append(_dot(x_of(point.value), middle, point))
            if point.note:
                rows.append(_text(right + 14, middle + 5, point.note, bold=point.strong))
            y += ROW
    bottom = y + 6
    values = ticks(start, end)
    for v in values:
        body.append(f'<line x1="{x_of(v):.1f}" y1="{top:.1f}" x2="{x_of(v):.1f}" y2="{bottom:.1f}" stroke="{GRID}"/>')
        body.append(_text(x_of(v), bottom + 20, _tick_label(v, values), anchor="middle", fill=MUTED, size=FONT - 1))
    body.append(f'<line x1="{left}" y1="{bottom:.1f}" x2="{right}" y2="{bottom:.1f}" stroke="{MUTED}"/>')
    body.extend(rows)
    body.append(_text((left + right) / 2, bottom + 44, axis, anchor="middle"))
    return _svg(WIDTH, bottom + 56, title, body)


def line_chart(series: Sequence[Series], xs: Sequence[str], *, x_axis: str, y_axis: str, title: str) -> str:
    """Return a vertical chart: each series' estimates at the xs, joined by a line, with error bars (dodged)."""
    points = [p for s in series for p in s.points]
    legend_width = min(max(len(s.name) for s in series) * CHAR + 56, 440) if len(series) > 1 else 24  # 1: the axis
    left, right, top, height = 78, WIDTH - legend_width, 16, 400
    bottom = height - 70
    start, end = value_range([p.low for p in points], [p.high for p in points])
    step = (right - left) / max(len(xs), 1)

    def y_of(v: float) -> float:
        return bottom - (v - start) / (end - start) * (bottom - top)

    body: list[str] = []
    values = ticks(start, end)
    for v in values:
        body.append(f'<line x1="{left}" y1="{y_of(v):.1f}" x2="{right}" y2="{y_of(v):.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 10, y_of(v) + 5, _tick_label(v, values), anchor="end", fill=MUTED, size=FONT - 1))
    body.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{MUTED}"/>')
    for i, x in enumerate(xs):
        body.append(_text(left + step * (i + 0.5), bottom + 22, x, anchor="middle", fill=MUTED, size=FONT - 1))
    dodge = min(12.0, step * 0.6 / max(len(series), 1))
    for index, line in enumerate(series):
        offset = (index - (len(series) - 1) / 2) * dodge
        at = [(left + step * (i + 0.5) + offset, p) for i, p in enumerate(line.points)]
        path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f} {y_of(p.value):.1f}" for i, (x, p) in enumerate(at))
        body.append(f'<path d="{path}" stroke="{line.colour}" stroke-width="1.6" fill="none" opacity="0.7"/>')
        for x, p in at:
            body.append(_bar(y_of(p.low), y_of(p.high), x, line.colour, False, 5))
            body.append(_dot(x, y_of(p.value), p))
        if len(series) > 1:
            legend_y = top + 12 + index * 26
            body.append(f'<circle cx="{right + 28:.1f}" cy="{legend_y - 5:.1f}" r="6" fill="{line.colour}"/>')
            body.append(_text(right + 42, legend_y, line.name))
    body.append(_text((left + right) / 2, bottom + 50, x_axis, anchor="middle"))
    body.append(_text(20, (top + bottom) / 2, y_axis, anchor="middle",
                      extra=f' transform="rotate(-90 20 {(top + bottom) / 2:.1f})"'))
    return _svg(WIDTH, height, title, body)
