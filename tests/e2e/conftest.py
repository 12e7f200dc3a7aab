"""Browser tests: `streamlit run app.py` in a subprocess, driven by Playwright on Debian's Chromium.

Skipped (with the reason in the summary) when /usr/bin/chromium is missing. Screenshots go to the test's
tmp_path; set RAG_SCREENSHOTS=<folder> to also copy them there for a look.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
_SIZE = os.environ.get("RAG_VIEWPORT", "1280x800").split("x")  # e.g. RAG_VIEWPORT=1920x1080 for a look at a wide screen
VIEWPORT = {"width": int(_SIZE[0]), "height": int(_SIZE[1])}
_CONTENT_HEIGHT = """() => Math.max(...Array.from(document.querySelectorAll(
    '[data-testid="stMainBlockContainer"], [data-testid="stMain"]')).map(e => e.scrollHeight))"""
START_TIMEOUT = 90  # seconds for `streamlit run` to answer /_stcore/health
SKIP_REASON = (f"browser tests need Chromium at {CHROMIUM}; install it with `apt-get install chromium` "
               "(the Playwright package is installed, its own browsers are not used)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if CHROMIUM.exists():
        return
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class AppServer:
    """A running `streamlit run app.py`; its output goes to log."""

    def __init__(self, folder: Path, env: dict[str, str]):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder / "streamlit.log"
        environment = {k: v for k, v in os.environ.items() if k not in ("QDRANT_URL", "QDRANT_API_KEY")}
        environment |= {"RAG_QDRANT_PATH": str(folder / "qdrant"), "HF_HUB_OFFLINE": "1",
                        "TRANSFORMERS_OFFLINE": "1", "RAG_SAMPLE_DIR": str(folder / "no-samples"), **env}
        command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                   "--server.port", str(self.port), "--server.address", "127.0.0.1",
                   "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT)
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/_stcore/health", timeout=2).text == "ok":
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"streamlit did not answer within {START_TIMEOUT} s:\n{self.log.read_text()}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


@pytest.fixture
def app_server(tmp_path: Path) -> Iterator[callable]:
    """Return a function that starts the app with extra environment variables (stopped after the test)."""
    servers: list[AppServer] = []

    def start(**env: str) -> AppServer:
        servers.append(AppServer(tmp_path, env))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def page(browser, tmp_path: Path, request: pytest.FixtureRequest):
    """Return a fresh 1280x800 page; a failing test leaves tmp_path/failure.png behind."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    page = context.new_page()
    yield page
    if request.node.stash.get(_FAILED, False):
        page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
        print(f"screenshot of the failure: {tmp_path / 'failure.png'}")
    context.close()


@pytest.fixture
def shot(page, tmp_path: Path):
    """Return a function that saves a screenshot as tmp_path/<name>.png (and copies it to $RAG_SCREENSHOTS)."""
    copies = os.environ.get("RAG_SCREENSHOTS")

    def take(name: str, full_page: bool = False) -> Path:
        """Screenshot the viewport; full_page grows the viewport to the app's scroll height first."""
        path = tmp_path / f"{name}.png"
        if full_page:  # Streamlit scrolls inside its own container, so Playwright's full_page sees one screen
            height = page.evaluate(_CONTENT_HEIGHT)
            page.set_viewport_size({"width": VIEWPORT["width"], "height": min(max(height, VIEWPORT["height"]), 6000)})
            page.wait_for_timeout(300)  # let the charts re-lay out
        page.screenshot(path=str(path))
        if full_page:
            page.set_viewport_size(VIEWPORT)
        if copies:
            Path(copies).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(copies) / path.name)
        return path

    return take


# ---- page helpers the browser tests share ---------------------------------------------------------------

def settle(page, timeout: float = 30_000) -> None:
    """Wait until Streamlit has finished the current run (its 'running' indicator is gone)."""
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " && document.querySelectorAll('[data-testid=\"stSkeleton\"]').length === 0",
        timeout=timeout,
    )


def go(page, title: str) -> None:
    """Open a page from the sidebar navigation and wait for its title."""
    page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
    page.get_by_role("heading", name=title, level=1).wait_for()
    settle(page)


def search(page, query: str) -> None:
    page.get_by_label("Query").fill(query)
    # scoped to the form: a results table's toolbar has a "Search" button too
    page.get_by_test_id("stForm").get_by_role("button", name="Search", exact=True).click()


class ScriptRuns:
    """What the browser hears from the server about its script runs (Streamlit's ForwardMsg over the WebSocket):
    how each run ended, "app" (the whole script ran: sidebar, page, every control) or "fragment" (only one
    st.fragment reran), and which root containers ("main", "sidebar", ...) got an element. Made before goto()."""

    def __init__(self, page) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from streamlit.proto.RootContainer_pb2 import RootContainer

        self._message = ForwardMsg
        self._endings = {ForwardMsg.FINISHED_SUCCESSFULLY: "app",
                         ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY: "fragment"}
        self._roots = {value: name.lower() for name, value in RootContainer.items()}
        self.ended: list[str] = []
        self.roots: set[str] = set()
        self.elements = 0  # deltas: elements and blocks sent
        page.on("websocket", lambda socket: socket.on("framereceived", self._received))

    def _received(self, payload: bytes | str) -> None:
        if not isinstance(payload, bytes):
            return
        message = self._message.FromString(payload)
        kind = message.WhichOneof("type")
        if kind == "script_finished":
            self.ended.append(self._endings.get(message.script_finished, "other"))
        elif kind == "delta" and message.metadata.delta_path:
            self.roots.add(self._roots.get(message.metadata.delta_path[0], "other"))
            self.elements += 1

    def clear(self) -> None:
        self.ended.clear()
        self.roots.clear()
        self.elements = 0

    def wait_ended(self, page, runs: int = 1, timeout: float = 30.0) -> list[str]:
        """Return how the runs since clear() ended, once `runs` of them have (the browser may hear it last)."""
        deadline = time.monotonic() + timeout
        while len(self.ended) < runs and time.monotonic() < deadline:
            page.wait_for_timeout(20)  # lets Playwright deliver the frames it has
        return list(self.ended)


def upload(page, pdf: Path) -> None:
    page.get_by_role("heading", name="Upload", level=1).wait_for()
    page.locator("input[type=file]").set_input_files(str(pdf))
    page.get_by_text(pdf.name).first.wait_for()
    page.get_by_role("button", name=re.compile(r"Ingest 1 file")).click()
    page.get_by_text("1 of 1 file ingested.").wait_for(timeout=120_000)
    settle(page)


def first_search(page, url: str, pdf: Path, query: str) -> None:
    """Open the app at url, upload pdf, search query on the Search page and wait for its five hits to be drawn."""
    page.goto(url)
    upload(page, pdf)
    go(page, "Search")
    search(page, query)
    page.get_by_text(re.compile(r"5 hits? for")).wait_for()
    settle(page)
