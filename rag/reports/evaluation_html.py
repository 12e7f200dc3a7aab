"""A sweep or an evaluation as one self-contained HTML page, for an analyst's slides or a PDF.

The page loads nothing: charts are inline SVG (rag.reports.svg), the CSS is inline, and a strict
Content-Security-Policy forbids scripts, fonts and every fetch, so even a bug cannot load anything. Every
string from the user's documents, queries or settings goes through html.escape: none is ever HTML.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from rag.errors import InvalidSettingsError
from rag.evaluation.intervals import RESAMPLES
from rag.evaluation.metrics import METRICS, Evaluation, QueryOutcome
from rag.evaluation.paired import ALPHA, PairedDifference, format_p
from rag.evaluation.results import ConfigResult, Standing, SweepResult
from rag.reports.svg import PALETTE, Estimate, Series, dot_chart, esc, line_chart

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
FAILURES_SHOWN = 10
TIE_LINES = 6  # lines in the hit@k chart: the best and its closest ties
DOCUMENTS_SHOWN = 40
METHOD = (f"Each metric is the mean over the queries; its 95 % interval is a bootstrap over the queries ({RESAMPLES} "
          "resamples, seeded, so a run repeats exactly): the range the metric would likely take on another query set "
          "of the same kind and size.")
TIE_METHOD = (f"A configuration is tied with the best when a paired sign-flip permutation test over the same queries "
              f"cannot tell them apart (p ≥ {ALPHA:g}); the 95 % interval of the difference is that test inverted, so "
              "it holds 0 exactly for a tie. Where 5 or fewer questions differ no test can decide (too few differ). "
              "A tie is not proof of equality: more queries may show a small difference.")

STYLE = """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: #1f1f1f; background: #fff; margin: 0 auto; max-width: 1180px; padding: 24px 28px 40px; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 19px; margin: 30px 0 10px; padding-bottom: 3px;
  border-bottom: 1px solid #ddd; }
