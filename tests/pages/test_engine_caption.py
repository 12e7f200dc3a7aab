"""The sidebar says which engine and device embed for the local model, and why another one when it is (AppTest)."""

from __future__ import annotations

import numpy as np

from rag.embeddings import e5
from tests.pages.conftest import start, texts


class Loaded:
    """Stands in for a loaded engine: the sidebar must only read its name and device, never embed."""

    def __init__(self, name: str):
        self.name, self.device = name, "cpu"

    def encode(self, texts, is_query=False):
        return np.ones((len(texts), e5.DIMENSION), np.float32) / np.sqrt(e5.DIMENSION)


def test_the_sidebar_names_the_engine_and_device_that_embed(app_env, monkeypatch):
    monkeypatch.setenv("RAG_EMBEDDER", "local")
    monkeypatch.setattr(e5, "_ENGINES", {"int8": Loaded("onnx-int8"), "fp32": Loaded("torch")})
    monkeypatch.setattr(e5, "_NOTES", {})
    at = start()
    assert "Embeds with onnx-int8 on cpu." in texts(at.sidebar.caption)
    assert not at.sidebar.warning


def test_the_sidebar_says_why_int8_queries_are_embedded_by_float32(app_env, monkeypatch):
    monkeypatch.setenv("RAG_EMBEDDER", "local:int8")
    monkeypatch.setattr(e5, "_ENGINES", {"int8": Loaded("torch")})
    note = ("The int8 engine could not load (onnxruntime is not installed); this process embeds with the float32 "
            "engine, whose vectors differ slightly from the collection's (cosine about 0.997).")
    monkeypatch.setattr(e5, "_NOTES", {"int8": note})
    at = start()
    assert "Embeds with torch on cpu." in texts(at.sidebar.caption)
    assert note in texts(at.sidebar.warning)
