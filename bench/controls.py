"""How fast the Search page and the Chunks page's live tuning answer a control, in a real browser.

    python -m bench.controls [PDF] [--embedder local] [--steps 5]

Ingests PDF (default: l2kurz.pdf, 58 pages, as bench.ingest finds it) with the CLI into a fresh folder, starts
`streamlit run app.py` on it and drives Debian's Chromium (Playwright). Each figure is the time from the change
(a key press on the top_k slider, a click on a mode, a fusion, the threshold box, a live-tuning slider step, a
click on a hit's grade in "Judge these hits", opened: the judgment saved into the query set) to the page showing the new
result and Streamlit's run having ended, median of --steps changes. The reference in the same
run: the first search (it embeds the query; the model is loaded before it) and a rerun that changes nothing but a
toggle outside the results. Browser time includes the WebSocket round trip and drawing; the goal is 300 ms of
server time on an idle machine, and the load is printed beside the figures. Beside each change, what the browser
was told, which holds at any load: whether the whole app or a fragment reran, and how many elements it was sent.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.ingest import default_pdf
from tests.e2e.conftest import CHROMIUM, LAUNCH_ARGS, VIEWPORT, AppServer, ScriptRuns, go, search, settle

ROOT = Path(__file__).resolve().parents[1]
QUERY = "Wie erstellt man eine Tabelle in LaTeX?"


SENT: dict[str, list[tuple[str, int]]] = {}  # per change: how its run ended ("app" / "fragment"), elements sent
RUNS: list[ScriptRuns] = []  # what the browser heard (made before the page is opened)


def timed(page, act, done, name: str = "") -> float:
    """Return the seconds from act() until done() holds and the app's run has ended (noted in SENT[name])."""
    for runs in RUNS:
        runs.clear()
    started = time.perf_counter()
    act()
    done()
    settle(page)
    seconds = time.perf_counter() - started
    for runs in RUNS:
        ended = runs.wait_ended(page)
        SENT.setdefault(name, []).append(("+".join(ended), runs.elements))
    return seconds


def caption(page) -> str:
    return page.get_by_text(re.compile(r"\d hits? for")).first.inner_text()


CAPTION_CHANGED = """(before) => Array.from(document.querySelectorAll('[data-testid="stCaptionContainer"]'))
    .some(e => /\\d hits? for/.test(e.innerText) && e.innerText !== before)"""


def new_caption(page, before: str):
    """Return a done() that waits until the results caption reads other than before."""
    return lambda: page.wait_for_function(CAPTION_CHANGED, arg=before)


def search_controls(page, steps: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"top_k +1 (slider key)": [], "mode switch": [], "fusion change": [],
                                       "threshold on/off": []}
    thumb = page.get_by_test_id("stSlider").filter(has_text="top_k").get_by_role("slider")
    for _ in range(steps):
        before = caption(page)
        thumb.focus()
        figures["top_k +1 (slider key)"].append(timed(page, lambda: thumb.press("ArrowRight"),
                                                      new_caption(page, before), "top_k +1 (slider key)"))
    modes = ["Dense", "Keyword (BM25)", "Hybrid"]
    for i in range(steps):
        name = modes[i % len(modes)]
        button = page.get_by_test_id("stButtonGroup").get_by_role("radio", name=name, exact=True)
        figures["mode switch"].append(timed(page, button.click, lambda n=name: page.get_by_text(
            re.compile({"Dense": r"· local|· fake|· openai|· ollama", "Keyword (BM25)": "keyword search",
                        "Hybrid": r"hybrid \("}[n])).first.wait_for(), "mode switch"))
    if page.get_by_test_id("stButtonGroup").get_by_role("radio", name="Hybrid", exact=True).is_visible():
        page.get_by_test_id("stButtonGroup").get_by_role("radio", name="Hybrid", exact=True).click()
        settle(page)
    for i in range(steps):
        method = ("rrf", "dbsf", "convex")[i % 3]
        box = page.get_by_test_id("stSelectbox").filter(has_text="Fusion")

        def pick(m=method, b=box):
            b.click()
            page.get_by_role("option", name=m, exact=True).click()

        figures["fusion change"].append(timed(page, pick, lambda m=method: page.get_by_text(
            re.compile(rf"hybrid \({m}")).first.wait_for(), "fusion change"))
    box = page.get_by_test_id("stCheckbox").filter(has_text="Score threshold")
    for _ in range(steps):
        before = caption(page)
        figures["threshold on/off"].append(timed(page, box.click, new_caption(page, before), "threshold on/off"))
    return figures


def judging_steps(page, steps: int) -> list[float]:
    """Return the seconds from a click on the first hit's grade to the saved version's note (grades alternate)."""
    page.get_by_test_id("stExpander").filter(has_text="Judge these hits").locator("summary").click()  # opened
    page.get_by_role("radio", name="2 relevant", exact=True).first.wait_for()
    times = []
    for i in range(steps):
        label = ("2 relevant", "1 partly")[i % 2]
        radio = page.get_by_role("radio", name=label, exact=True).first
        radio.scroll_into_view_if_needed()
        times.append(timed(page, radio.click, lambda v=i + 1: page.get_by_text(
            re.compile(rf"version {v}\)")).first.wait_for(), "judge a hit (grade click)"))
    return times


