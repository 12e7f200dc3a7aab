"""A sweep or an evaluation as one self-contained HTML page, for an analyst's slides or a PDF.

The page loads nothing: charts are inline SVG (rag.reports.svg), the CSS is inline, and a strict
Content-Security-Policy forbids scripts, fonts and every fetch, so even a bug cannot load anything. The page
is a Jinja2 template with autoescaping (rag/reports/evaluation_page.py): every string from the user's
documents, queries or settings is escaped by the template engine, none is ever HTML; only the charts (SVG
built by rag.reports.svg, which escapes its labels) are inserted as markup.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rag.errors import InvalidSettingsError
from rag.evaluation.funnel import RANKED
from rag.evaluation.metrics import (
    ALPHA,
    COVERAGE,
    METRICS,
    MOSTLY_UNJUDGED,
    RESAMPLES,
    Evaluation,
    PairedDifference,
    QueryOutcome,
    unjudged_note,
)
from rag.evaluation.sweeps import (
    WHY,
    ConfigResult,
    Standing,
    SweepResult,
    effect_note,
    effect_words,
    missed_rows,
    summary_words,
)
from rag.reports.evaluation_page import render
from rag.reports.svg import PALETTE, Estimate, Series, dot_chart, line_chart

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
FAILURES_SHOWN = 10
MISSED_SHOWN = 50  # missed questions listed under the funnel
TIE_LINES = 6  # lines in the hit@k chart: the best and its closest ties
DOCUMENTS_SHOWN = 40
METHOD = (f"Each metric is the mean over the queries; its 95 % interval is a bootstrap over the queries ({RESAMPLES} "
          "resamples, seeded, so a run repeats exactly): the range the metric would likely take on another query set "
          "of the same kind and size.")
TIE_METHOD = (f"A configuration is tied with the best when a paired sign-flip permutation test over the same queries "
              f"cannot tell them apart (p ≥ {ALPHA:g}); the 95 % interval of the difference is that test inverted, so "
              "it holds 0 exactly for a tie. Where 5 or fewer questions differ no test can decide (too few differ). "
              "A tie is not proof of equality: more queries may show a small difference.")


def sweep_report(result: SweepResult, metric: str | None = None) -> str:
    """Return the sweep as one HTML page: best and ties in words, charts, every row, failures, where the best's
    misses were lost (once traced, rag.evaluation.sweeps.sweep_funnel), whether reranking helped, the settings."""
    metric = metric or result.default_metric()
    if result.results and metric not in result.results[0].metrics:
        raise InvalidSettingsError(f"this sweep has no metric {metric!r}; it measured "
                                   f"{', '.join(result.results[0].metrics)}")
    best = result.best(metric)
    tied = result.ties(metric) if best is not None else []
    page = {"kind": "sweep", "metric": metric, "result": result, "best": best, "CSP": CSP,
            "title": f"RAG Lab sweep {result.created_at}: {metric}",
            "words": [w for w in (result.summary(metric), result.tie_summary(metric)) if w],
            "ties": [(row.label, _tie_words(test, metric)) for row, test in tied],
            "notes": [*result.notes(), *result.skipped], "settings": _sweep_settings(result),
            "funnel": _funnel(best), "rerank": _rerank(result, metric)}
    if best is not None:
        places = result.standing(metric)
        page |= {"figures": _sweep_charts(result, metric, best, [row for row, _ in tied], places),
                 "table": _sweep_table(result, metric, places),
                 "failures": _failures(best.evaluation, f"Queries the best ({best.short}) misses")}
    return render(page)


def evaluation_report(evaluation: Evaluation, *, collection: str, mode: str, embedder: str | None,
                      query_set: str, created_at: str | None = None) -> str:
    """Return one evaluation (a query set on a collection) as one HTML page: charts, metrics, failures, settings."""
    created_at = created_at or datetime.now(UTC).isoformat(timespec="seconds")
    deepest, queries = evaluation.ks[-1], len(evaluation.per_query)
    estimates = [_estimate(evaluation, f"{m}@{deepest}", f"{m}@{deepest}") for m in METRICS]
    hit = Series("hit@k", [_estimate(evaluation, f"hit@{k}", f"hit@{k}") for k in evaluation.ks], PALETTE[0])
    figures = [(line_chart([hit], [f"k = {k}" for k in evaluation.ks], x_axis="k: the top k hits", y_axis="hit@k",
                           title="hit@k by k"),
                f"hit@k by k: dot = value, bar = 95 % interval over the {queries} queries."),
               (dot_chart([(None, estimates)], axis=f"value at k = {deepest}", title=f"metrics at k = {deepest}"),
                f"Every metric at k = {deepest}, with its 95 % interval.")]
    return render({
        "kind": "evaluation", "CSP": CSP, "title": f"RAG Lab evaluation: {query_set} on {collection}",
        "query_set": query_set, "collection": collection, "created_at": created_at, "mode": mode, "queries": queries,
        "embedder": embedder or "no embedder (keywords only)", "figures": figures,
        "metrics": {"names": METRICS + COVERAGE,
                    "rows": [(k, [_cell(evaluation, f"{m}@{k}") for m in METRICS + COVERAGE]) for k in evaluation.ks]},
        "failures": _failures(evaluation, "Queries without a relevant chunk in the top k"),
        "settings": [("collection", collection), ("search mode", mode),
                     ("embedder (model)", embedder or "none: keywords only"), ("query set", query_set),
                     ("queries", str(queries)), ("k", ", ".join(map(str, evaluation.ks))), ("created", created_at),
                     ("intervals", METHOD)]})


# ---- sweep pieces ----------------------------------------------------------------------------------------


def _sweep_charts(result: SweepResult, metric: str, best: ConfigResult, ties: list[ConfigResult],
                  places: list[Standing]) -> list[tuple[str, str]]:
    """Return the two charts as (svg, caption): metric per row by mode, and hit@k of the best and its ties."""
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
    return [(dot_chart(groups, axis=f"{metric} (dot: value; bar: 95 % interval over {result.queries} queries)",
                       title=f"{metric} by configuration", legend=[(colours[m], m) for m in result.modes]
                       if len(result.modes) > 1 else ()),
             f"{metric} of every configuration (chunk_size/overlap), grouped by search mode; the best is "
             "ringed, every other configuration is marked tie or worse with the paired test's p-value."),
            (line_chart(lines, [f"k = {k}" for k in result.ks], x_axis="k: the top k hits", y_axis="hit@k",
                        title="hit@k by k, the best and its ties"),
             "hit@k by k for the best configuration" + (" and the configurations tied with it" if ties else
                                                          " (no configuration is tied with it)") + "." + more)]


def _sweep_table(result: SweepResult, metric: str, places: list[Standing]) -> dict:
    """Return the table of every row, ranked by metric as best() ranks: head, rows (each with its cells) and caption."""
    deepest = result.ks[-1]
    others = [m for m in dict.fromkeys([*(f"hit@{k}" for k in result.ks), f"mrr@{deepest}", f"hole@{deepest}"])
              if m != metric]
    hit = f"hit@{deepest}"
    seconds = [sum(r.total_seconds for r in run) for run in result.configuration_runs() for _ in run]  # row order
    ranked = sorted(zip(places, seconds, strict=True), key=lambda pair: (
        -pair[0].row.metrics[metric], -pair[0].row.metrics[hit], pair[0].row.chunks))
    rows = [{"place": place, "row": place.row, "chosen": _cell(place.row.evaluation, metric),
             "others": [_cell(place.row.evaluation, m) for m in others], "seconds": time} for place, time in ranked]
    caption = (f"Ranked by {metric}. ± is half the 95 % interval; configuration is chunk_size/overlap in tokens; "
               "cut by model: the share of chunks longer than the model reads; time: the configuration's chunking, "
               "embedding, indexing and searching, shared by its modes (one collection, one search round trip); "
               f"hole@{deepest}: the share of the top {deepest} no one has judged (above {MOSTLY_UNJUDGED:g} it is "
               f"{unjudged_note()}); vs best: the paired difference from the best "
               f"with its 95 % interval, and the p-value of the paired test (tied: p ≥ {ALPHA:g}).")
    return {"head": ["configuration", "mode", metric, *others, "chunks", "mean tokens", "cut by model",
                     "time (s)", "vs best", "p"], "rows": rows, "caption": caption}


def _tie_words(test: PairedDifference, metric: str) -> str:
    """Return a tie's difference in words, with why the test cannot decide when too few questions differ."""
    return test.words(metric) + (f"; {test.few_words()}" if test.too_few_differ else "")


