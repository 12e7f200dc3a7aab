"""The HTML report in a real browser: opened from a file it draws its error bars and the best row, loads nothing,
logs no error and shows hostile titles as text; the Evaluate page's button downloads the same report.

Screenshots go to the test's tmp_path (and to $RAG_SCREENSHOTS when set).
"""

from __future__ import annotations

import pytest

from rag.documents.loader import load_document
from rag.embeddings import get_embedder
from rag.evaluation.metrics.metrics import METRICS
from rag.evaluation.querysets.queries import Query
from rag.evaluation.sweeps.sweep import Sweep, SweepConfig, run_sweep
from rag.reports.evaluation_html import CSP, evaluation_report, sweep_report
from rag.store.open import open_store
from tests.e2e.conftest import VIEWPORT

pytestmark = pytest.mark.e2e
TITLE = "<img src=x onerror=alert(1)>.txt"
QUERY = "</svg><script>alert(1)</script> Was steht hier?"
PRINTED = 1032  # CSS px across A4 landscape inside the report's 12 mm margins
BOXES = """selector => Array.from(document.querySelectorAll(selector)).map(e => {
    const r = e.getBoundingClientRect(), s = getComputedStyle(e);
    return {width: r.width, height: r.height, top: r.top, left: r.left, right: r.right, bottom: r.bottom,
            visible: s.visibility !== 'hidden' && s.display !== 'none' && s.opacity !== '0'};
})"""

CLASHES = """() => {
    const found = [];
    for (const svg of document.querySelectorAll('svg')) {
        const frame = svg.getBoundingClientRect();
        const boxes = Array.from(svg.querySelectorAll('text')).map(t => [t.textContent, t.getBoundingClientRect()]);
        for (const [text, b] of boxes) {
            if (b.width === 0 || b.left < frame.left || b.right > frame.right || b.top < frame.top
                || b.bottom > frame.bottom) found.push('outside: ' + text);
        }
        boxes.forEach(([a, p], i) => boxes.slice(i + 1).forEach(([b, q]) => {
            const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
            const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
            if (w > 1 && h > 1) found.push('overlap: ' + a + ' / ' + b);
        }));
    }
    return found;
}"""


@pytest.fixture
def watched(page):
    """Return what the page logs as errors and every request it makes (the file itself aside)."""
    seen = {"errors": [], "requests": []}
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("request", lambda r: seen["requests"].append(r.url))
    return seen


@pytest.fixture(scope="module")
def sweep(xquad):
    """Return a real sweep: 4 configurations (two identical: ties) x 3 modes, a hostile document and query."""
    documents, queries = xquad
    hostile = load_document("Ein kurzer Text über nichts Besonderes. ".encode() * 12, TITLE)
    configs = [SweepConfig(200, 0), SweepConfig(100, 0), SweepConfig(200, 0), SweepConfig(100, 20)]
    sweep = Sweep([*documents, hostile], [*queries, Query(QUERY, (hostile.title,))], configs, ks=[1, 3, 5, 10],
                  modes=["dense", "sparse", "hybrid"])
    return run_sweep(sweep, get_embedder("fake:16"), store=open_store(":memory:"))


def open_report(page, file, text: str) -> int:
    """Write text to file, open it and grow the viewport to its height (one screenshot shows it all); return that."""
    file.write_text(text, encoding="utf-8")
    page.goto(file.as_uri())
    page.wait_for_load_state("load")
    height = page.evaluate("() => document.documentElement.scrollHeight")
    page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
    page.wait_for_timeout(200)
    return height


def test_the_report_file_draws_error_bars_and_the_best_row_and_loads_nothing(page, shot, watched, tmp_path, sweep):
    result, report = sweep, tmp_path / "report.html"
    height = open_report(page, report, sweep_report(result))
    path = shot("50-report-sweep")
    assert path.stat().st_size > 50_000
    bars = page.evaluate(BOXES, "svg .error-bar")
    assert len(bars) == len(result.results) + len(result.modes) + (1 + len(result.ties())) * len(result.ks)
    for bar in bars:  # each has a size, lies on the page and is not hidden
        assert bar["visible"] and bar["width"] > 0 and bar["height"] > 0
        assert 0 <= bar["left"] < bar["right"] <= VIEWPORT["width"] and 0 <= bar["top"] < bar["bottom"] <= height
    assert page.evaluate(CLASHES) == []  # every label inside its chart, none on top of another
    best = page.locator("tr.best")
    assert best.count() == 1 and best.locator(".mark.best").inner_text() == "best"
    background = best.locator("td").first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")
    assert page.locator("tr.tie").count() == len(result.ties())
    table = page.locator("table").first.bounding_box()
    assert table["x"] + table["width"] <= VIEWPORT["width"]  # the widest table fits the page
    assert page.locator("img, script, iframe, object, link").count() == 0
    assert page.get_by_text(TITLE).first.is_visible()  # the hostile title is text on the page
    assert page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content") == CSP
    assert watched["errors"] == [] and watched["requests"] == [report.as_uri()]
    page.emulate_media(media="print")  # what a print to PDF lays out: A4 landscape less its margins is 1032 px
    page.set_viewport_size({"width": PRINTED, "height": page.evaluate("() => document.documentElement.scrollHeight")})
    shot("51-report-sweep-print")
    assert max(page.evaluate(BOXES, "table, svg"), key=lambda b: b["right"])["right"] <= PRINTED
    assert page.pdf(format="A4", landscape=True).startswith(b"%PDF")
    assert watched["errors"] == []


def test_the_evaluation_report_file_draws_its_charts(page, shot, watched, tmp_path, sweep):
    evaluation = next(r.evaluation for r in sweep.results  # one whose listed failures hold the hostile query
                      if any(o.query.text == QUERY for o in r.evaluation.failures(5)[:10]))
    report = tmp_path / "evaluation.html"
    open_report(page, report, evaluation_report(evaluation, collection="xquad", mode="dense", embedder="fake:16",
                                                query_set="queries.jsonl"))
    shot("53-report-evaluation")
    bars = page.evaluate(BOXES, "svg .error-bar")
    assert len(bars) == len(evaluation.ks) + len(METRICS)
    assert all(b["visible"] and b["width"] > 0 and b["height"] > 0 for b in bars)
    assert page.evaluate(CLASHES) == [] and page.locator("img, script").count() == 0
    assert page.get_by_text(QUERY).first.is_visible()  # the query nothing found, listed as text
    assert watched["errors"] == [] and watched["requests"] == [report.as_uri()]

