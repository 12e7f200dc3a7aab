"""rag.reports.evaluation_html: the HTML report of a real sweep and of an evaluation (every row, ±, best and ties,
settings, the model), self-contained, hostile titles and queries only ever escaped; `--html` on the CLI."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

import pytest
from markupsafe import escape

from rag.cli import main
from rag.documents.loader import load_document
from rag.embeddings import get_embedder
from rag.errors import InvalidSettingsError
from rag.evaluation.metrics.metrics import COVERAGE, METRICS, evaluate
from rag.evaluation.querysets.queries import Query
from rag.evaluation.querysets.squad import import_squad, write_import
from rag.evaluation.sweeps.sweep import Sweep, SweepConfig, run_sweep
from rag.reports.evaluation_html import CSP, evaluation_report, sweep_report
from rag.retrieval.records import Hit
from rag.store.open import open_store

TITLE = "<img src=x onerror=alert(1)>.txt"  # a document title as hostile as a file name can make it
QUERY = "</svg><script>alert(1)</script> Wer & was?"
TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "div", "ul", "li", "figure", "figcaption",
        "svg", "text", "line", "path", "circle", "table", "thead", "tbody", "tr", "th", "td", "span", "br", "dl", "dt",
        "dd", "footer"}


class Page(HTMLParser):
    """Every start tag with its attributes, and the tables as rows of (class, cell texts)."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.tables: list[list[tuple[str, list[str]]]] = []
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append((dict(attrs).get("class") or "", []))
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1][1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


@pytest.fixture(scope="module")
def sweep(xquad):
    """Return a real small sweep with two identical configurations (ties) and a hostile document and query."""
    documents, queries = xquad
    hostile = load_document("Ein kurzer Text über nichts Besonderes. ".encode() * 12, TITLE)
    queries = [*queries, Query(QUERY, (hostile.title,))]
    configs = [SweepConfig(200, 0), SweepConfig(100, 0), SweepConfig(200, 0)]
    return run_sweep(Sweep([*documents, hostile], queries, configs, ks=[1, 5], modes=["dense", "sparse"]),
                     get_embedder("fake:16"), store=open_store(":memory:"))


def assert_self_contained_and_escaped(text: str) -> Page:
    page = Page(text)
    assert {tag for tag, _ in page.tags} <= TAGS  # no script, img, link, iframe, object, a ...
    assert not [name for _, attrs in page.tags for name in attrs if name.startswith("on")]
    assert not re.search(r"https?://|<script|javascript:|@import|url\(", text, re.IGNORECASE)
    assert ("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}) in page.tags
    assert CSP == "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    assert ("html", {"lang": "en"}) in page.tags and "<title>" in text
    assert "@media print" in text
    return page


@pytest.mark.slow
def test_the_sweep_report_has_every_row_with_intervals_marks_and_settings(sweep):
    text = sweep_report(sweep)
    page = assert_self_contained_and_escaped(text)
    metric, best = sweep.default_metric(), sweep.best()
    header, *rows = next(t for t in page.tables if t[0][1][:2] == ["configuration", "mode"])
    assert header[1][2] == metric and len(rows) == len(sweep.results) == 6
    shown = {(re.sub(r" (best|tie|worse)$", "", cells[0]), cells[1], cells[2]) for _, cells in rows}
    for row in sweep.results:
        low, high = row.evaluation.intervals[metric]
        assert (row.config.short, row.mode.label, f"{row.metrics[metric]:.3f} ±{(high - low) / 2:.3f}") in shown
    ties = sweep.ties()
    assert ties and [c for c, _ in rows].count("best") == 1 and [c for c, _ in rows].count("tie") == len(ties)
    first_class, first = rows[0]
    assert first_class == "best" and first[0] == f"{best.config.short} best" and first[1] == best.mode.label
    assert f"{best.chunks}" in first and f"{best.mean_tokens:.0f}" in first and f"{best.cut_share:.0%}" in first
    for tie, test in ties:
        assert html.escape(tie.label) in text and html.escape(test.words(metric)) in text
    assert escape(sweep.summary()) in text and escape(sweep.tie_summary()) in text  # as Jinja escapes: ' is &#39;
    for name, value in [("embedder (model)", "fake:16"), ("chunk sizes", "200, 100"), ("overlaps", "0"),
                        ("strategy", "structure"), ("child sizes (parent–child; 0 = the chunks searched)", "0"),
                        ("search modes", "dense, sparse"), ("k", "1, 5"),
                        ("queries", str(sweep.queries)), ("created", sweep.created_at)]:
        assert f"<dt>{html.escape(name)}</dt><dd>{html.escape(value)}</dd>" in text
    assert "bootstrap" in text and "permutation test" in text  # the method, in words


def test_the_sweep_report_charts_have_an_error_bar_per_estimate(sweep):
    text = sweep_report(sweep, "hit@1")
    assert "<h1>Sweep: hit@1 of 6 configurations and modes</h1>" in text
    charts = re.findall(r"<svg .*?</svg>", text, re.DOTALL)
    assert len(charts) == 2
    legend = len(sweep.modes)
    assert charts[0].count('class="error-bar"') == len(sweep.results) + legend
    lines = 1 + len(sweep.ties("hit@1"))
    assert charts[1].count('class="error-bar"') == lines * len(sweep.ks)
    with pytest.raises(InvalidSettingsError, match="no metric 'mrr@7'"):
        sweep_report(sweep, "mrr@7")


def test_hostile_titles_and_queries_are_only_ever_escaped(sweep):
    text = sweep_report(sweep)
    assert_self_contained_and_escaped(text)
    assert TITLE not in text and "</svg><script>" not in text and "<img" not in text
    assert html.escape(TITLE) in text  # in the settings' documents
    questions = [Query(QUERY, ("echt.md",)), Query("Wo steht es?", ("echt.md",))]
    hit = Hit(0.42, "Text", TITLE, TITLE, f"{TITLE}-0", 0, (), None, None, None, None)
    evaluation = evaluate(questions, [[hit], [hit]], ks=[1, 3])
    report = evaluation_report(evaluation, collection="<b>c</b>", mode="dense", embedder="fake:16",
                               query_set="<i>q</i>.jsonl")
    assert_self_contained_and_escaped(report)
    assert "<b>" not in report and "<i>" not in report and TITLE not in report and "</svg><script>" not in report
    assert html.escape(QUERY) in report and html.escape(TITLE) in report  # the failures table: query, top hit


def test_the_evaluation_report_has_every_metric_with_its_interval(sweep):
    evaluation = sweep.results[0].evaluation
    text = evaluation_report(evaluation, collection="xquad", mode="dense", embedder="fake:16",
                             query_set="queries.jsonl", created_at="2026-01-02T03:04:05+00:00")
    page = assert_self_contained_and_escaped(text)
    header, *rows = page.tables[0]
    assert header[1] == ["k", *METRICS, *COVERAGE] and [cells[0] for _, cells in rows] == ["1", "5"]
    for _, cells in rows:
        for name, cell in zip(METRICS + COVERAGE, cells[1:], strict=True):
            low, high = evaluation.intervals[f"{name}@{cells[0]}"]
            assert cell == f"{evaluation.metrics[f'{name}@{cells[0]}']:.3f} ±{(high - low) / 2:.3f}"
    for name, value in [("collection", "xquad"), ("search mode", "dense"), ("embedder (model)", "fake:16"),
                        ("query set", "queries.jsonl"), ("queries", str(len(evaluation.per_query))),
                        ("created", "2026-01-02T03:04:05+00:00")]:
        assert f"<dt>{html.escape(name)}</dt><dd>{html.escape(value)}</dd>" in text
    charts = re.findall(r"<svg .*?</svg>", text, re.DOTALL)
    assert [c.count('class="error-bar"') for c in charts] == [len(evaluation.ks), len(METRICS)]
    keywords = evaluation_report(evaluation, collection="x", mode="sparse", embedder=None, query_set="q")
    assert "none: keywords only" in keywords


@pytest.mark.slow
def test_html_option_of_sweep_and_eval_writes_the_report(shared_data, tmp_path, capsys):
    imported = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=2)
    write_import(imported, tmp_path / "docs")
    queries = str(tmp_path / "docs/queries.jsonl")
    store = ["--store", str(tmp_path / "q")]
    argv = ["sweep", str(tmp_path / "docs"), "--queries", queries, "--chunk-size", "100,200", "--overlap", "0",
            "--k", "1,5", "--embedder", "fake:32", "--mode", "dense", *store]
    assert main([*argv, "--html", str(tmp_path / "missing/sweep.html")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing does not exist" in err and "searching" not in err  # before the work
    assert main([*argv, "--json", "--html", str(tmp_path / "sweep.html")]) == 0
    out, err = capsys.readouterr()
    assert f"report written to {tmp_path / 'sweep.html'}" in err
    data = json.loads(out)
    report = (tmp_path / "sweep.html").read_text(encoding="utf-8")
    assert_self_contained_and_escaped(report)
    assert "fake:32" in report and f"<dd>{len(imported.queries)}</dd>" in report and '<tr class="best">' in report
    collection = data["configs"][0]["collection"]
    evaluation = ["eval", queries, "--collection", collection, "--k", "1,5", *store]
    assert main([*evaluation, "--html", str(tmp_path / "eval.html")]) == 0
    out, err = capsys.readouterr()
    assert "mrr" in out and f"report written to {tmp_path / 'eval.html'}" in err
    report = (tmp_path / "eval.html").read_text(encoding="utf-8")
    assert_self_contained_and_escaped(report)
    assert f"on {collection}</h1>" in report and "<dd>queries.jsonl</dd>" in report
    assert main([*evaluation, "--html", str(tmp_path)]) == 1
    assert "is a folder" in capsys.readouterr().err
    assert main([*evaluation, "--tune-fusion", "--html", str(tmp_path / "t.html")]) == 1
    assert "without --tune-fusion" in capsys.readouterr().err