def _sweep_settings(result: SweepResult) -> list[tuple[str, str]]:
    configs = [row.config for row in result.results]
    shown = result.documents[:DOCUMENTS_SHOWN]
    documents = ", ".join(shown) + (f" and {len(result.documents) - len(shown)} more"
                                    if len(result.documents) > len(shown) else "")
    total = result.seconds if result.seconds is not None else (  # the run's wall time, as `rag runs` keeps it
        result.query_seconds + sum(row.total_seconds for row in result.results))
    return [("embedder (model)", result.embedder),
            ("chunk sizes", ", ".join(str(s) for s in dict.fromkeys(c.chunk_size for c in configs))),
            ("overlaps", ", ".join(str(s) for s in dict.fromkeys(c.overlap for c in configs))),
            ("strategy", ", ".join(dict.fromkeys(c.strategy for c in configs))),
            ("child sizes (parent–child; 0 = the chunks searched)",
             ", ".join(str(s) for s in dict.fromkeys(c.child_size for c in configs))),
            ("search modes", ", ".join(result.modes)), ("k", ", ".join(map(str, result.ks))),
            ("queries", str(result.queries)), (f"documents ({len(result.documents)})", documents),
            ("created", result.created_at),
            ("time", f"{total:.1f} s in all (the run's wall time); the queries embedded once in "
                     f"{result.query_seconds:.1f} s"),
            ("intervals", METHOD), ("ties", TIE_METHOD)]


