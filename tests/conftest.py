"""Shared fixtures: where the real test material lives."""

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
