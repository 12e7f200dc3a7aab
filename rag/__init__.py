"""RAG Lab's library: documents -> chunks -> embeddings -> Qdrant -> hits -> the LLM's context.

    import rag
    store = rag.open_store(path="data/qdrant")
    embedder = rag.get_embedder("local")
    rag.ingest([rag.SourceFile("policy.pdf", path=Path("policy.pdf"))], "documents", embedder=embedder, store=store)
    request = rag.SearchRequest(mode="hybrid", top_k=5)
    context = rag.retrieve("Wie lang ist die Kündigungsfrist?", "documents", request, store=store, embedder=embedder)

The stages are packages: documents (extract), chunking, embeddings, store (Qdrant), retrieval (search, fusion,
the context) and, optionally, generation (prompt, LLM, citations); pipeline.py runs them. reports/ and evaluation/
measure what they do; cli/ is `python -m rag`. Every error a user can cause is a RagError (rag.errors)
whose message says what to do.

Names load on first use, so `import rag` stays cheap (a PDF worker process never loads Qdrant's client).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "rag.documents": ("Document", "Heading", "Page", "SourceFile", "load_document"),
    "rag.chunking": ("Chunk", "ChunkSettings", "DEFAULT_CHUNK_SIZE", "DEFAULT_OVERLAP", "chunk_document"),
    "rag.embeddings": ("DEFAULT_EMBEDDER", "get_embedder"),
    "rag.embeddings.base": ("Embedder",),
    "rag.store": ("DEFAULT_COLLECTION", "CollectionInfo", "DocumentInfo", "Hit", "Store", "open_store"),
    "rag.retrieval.context": ("CHAT_MAX_TOKENS", "GENERATION_MAX_TOKENS", "Context", "build_context"),
    "rag.retrieval.request": ("SearchRequest",),
    "rag.ingested": ("IngestResult", "Progress"),
    "rag.pipeline": ("embedder_for", "ingest", "reingest", "retrieve", "search"),
    "rag.generation.prompts": ("Prompt", "build_prompt"),
    "rag.generation.llm": ("get_llm",),
    "rag.generation.answer": ("Answer", "answer_with"),
    "rag.rerank": ("get_reranker",),
    "rag.errors": ("DocumentError", "EmbeddingError", "InvalidSettingsError", "QueryError", "QuerySetError",
                   "RagError", "StoreError"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'rag' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and editors see; at run time the names load on first use
    from rag.chunking import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP, Chunk, ChunkSettings, chunk_document
    from rag.documents import Document, Heading, Page, SourceFile, load_document
    from rag.embeddings import DEFAULT_EMBEDDER, Embedder, get_embedder
    from rag.errors import (
        DocumentError,
        EmbeddingError,
        InvalidSettingsError,
        QueryError,
        QuerySetError,
        RagError,
        StoreError,
    )
    from rag.generation import Answer, Prompt, answer_with, build_prompt, get_llm
    from rag.ingested import IngestResult, Progress
    from rag.pipeline import embedder_for, ingest, reingest, retrieve, search
    from rag.rerank import get_reranker
    from rag.retrieval import CHAT_MAX_TOKENS, GENERATION_MAX_TOKENS, Context, SearchRequest, build_context
    from rag.store import DEFAULT_COLLECTION, CollectionInfo, DocumentInfo, Hit, Store, open_store
