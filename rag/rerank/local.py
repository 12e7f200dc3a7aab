"""`local:<path>`: a cross-encoder folder on this machine, through sentence-transformers (the optional
extra: `make extras`; without it, one MissingPackageError line names that command).

Nothing is downloaded (HF_HUB_OFFLINE, as for the local embedders); the model loads on first use and is kept
for the process (one per folder). Its score is the cross-encoder's own: what CrossEncoder.predict returns
(a sigmoid in 0..1 for the usual one-label rerankers, raw logits for others).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag import extras
from rag.errors import RerankError

_MODELS: dict[str, Any] = {}
_LOCK = threading.Lock()
BATCH_SIZE = 16


class CrossEncoderReranker:
    """Scores (query, text) pairs with a sentence-transformers CrossEncoder folder."""

    dialect = "local"
    scale = "cross-encoder score (the model's own: 0 to 1 after its sigmoid, or raw logits)"

    def __init__(self, folder: Path):
        self.path = folder
        self.spec = f"local:{folder}"

    def __repr__(self) -> str:
        return f"CrossEncoderReranker(spec={self.spec!r})"

    def close(self) -> None:
        pass

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Return the cross-encoder's score of each text for query, in the order of texts."""
        if not texts:
            return []
        scores = _model(self.path).predict([(query, text) for text in texts], batch_size=BATCH_SIZE,
                                           show_progress_bar=False, convert_to_numpy=True)
        return [float(s) for s in scores]


def folder(argument: str) -> Path:
    """Return the cross-encoder folder of a `local:<path>` argument; RerankError when it is no folder."""
    extras.require("A local:<path> reranker", *extras.SENTENCE_TRANSFORMERS)
    path = Path(argument).expanduser().resolve()
    if not path.is_dir() or not (path / "config.json").is_file():
        raise RerankError(f"No cross-encoder folder at '{argument}' (a folder with config.json). Nothing is "
                          "downloaded: give the path of a sentence-transformers CrossEncoder folder, or use a "
                          "rerank server (tei:<url>, cohere:<model>, jina:<model>).")
    return path


def _model(path: Path) -> Any:
    key = str(path)
    with _LOCK:
        if key not in _MODELS:
            _MODELS[key] = _load(key)
        return _MODELS[key]


def _load(path: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import CrossEncoder
    except ImportError as exc:
        raise extras.missing("A local:<path> reranker") from exc
    try:
        return CrossEncoder(path, device="cpu", local_files_only=True)
    except Exception as exc:  # transformers raises OSError, ValueError, KeyError ... for a bad folder
        raise RerankError(f"Could not load a cross-encoder from '{path}': {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:160] if str(exc) else ''}") from exc
