"""Signs of work in Chromium (issue 39, item 8): the first page after a start says that the embedding model loads,
where the page will appear, until the page is drawn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, settle

pytestmark = [pytest.mark.e2e, pytest.mark.model, pytest.mark.slow]

LOADING = "Loading the embedding model (multilingual-e5-small, int8)…"


def test_the_first_page_after_a_start_says_that_the_model_loads(app_server, page, shot, tmp_path: Path):
    environment = {k: v for k, v in os.environ.items() if k not in ("QDRANT_URL", "RAG_EMBEDDER")}
    environment |= {"RAG_QDRANT_PATH": str(tmp_path / "qdrant"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    subprocess.run([sys.executable, "-m", "rag", "ingest", str(ROOT / "rag/samples/passwortrichtlinie.md"),
                    "--collection", "documents"], cwd=ROOT, env=environment, check=True, capture_output=True)
    server = app_server()  # the default embedder, the local model: a new process loads it once
    page.goto(f"{server.url}/search?search=Wie+lang+muss+ein+Passwort+sein")
    note = page.get_by_text(LOADING)
    note.wait_for()  # drawn before the model's import holds the server, above where the page appears
    shot("model-loading")
    page.get_by_text("#1 ·").first.wait_for(timeout=120_000)
    settle(page, timeout=120_000)
    assert note.count() == 0  # gone with the page drawn
    shot("model-loaded")
