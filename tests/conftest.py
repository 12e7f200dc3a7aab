"""Shared fixtures: where the real test material lives; the environment and server-like behaviour of page tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("RAG_SHARED_DATA", ROOT.parent / "shared" / "data"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Return ../shared/data (real PDFs, Markdown, XQuAD); skip loudly where it is missing."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared test material not found at {SHARED_DATA} (set RAG_SHARED_DATA)")
    return SHARED_DATA


def read_shared(shared: Path, relative: str) -> bytes:
    return (shared / relative).read_bytes()


@pytest.fixture
def app_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Give the app (AppTest) its own Qdrant folder, the fake embedder and an empty sample folder setting."""
    monkeypatch.setenv("RAG_QDRANT_PATH", str(tmp_path / "qdrant"))
    monkeypatch.setenv("RAG_EMBEDDER", "fake")
    monkeypatch.setenv("RAG_SAMPLE_DIR", str(tmp_path / "samples"))
    monkeypatch.setenv("RAG_DATA_ROOT", str(tmp_path))
    for name in ("QDRANT_URL", "QDRANT_API_KEY", "RAG_COLLECTION", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST",
                 "RAG_UI_SETTINGS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path