p { margin: 6px 0; } .meta { color: #555; margin-bottom: 14px; }
.summary { background: #f2f7fb; border-left: 4px solid #0072B2; padding: 10px 14px; margin: 12px 0; }
.notes { color: #444; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 13px; margin: 6px 0; }
th, td { padding: 4px 6px; border-bottom: 1px solid #e2e2e2; text-align: right; vertical-align: top; }
th { background: #f0f0f0; font-weight: 600; vertical-align: bottom; } td { white-space: nowrap; }
td.text, th.text { text-align: left; } td.wrap { white-space: normal; max-width: 420px; overflow-wrap: anywhere; }
td .pm { color: #666; font-size: 12px; } th.chosen, td.chosen { background: #f7f7f7; }
tr.best td { background: #ffefb0; font-weight: 600; } tr.tie td { background: #e1eefa; }
.mark { display: inline-block; margin-left: 2px; padding: 0 6px; border-radius: 3px; font-size: 12px;
  font-weight: 700; color: #fff; } .mark.best { background: #7a5700; } .mark.tie { background: #0b4f8a; }
figure { margin: 14px 0 22px; } figcaption { color: #444; font-size: 13.5px; max-width: 960px; }
svg.chart { display: block; max-width: 100%; height: auto; font-family: inherit; }
dl.settings { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 6px 0; }
dl.settings dt { font-weight: 600; } dl.settings dd { margin: 0; overflow-wrap: anywhere; }
footer { margin-top: 30px; color: #666; font-size: 13px; }
@page { size: A4 landscape; margin: 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10.5pt; } table { font-size: 8.5pt; }
  th, td { padding: 3px 4px; } td .pm { font-size: 7.5pt; } svg.chart { max-width: 900px; }
  * { print-color-adjust: exact; -webkit-print-color-adjust: exact; }
  h2 { break-after: avoid; } figure, table, .summary, dl.settings { break-inside: avoid; }
}
"""


def sweep_report(result: SweepResult, metric: str | None = None) -> str:
    """Return the sweep as one HTML page: best and ties in words, charts, every row, failures, the settings."""
    metric = metric or result.default_metric()
    if result.results and metric not in result.results[0].metrics:
        raise InvalidSettingsError(f"this sweep has no metric {metric!r}; it measured "
                                   f"{', '.join(result.results[0].metrics)}")
    best = result.best(metric)
    tied = result.ties(metric) if best is not None else []
    ties, places = [row for row, _ in tied], result.standing(metric)
    body = [f"<h1>Sweep: {esc(metric)} of {len(result.results)} configurations and modes</h1>",
            f'<p class="meta">{esc(result.created_at)} · {esc(result.embedder)} · {result.queries} queries · '
            f"{len(result.documents)} documents · modes {esc(', '.join(result.modes))}</p>",
            '<div class="summary">' + "".join(f"<p>{esc(words)}</p>" for words in
                                              (result.summary(metric), result.tie_summary(metric)) if words)]
    if ties:
        body.append("<p>Tied with the best:</p><ul>" + "".join(
            f"<li>{esc(row.label)}: {esc(_tie_words(test, metric))}</li>" for row, test in tied) + "</ul>")
    body.append("</div>")
    body += [f'<p class="notes">{esc(note)}</p>' for note in [*result.notes(), *result.skipped]]
    if best is not None:
        body += _sweep_charts(result, metric, best, ties, places)
        body += ["<h2>Every configuration</h2>", _sweep_table(result, metric, places)]
        body += _failures(best.evaluation, f"Queries the best ({best.short}) misses")
    body += ["<h2>Settings</h2>", _settings(_sweep_settings(result))]
    return _page(f"RAG Lab sweep {result.created_at}: {metric}", body)


def evaluation_report(evaluation: Evaluation, *, collection: str, mode: str, embedder: str | None,
                      query_set: str, created_at: str | None = None) -> str:
    """Return one evaluation (a query set on a collection) as one HTML page: charts, metrics, failures, settings."""
    created_at = created_at or datetime.now(UTC).isoformat(timespec="seconds")
    deepest, queries = evaluation.ks[-1], len(evaluation.per_query)
    estimates = [_estimate(evaluation, f"{m}@{deepest}", f"{m}@{deepest}") for m in METRICS]
    hit = Series("hit@k", [_estimate(evaluation, f"hit@{k}", f"hit@{k}") for k in evaluation.ks], PALETTE[0])
    body = [f"<h1>Evaluation: {esc(query_set)} on {esc(collection)}</h1>",
            f'<p class="meta">{esc(created_at)} · {esc(embedder or "no embedder (keywords only)")} · {esc(mode)} '
            f"search · {queries} queries</p>",
            "<h2>Metrics with their 95 % intervals</h2>",
            _figure(line_chart([hit], [f"k = {k}" for k in evaluation.ks], x_axis="k: the top k hits",
                               y_axis="hit@k", title="hit@k by k"),
                    f"hit@k by k: dot = value, bar = 95 % interval over the {queries} queries."),
            _figure(dot_chart([(None, estimates)], axis=f"value at k = {deepest}", title=f"metrics at k = {deepest}"),
                    f"Every metric at k = {deepest}, with its 95 % interval."),
            _metrics_table(evaluation)]
    body += _failures(evaluation, "Queries without a relevant chunk in the top k")
    body += ["<h2>Settings</h2>", _settings([
        ("collection", collection), ("search mode", mode), ("embedder (model)", embedder or "none: keywords only"),
        ("query set", query_set), ("queries", str(queries)), ("k", ", ".join(map(str, evaluation.ks))),
        ("created", created_at), ("intervals", METHOD)])]
    return _page(f"RAG Lab evaluation: {query_set} on {collection}", body)


# ---- sweep pieces ----------------------------------------------------------------------------------------


def _sweep_charts(result: SweepResult, metric: str, best: ConfigResult, ties: list[ConfigResult],
                  places: list[Standing]) -> list[str]:
    colours = {mode: PALETTE[i % len(PALETTE)] for i, mode in enumerate(result.modes)}
    groups = [(mode if len(result.modes) > 1 else None,
               [_estimate(place.row.evaluation, metric, place.row.config.short, colours[mode],
                          place.words("{mark}, {why}"), place.mark == "best")
                for place in places if place.row.mode.label == mode]) for mode in result.modes]
    shown = [best, *ties][:TIE_LINES]
    lines = [Series(row.short + (" (best)" if row is best else " (tie)"),
                    [_estimate(row.evaluation, f"hit@{k}", row.short, PALETTE[i % len(PALETTE)], strong=row is best)
                     for k in result.ks], PALETTE[i % len(PALETTE)]) for i, row in enumerate(shown)]
    more = f" The other {len(ties) + 1 - len(shown)} ties are in the table." if len(ties) + 1 > len(shown) else ""
    return ["<h2>Charts</h2>",
            _figure(dot_chart(groups, axis=f"{metric} (dot: value; bar: 95 % interval over {result.queries} queries)",
                              title=f"{metric} by configuration", legend=[(colours[m], m) for m in result.modes]
                              if len(result.modes) > 1 else ()),
                    f"{metric} of every configuration (chunk_size/overlap), grouped by search mode; the best is "
                    "ringed, its ties are marked with the paired test's p-value."),
            _figure(line_chart(lines, [f"k = {k}" for k in result.ks], x_axis="k: the top k hits", y_axis="hit@k",
                               title="hit@k by k, the best and its ties"),
                    "hit@k by k for the best configuration" + (" and the configurations tied with it" if ties else
                                                                 " (no configuration is tied with it)") + "." + more)]


def _sweep_table(result: SweepResult, metric: str, places: list[Standing]) -> str:
    deepest = result.ks[-1]
    others = [m for m in dict.fromkeys([*(f"hit@{k}" for k in result.ks), f"mrr@{deepest}"]) if m != metric]
    head = ["configuration", "mode", metric, *others, "chunks", "mean tokens", "cut by model",
            "time of the configuration (s)", "vs best", "p"]
    hit = f"hit@{deepest}"
    seconds = [sum(r.total_seconds for r in run) for run in result.configuration_runs() for _ in run]  # row order
    ranked = sorted(zip(places, seconds, strict=True), key=lambda pair: (  # as best()
        -pair[0].row.metrics[metric], -pair[0].row.metrics[hit], pair[0].row.chunks))
    rows = "".join(_sweep_row(place.row, metric, others, place.mark, place.test, time) for place, time in ranked)
    header = "".join(f'<th class="{"text" if i < 2 else "chosen" if i == 2 else ""}">{esc(h)}</th>'
                     for i, h in enumerate(head))
    caption = (f"Ranked by {metric}. ± is half the 95 % interval; configuration is chunk_size/overlap in tokens; "
               "cut by model: the share of chunks longer than the model reads; time: the configuration's chunking, "
               "embedding, indexing and searching, shared by its modes (one collection, one search round trip); "
               "vs best: the paired difference from the best "
               f"with its 95 % interval, and the p-value of the paired test (tied: p ≥ {ALPHA:g}).")
    return (f"<table><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>"
            f'<p class="notes">{esc(caption)}</p>')


def _tie_words(test: PairedDifference, metric: str) -> str:
    """Return a tie's difference in words, with why the test cannot decide when too few questions differ."""
    return test.words(metric) + (f"; {test.few_words()}" if test.too_few_differ else "")


def _sweep_row(row: ConfigResult, metric: str, others: list[str], mark: str, test: PairedDifference | None,
               seconds: float) -> str:
    badge = f' <span class="mark {mark}">{mark}</span>' if mark else ""
    reused = '<br><span class="pm">reused</span>' if row.reused else ""
    versus = ["—", ""] if test is None else [
        f'{test.difference:+.3f}<br><span class="pm">{test.low:+.3f} to {test.high:+.3f}</span>',
        format_p(test.p_value) + ('<br><span class="pm">too few differ</span>' if test.too_few_differ else "")]
    cells = [f'<td class="text">{esc(row.config.short)}{badge}</td>', f'<td class="text">{esc(row.mode.label)}</td>',
             _metric_cell(row.evaluation, metric, "chosen"), *(_metric_cell(row.evaluation, m) for m in others),
             f"<td>{row.chunks}</td>", f"<td>{row.mean_tokens:.0f}</td>", f"<td>{row.cut_share:.0%}</td>",
             f"<td>{seconds:.1f}{reused}</td>", *(f"<td>{v}</td>" for v in versus)]
    return f'<tr class="{mark}">' + "".join(cells) + "</tr>"


def _sweep_settings(result: SweepResult) -> list[tuple[str, str]]:
    configs = [row.config for row in result.results]
    shown = result.documents[:DOCUMENTS_SHOWN]
    documents = ", ".join(shown) + (f" and {len(result.documents) - len(shown)} more"
                                    if len(result.documents) > len(shown) else "")
    total = result.query_seconds + sum(row.total_seconds for row in result.results)
    return [("embedder (model)", result.embedder),
            ("chunk sizes", ", ".join(str(s) for s in dict.fromkeys(c.chunk_size for c in configs))),
            ("overlaps", ", ".join(str(s) for s in dict.fromkeys(c.overlap for c in configs))),
            ("strategy", ", ".join(dict.fromkeys(c.strategy for c in configs))),
            ("search modes", ", ".join(result.modes)), ("k", ", ".join(map(str, result.ks))),
            ("queries", str(result.queries)), (f"documents ({len(result.documents)})", documents),
            ("created", result.created_at),
            ("time", f"{total:.1f} s in all; the queries embedded once in {result.query_seconds:.1f} s"),
            ("intervals", METHOD), ("ties", TIE_METHOD)]


# ---- shared pieces ---------------------------------------------------------------------------------------


def _estimate(evaluation: Evaluation, metric: str, label: str, colour: str = PALETTE[0], note: str = "",
              strong: bool = False) -> Estimate:
    low, high = evaluation.intervals[metric]
    return Estimate(label, evaluation.metrics[metric], low, high, colour, note, strong)


def _metric_cell(evaluation: Evaluation, metric: str, css: str = "") -> str:
    low, high = evaluation.intervals[metric]
    return (f'<td class="{css}" title="95 % interval {low:.3f} to {high:.3f}">{evaluation.metrics[metric]:.3f}'
            f'<span class="pm"> ±{(high - low) / 2:.3f}</span></td>')


def _metrics_table(evaluation: Evaluation) -> str:
    header = '<th class="text">k</th>' + "".join(f"<th>{m}</th>" for m in METRICS)
    rows = "".join(f'<tr><td class="text">{k}</td>' + "".join(_metric_cell(evaluation, f"{m}@{k}") for m in METRICS)
                   + "</tr>" for k in evaluation.ks)
    return (f"<table><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>"
            '<p class="notes">± is half the 95 % bootstrap interval over the queries.</p>')


def _failures(evaluation: Evaluation, heading: str) -> list[str]:
    k = 5 if 5 in evaluation.ks else evaluation.ks[-1]  # a usual top_k when measured, as `rag eval` lists them
    missed = evaluation.failures(k)
    words = f"{len(missed)} of {len(evaluation.per_query)} queries have no relevant chunk in the top {k}"
    if not missed:
        return [f"<h2>{esc(heading)}</h2>", f"<p>{esc(words)}.</p>"]
    words += f"; the first {FAILURES_SHOWN}:" if len(missed) > FAILURES_SHOWN else ":"
    header = "".join(f'<th class="{c}">{h}</th>' for h, c in
                     [("rank", ""), ("score", ""), ("top score", ""), ("query", "text"), ("expected", "text"),
                      ("top hit", "text")])
    rows = "".join(_failure_row(o, evaluation.ks[-1]) for o in missed[:FAILURES_SHOWN])
    return [f"<h2>{esc(heading)}</h2>", f"<p>{esc(words)}</p>",
            f"<table><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>"]


def _failure_row(outcome: QueryOutcome, deepest: int) -> str:
    def score(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    top = outcome.hits[0].document_title if outcome.hits else "(no hits)"
    cells = [str(outcome.rank) if outcome.rank else f"&gt;{deepest}", score(outcome.score), score(outcome.top_score)]
    texts = [outcome.query.text, ", ".join(outcome.query.documents), top]
    return ("<tr>" + "".join(f"<td>{c}</td>" for c in cells)
            + "".join(f'<td class="text wrap">{esc(t)}</td>' for t in texts) + "</tr>")




def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>"


def _settings(items: Sequence[tuple[str, str]]) -> str:
    return '<dl class="settings">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items) + "</dl>"


def _page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<meta name="generator" content="RAG Lab">\n'
            f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body)
            + "\n<footer>Made by RAG Lab. This file is self-contained: it loads nothing and runs no scripts.</footer>"
            "\n</body>\n</html>\n")
