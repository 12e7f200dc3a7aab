"""Stage 2, chunk: Document -> chunks of cl100k tokens, cut at semantic boundaries, with heading path and pages.

tokens   the one place that knows tiktoken (offline cl100k)   chunker  chunk_document, ChunkSettings, Chunk
toc      tables of contents, flagged so search skips them   tables   Markdown pipe tables: cut between rows
children parent–child: each chunk cut into children at sentence ends (searched in its place, rag.store.children)
"""

from rag.chunking.chunker import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_OVERLAP,
    STRATEGIES,
    Chunk,
    ChunkSettings,
    chunk_document,
    validate_settings,
)

__all__ = ["DEFAULT_CHUNK_SIZE", "DEFAULT_OVERLAP", "STRATEGIES", "Chunk", "ChunkSettings", "chunk_document",
           "validate_settings"]  # fmt: skip
