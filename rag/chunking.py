"""Document -> list[Chunk]: token budget, overlap, heading path, offsets and pages."""

from __future__ import annotations

from dataclasses import dataclass

STRATEGIES = ("structure", "tokens")


@dataclass(frozen=True)
class ChunkSettings:
    chunk_size: int = 600
    overlap: int = 80
    strategy: str = "structure"


@dataclass(frozen=True)
class Chunk:
    document_id: str
    chunk_index: int  # 0-based
    content: str  # == document.text[start:end]
    token_count: int  # exact cl100k count of content
    heading_path: tuple[str, ...]  # heading titles from the top level down
    page_start: int  # 1-based
    page_end: int
    start: int
    end: int