def tuning_steps(page, steps: int) -> list[float]:
    go(page, "Chunks")
    page.get_by_role("tab", name="Live tuning").click()
    page.get_by_text("Tokens per chunk, stored settings").wait_for()
    thumb = page.get_by_test_id("stSlider").filter(has_text="chunk_size").get_by_role("slider")
    times = []
    for _ in range(steps):
        thumb.focus()
        header = page.locator("th", has_text=re.compile(r"new: \d+ / ")).first.inner_text()
        value = int(re.search(r"new: (\d+) /", header).group(1))
        times.append(timed(page, lambda: thumb.press("ArrowLeft"), lambda v=value - 10: page.locator(
            "th", has_text=re.compile(rf"new: {v} / ")).first.wait_for(state="attached"),
            "live tuning step (chunk_size -10)"))
    return times


def server_times(folder: Path, embedder: str, steps: int) -> dict[str, list[float]]:
    """Return the seconds of the app's own script run for the same changes (AppTest: no browser, no network)."""
    from streamlit.testing.v1 import AppTest

    os.environ.update(RAG_QDRANT_PATH=str(folder / "qdrant"), RAG_EMBEDDER=embedder, RAG_DATA_ROOT=str(folder / "at"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("app_pages/search.py").run()
    at.text_input(key="query").set_value(QUERY)
    next(b for b in at.button if b.label == "Search").click().run()

    def run(change) -> float:
        started = time.perf_counter()
        change().run()
        return time.perf_counter() - started

    figures: dict[str, list[float]] = {"top_k +1 (slider key)": [], "mode switch": [], "fusion change": [],
                                       "threshold on/off": [], "live tuning step (chunk_size -10)": []}
    for i in range(steps):
        figures["top_k +1 (slider key)"].append(run(lambda i=i: at.slider(key="top_k").set_value(6 + i)))
        figures["mode switch"].append(run(lambda i=i: at.button_group(key="search_mode").set_value(
            ("dense", "sparse", "hybrid")[i % 3])))
    at.button_group(key="search_mode").set_value("hybrid").run()
    for i in range(steps):
        figures["fusion change"].append(run(lambda i=i: at.selectbox(key="fusion").set_value(
            ("rrf", "dbsf", "convex")[i % 3])))
        figures["threshold on/off"].append(run(lambda i=i: at.checkbox(key="use_threshold").set_value(i % 2 == 0)))
    at.session_state["judge_hits"] = True  # "Judge these hits", opened
    at.run()
    grade = next(b.key for b in at.button_group if b.key and b.key.startswith("judge_grade_"))
    figures["judge a hit (grade click)"] = [run(lambda i=i: at.button_group(key=grade).set_value((2, 1)[i % 2]))
                                            for i in range(steps)]
    at.switch_page("app_pages/chunks.py").run()
    size = at.slider(key="tune_size").value
    for i in range(steps):
        figures["live tuning step (chunk_size -10)"].append(run(lambda i=i: at.slider(key="tune_size").set_value(
            size - 10 * (i + 1))))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pdf", nargs="?", type=Path)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    pdf = args.pdf or default_pdf()
    folder = Path(tempfile.mkdtemp(prefix="bench-controls-"))
    env = {**os.environ, "RAG_QDRANT_PATH": str(folder / "qdrant"), "RAG_EMBEDDER": args.embedder}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rag", "ingest", str(pdf), "--collection", "documents"], cwd=ROOT, env=env,
                   check=True, capture_output=True)
    print(f"ingested {pdf.name} with {args.embedder} in {time.perf_counter() - started:.1f} s; "
          f"load {os.getloadavg()[0]:.2f}")
    server = AppServer(folder, {"RAG_EMBEDDER": args.embedder, "RAG_DATA_ROOT": str(folder)})
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
            page = browser.new_context(viewport=VIEWPORT).new_page()
            page.set_default_timeout(120_000)
            RUNS.append(ScriptRuns(page))
            page.goto(server.url)
            page.get_by_test_id("stSidebarNav").wait_for()
            go(page, "Search")
            first = timed(page, lambda: search(page, "Schriftgröße"), lambda: page.get_by_text(
                re.compile(r"\d hits? for")).first.wait_for())
            second = timed(page, lambda: search(page, QUERY), lambda: page.get_by_text(
                re.compile(r"hit\(s\) for .Wie erstellt")).first.wait_for())
            figures = search_controls(page, args.steps)
            figures["judge a hit (grade click)"] = judging_steps(page, args.steps)
            figures["live tuning step (chunk_size -10)"] = tuning_steps(page, args.steps)
            browser.close()
    finally:
        server.stop()
    print(f"load {os.getloadavg()[0]:.2f} · reference: first search {first * 1000:.0f} ms (loads and embeds), "
          f"a new query {second * 1000:.0f} ms (embeds it)")
    server = server_times(folder, args.embedder, args.steps)
    print(f"{'change':38} {'browser ms':>10} {'max':>6} {'server ms':>10} {'max':>6} {'run':>9} {'elements':>8}   "
          "(browser: change -> new result shown and the run ended; server: the app's script run alone, AppTest, "
          "which runs the whole script; run: what the browser was told reran, the whole app or a fragment; "
          "elements: median sent per change)")
    for name, times in figures.items():
        sent = SENT.get(name, [("?", 0)])
        ran = "/".join(sorted({kind for kind, _ in sent}))
        print(f"{name:38} {statistics.median(times) * 1000:10.0f} {max(times) * 1000:6.0f} "
              f"{statistics.median(server[name]) * 1000:10.0f} {max(server[name]) * 1000:6.0f} {ran:>9} "
              f"{statistics.median(n for _, n in sent):8.0f}")


if __name__ == "__main__":
    main()
