"""What an ingest is asked and what it tells: IngestOptions and Watch going in, Progress events while it runs and
one IngestResult per file when it ends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.embeddings import EmbeddingCache

STAGES = ("extract", "chunk", "embed", "store")


@dataclass(frozen=True)
class Progress:
    file_index: int  # 0-based position of the file in this ingest
    files: int
    filename: str
    stage: str  # one of STAGES, then "done", "error" or "cancelled" (IngestCancelled: nothing of the file stored)
    done: int  # units of the stage done (chunks and children for embed/store, pages of a long PDF, 0/1 otherwise)
    total: int
    seconds_left: float | None = None  # the whole ingest's, estimated (rag.embeddings.pace); None until measured
    children: int = 0  # of total while embedding and storing: the child points (rag.chunking.children), the rest chunks


@dataclass
class IngestResult:
    filename: str
    ok: bool = False
    document_id: str | None = None
    kind: str | None = None
    pages: int = 0
    characters: int = 0
    chunks: int = 0
    empty_pages: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    error: str | None = None  # the message to show when not ok
    error_type: str | None = None  # the error class name, e.g. "EncryptedDocumentError"
    needs_password: bool = False  # the file is encrypted: ask for (another) password and retry
    wrong_password: bool = False  # ... and the password given did not open it
    skipped: bool = False  # not written, on purpose (same content already there under another name); see error
    unchanged: bool = False  # already in the collection with these settings: nothing was embedded or written
    replaced: tuple[str, ...] = ()  # titles of the documents (earlier versions) this one replaced

    @property
    def cancelled(self) -> bool:
        """Return whether a cancel stopped this file before it was stored."""
        return self.error_type == "IngestCancelled"

    @property
    def status(self) -> str:
        """Return the outcome in one word: ingested, unchanged, skipped, needs password, cancelled or failed."""
        if self.ok:
            return "unchanged" if self.unchanged else "ingested"
        if self.cancelled:
            return "cancelled"
        return "skipped" if self.skipped else "needs password" if self.needs_password else "failed"


ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True)
class IngestOptions:
    """How an ingest or re-ingest writes: the options a new collection is made with (an existing one keeps its own),
    whether a file of the same name replaces its document, and the embedding cache to reuse."""

    language: str | None = None  # keyword analysis: "auto" (detected per document), "de", "en", "none"; None: auto
    chunk_headers: bool | None = None  # embed and index each chunk with its title and heading path; None: default
    child_size: int | None = None  # tokens per child (parent-child search); 0: off, None: the default
    keep_versions: bool = False  # a file whose name is in the collection is added beside it, not replacing it
    cache: EmbeddingCache | None = None  # None: the store's (rag.embeddings.store_cache), shared with evaluations


@dataclass(frozen=True)
class Watch:
    """How the caller follows a long job: where its progress goes and how it asks it to stop."""

    progress: ProgressCallback | None = None  # called on the job's thread with each Progress
    cancel: Callable[[], bool] | None = None  # asked before each file and embedding batch; True: stop there

    def report(self, progress: Progress) -> None:
        if self.progress is not None:
            self.progress(progress)

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel()