def _funnel(best: ConfigResult | None) -> dict | None:
    """Return the best row's funnel as the Evaluate page shows it: misses per stage, the missed questions (the first
    MISSED_SHOWN); None when the sweep was not traced."""
    if best is None or best.funnel is None:
        return None
    summary, missed = best.funnel, missed_rows(best.funnels or ())
    more = f" The first {MISSED_SHOWN} of {len(missed)} are listed." if len(missed) > MISSED_SHOWN else ""
    return {"heading": f"Why was it missed? The best ({best.short}) at top {summary.k}",
            "words": summary_words(summary) + more, "stages": [(stage, n, WHY[stage])
                                                             for stage, n in summary.lost_at.items()],
            "head": ["query", "lost at", *RANKED, "context", "read", "chunk"],
            "rows": [[row["query"], row["lost_at"], *(row[s] for s in RANKED), row["context"], row["read"],
                      row["chunk"]] for row in missed[:MISSED_SHOWN]]}


def _rerank(result: SweepResult, metric: str) -> dict | None:
    """Return whether reranking helped, row by row (the Evaluate page's lines), or None without a reranker."""
    if not result.rerank:
        return None
    return {"heading": f"Does reranking help? ({metric})", "note": effect_note(result.rerank),
            "lines": effect_words(result.rerank_effect(metric), metric)
            or ["No row ran both with and without the reranker."]}


# ---- shared pieces ---------------------------------------------------------------------------------------


def _estimate(evaluation: Evaluation, metric: str, label: str, colour: str = PALETTE[0], note: str = "",
              strong: bool = False) -> Estimate:
    low, high = evaluation.intervals[metric]
    return Estimate(label, evaluation.metrics[metric], low, high, colour, note, strong)


def _cell(evaluation: Evaluation, metric: str) -> tuple[float, float, float]:
    """Return (value, low, high) of a metric: a table cell shows the value ± half the interval."""
    low, high = evaluation.intervals[metric]
    return evaluation.metrics[metric], low, high


def _failures(evaluation: Evaluation, heading: str) -> dict:
    """Return the queries without a relevant chunk in a usual top_k (the first FAILURES_SHOWN), as `rag eval` lists."""
    k = 5 if 5 in evaluation.ks else evaluation.ks[-1]
    missed = evaluation.failures(k)
    words = f"{len(missed)} of {len(evaluation.per_query)} queries have no relevant chunk in the top {k}"
    if missed:
        words += f"; the first {FAILURES_SHOWN}:" if len(missed) > FAILURES_SHOWN else ":"
    else:
        words += "."
    return {"heading": heading, "words": words, "deepest": evaluation.ks[-1],
            "rows": [_failure_row(o) for o in missed[:FAILURES_SHOWN]]}


def _failure_row(outcome: QueryOutcome) -> dict:
    top = outcome.hits[0].document_title if outcome.hits else "(no hits)"
    return {"rank": outcome.rank, "scores": [outcome.score, outcome.top_score],
            "texts": [outcome.query.text, ", ".join(outcome.query.documents), top]}
