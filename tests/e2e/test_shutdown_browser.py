"""Stopping the app (issue 39.10): SIGTERM ends `streamlit run app.py` with its own settings (the polling file
watcher of .streamlit/config.toml, not the browser tests' "none"), an ingest under way included, and the data
folder holds only whole documents: the running ingest was cancelled at a batch boundary, not frozen mid-write."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import ROOT, START_TIMEOUT, _free_port, settle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
EXIT_TIMEOUT = 10  # generous: a guard against a hang, not a measure of speed (idle, it takes about a second)


def started(folder: Path) -> tuple[subprocess.Popen, str]:
    """Start the app as `make run` does (the project's config, its file watcher) on a free port; return it."""
    port = _free_port()
    environment = {k: v for k, v in os.environ.items() if k not in ("QDRANT_URL", "QDRANT_API_KEY")}
    environment |= {"RAG_DATA_ROOT": str(folder), "RAG_QDRANT_PATH": str(folder / "qdrant"), "RAG_EMBEDDER": "fake",
                    "RAG_SAMPLE_DIR": str(folder / "no-samples")}
    log = (folder / "streamlit.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                "--server.port", str(port), "--server.address", "127.0.0.1"],
                               cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{url}/_stcore/health", timeout=2).text == "ok":
                return process, url
        except httpx.HTTPError:
            time.sleep(0.3)
    process.kill()
    raise AssertionError(f"the app did not start:\n{(folder / 'streamlit.log').read_text()}")


def stopped(process: subprocess.Popen, folder: Path) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)
        raise AssertionError(f"the app was still running {EXIT_TIMEOUT} s after SIGTERM:\n"
                             f"{(folder / 'streamlit.log').read_text()[-2000:]}") from None


def documents(folder: Path) -> list[dict]:
    """Return `rag documents --json` of the collection the app wrote, read after the app is gone."""
    done = subprocess.run([sys.executable, "-m", "rag", "--store", str(folder / "qdrant"), "documents",
                           "--collection", "documents", "--json"], cwd=ROOT, capture_output=True, text=True,
                          env=os.environ | {"RAG_DATA_ROOT": str(folder)}, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_sigterm_during_an_ingest_stops_the_app_and_keeps_every_stored_document_whole(page, tmp_path):
    files = []
    for number in range(3):  # long enough to be under way when the signal comes
        path = tmp_path / f"teil-{number}.txt"
        path.write_text("\n\n".join(f"Abschnitt {i} von Teil {number}. " + "Ein Satz über die Sicherung. " * 40
                                    for i in range(1500)), encoding="utf-8")
        files.append(str(path))
    process, url = started(tmp_path)
    try:
        page.goto(url)
        page.get_by_role("heading", name="Upload", level=1).wait_for()
        settle(page)
        page.locator("input[type=file]").set_input_files(files)
        page.get_by_text("teil-2.txt").first.wait_for()
        page.get_by_role("button", name=re.compile(r"Ingest 3 files")).click()
        page.get_by_text(re.compile(r"Ingesting into 'documents': 1 of 3 files done")).first.wait_for(timeout=120_000)
    finally:
        code = stopped(process, tmp_path)
    assert code == 0
    said = (tmp_path / "streamlit.log").read_text(encoding="utf-8")
    assert re.search(r"RAG Lab stops\. Cancelled: [12] of 3 files stored in 'documents'", said), said[-1500:]
    stored = documents(tmp_path)
    assert all(d["complete"] for d in stored), stored  # cancelled between batches, never frozen mid-write
    assert 1 <= len(stored) < 3, "the ingest was not under way at the signal: the test proves nothing"
