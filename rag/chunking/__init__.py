"""Stage 2, chunk: Document -> chunks of cl100k tokens, cut at semantic boundaries, with heading path and pages.

tokens   the one place that knows tiktoken (offline cl100k)   chunker  chunk_document, ChunkSettings, Chunk
toc      tables of contents, flagged so search skips them   tables   Markdown pipe tables: cut between rows
children parent–child: each chunk cut into children at sentence ends (searched in its place, rag.store.children)

tokens, headers, toc and children are public namespaces too (`tokens.count`, `headers.indexed_text`).
"""

from __future__ import annotations

from rag.chunking import children, headers, toc, tokens
from rag.chunking.children import DEFAULT_CHILD_SIZE, MIN_CHILD_SIZE, Child, parse_child_size
from rag.chunking.chunker import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_OVERLAP,
    MIN_CHUNK_SIZE,
    STRATEGIES,
    TOC,
    Chunk,
    ChunkSettings,
    chunk_document,
    validate_settings,
)
from rag.chunking.headers import CHOICES as CHUNK_HEADER_CHOICES
from rag.chunking.headers import DEFAULT_CHUNK_HEADERS, parse_chunk_headers
from rag.chunking.tokens import count as count_tokens

__all__ = ["CHUNK_HEADER_CHOICES", "Child", "Chunk", "ChunkSettings", "DEFAULT_CHILD_SIZE", "DEFAULT_CHUNK_HEADERS",
           "DEFAULT_CHUNK_SIZE", "DEFAULT_OVERLAP", "MIN_CHILD_SIZE", "MIN_CHUNK_SIZE", "STRATEGIES", "TOC", "children",
           "chunk_document", "count_tokens", "headers", "parse_child_size", "parse_chunk_headers", "toc", "tokens",
           "validate_settings"]
