"""The CLI beside the running app (issue 34, item 11): the app holds the embedded folder and serves its reads
(rag.store.reads); `rag search --json` run meanwhile in another process answers what the Search page's table
shows, score for score, and a write from the CLI is refused in one line (AppTest, real Qdrant Edge, real CLI
subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.pages.conftest import PDF, ROOT, search, start, upload
from ui import nav

QUERY = "Welche Schriftgröße verwendet die Klasse?"


def rag(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.slow
def test_the_cli_search_beside_the_app_equals_the_pages_table(app_env, shared_data):
    at = upload(start(), shared_data, PDF, "pdfs/crazyones.pdf").switch_page(nav.SEARCH.path).run()
    search(at, QUERY)
    assert not at.exception, at.exception
    frame = at.dataframe[0].value
    top_k = at.slider(key="top_k").value
    shown = list(zip(frame["chunk"], frame["score"], strict=True))
    assert len(shown) == top_k

    store = str(app_env / "qdrant")
    read = rag("--store", store, "search", QUERY, "--collection", "documents", "--top-k", str(top_k), "--json")
    assert read.returncode == 0, read.stderr
    assert "note: reading through the app that holds" in read.stderr and f"(pid {os.getpid()})" in read.stderr
    hits = json.loads(read.stdout)["hits"]
    assert [(h["chunk_index"], h["score"]) for h in hits] == shown  # the same floats, not rounded ones

    listed = json.loads(rag("--store", store, "documents", "--collection", "documents", "--json").stdout)
    assert sorted(d["title"] for d in listed) == sorted([PDF.split("/")[-1], "crazyones.pdf"])

    write = rag("--store", store, "delete-collection", "documents")
    assert write.returncode == 1
    assert write.stderr.strip().splitlines() == [
        f"error: The store {store} is open in the app (pid {os.getpid()}); writes go through the app or stop it "
        "first: ingest, delete and index on its pages, or stop it (Ctrl+C where it runs) and run this command again."]
    search(at, QUERY)
    assert list(zip(at.dataframe[0].value["chunk"], at.dataframe[0].value["score"], strict=True)) == shown
