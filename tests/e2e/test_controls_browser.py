"""After the first search, a control answers at once: the time from a top_k step to the new table, in Chromium.

The figures are printed (pytest -s shows them; bench.controls prints them next to a reference); what is asserted
is that each step shows the new ranking's cut, with nothing searched again, and that it reran only the results
fragment: no run of the whole script, nothing sent to the sidebar (what the server told the browser, not a time).
"""

from __future__ import annotations

import re
import time

import pytest

from tests.e2e.conftest import ScriptRuns, first_search, settle

pytestmark = pytest.mark.e2e

# Before a step: note, by the page's own clock, when the hit labelled `label` is drawn and the run has ended (no
# running indicator). The test's own waits poll the page and add their round trips to "browser"; this does not.
WATCH_FOR_LAST_HIT = """(label) => {
    const started = performance.now();
    window.__lastHitDrawn = null;
    const hits = () => [...document.querySelectorAll('[data-testid=stExpander]')];
    const done = () => hits().some(e => e.textContent.includes(label))
        && !document.querySelector('[data-testid=stStatusWidget]');
    const observer = new MutationObserver(() => {
        if (window.__lastHitDrawn === null && done()) {
            window.__lastHitDrawn = performance.now() - started;
            observer.disconnect();
        }
    });
    observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
}"""


def test_top_k_steps_show_the_new_cut(app_server, page, shot, shared_data):
    server = app_server(RAG_EMBEDDER="fake")
    runs = ScriptRuns(page)  # before the page opens: it listens on the page's WebSocket
    first_search(page, server.url, shared_data / "pdfs/hausarbeit-jura.pdf", "Schriftgröße der Klasse")
    thumb = page.get_by_test_id("stSlider").filter(has_text="top_k").get_by_role("slider")
    seconds, drawn = [], []
    for top_k in (6, 7, 8, 9):
        thumb.focus()
        runs.clear()
        page.evaluate(WATCH_FOR_LAST_HIT, f"#{top_k} · ")
        started = time.perf_counter()
        thumb.press("ArrowRight")
        page.get_by_text(re.compile(rf"^{top_k} hits? for")).wait_for()
        hits = page.get_by_test_id("stExpander")
        hits.filter(has_text=f"#{top_k} · ").first.wait_for()  # the new table's last hit
        settle(page)
        seconds.append(time.perf_counter() - started)
        drawn.append(page.evaluate("window.__lastHitDrawn") / 1000)
        assert hits.filter(has_text=f"#{top_k + 1} · ").count() == 0
        assert runs.wait_ended(page) == ["fragment"], f"top_k {top_k}: {runs.ended}"  # not the whole page again
        assert "sidebar" not in runs.roots, runs.roots
        # every part that shows top_k reran with the table: the distribution's cut (judging is closed: no rows)
        assert page.get_by_text(re.compile(rf"top_k = {top_k} cuts at")).count() == 1
        assert page.get_by_test_id("stText").filter(has_text="#1 · ").count() == 0
    judging = page.get_by_test_id("stExpander").filter(has_text="Judge these hits")
    runs.clear()
    judging.locator("summary").click()  # opened: a row per hit of the cut, drawn by the fragment
    page.get_by_test_id("stText").filter(has_text="#9 · ").first.wait_for()
    settle(page)
    assert runs.wait_ended(page) == ["fragment"], runs.ended
    assert page.get_by_test_id("stText").filter(has_text="#10 · ").count() == 0
    last = page.get_by_test_id("stExpander").filter(has_text="#9 · ").filter(has_not_text="Judge these hits").first
    assert last.get_by_test_id("stCode").count() == 0  # a closed hit is sent as its label
    runs.clear()
    last.locator("summary").click()
    last.get_by_test_id("stCode").or_(last.locator(".rl-doc")).first.wait_for()  # its text, drawn on opening
    settle(page)
    assert runs.wait_ended(page) == ["fragment"], runs.ended
    shot("41-search-top-k-9")
    print("top_k step to new table (browser, s):", " ".join(f"{s:.2f}" for s in seconds))
    print("top_k step to new table (in the page, s):", " ".join(f"{s:.2f}" for s in drawn))
