""""Use this configuration" as a job of the app's process (ui.jobs' queue, behind any ingest or sweep: one writer at
a time): a sweep row's documents re-chunked into a collection, then its mode and fusion saved as the collection's
defaults with the run that chose them (rag.runs.apply). Cancel stops between documents and embedding batches; the
defaults are saved only when every document was written."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rag import pipeline
from rag.embeddings import Embedder
from rag.errors import IngestCancelled
from rag.ingested import Watch
from rag.runs import Applied, apply_configuration
from rag.store import DocumentArchive, Store
from ui.jobs.base import QueuedJob


@dataclass
class ApplyJob(QueuedJob):
    row: dict  # a kept sweep row (rag.runs.records.sweep_row)
    collection: str
    embedder: Embedder
    store: Store
    location: str
    archive: DocumentArchive
    run_id: int | None = None
    progress: pipeline.Progress | None = None
    result: Applied | None = None

    kind: ClassVar[str] = "apply"
    doing: ClassVar[str] = "Applying"
    cancelled_note: ClassVar[str] = ". Its defaults were not changed."

    @property
    def fraction(self) -> float:
        """Return the share of documents done, 0.0-1.0."""
        p = self.progress
        return 0.0 if p is None else min((p.file_index + (p.stage == "done")) / max(p.files, 1), 1.0)

    @property
    def text(self) -> str:
        p = self.progress
        if p is None or self.status != "running":
            return "Waiting for the jobs before it"
        return f"{p.filename}: {p.stage}"

    @property
    def what(self) -> str:
        return f"{self.row['label']} into '{self.collection}'"

    def done_words(self, what: str) -> str:
        return f"Done: {self.result.summary()}" if self.result else f"Done: {what}"

    def work(self) -> None:
        """Re-ingest and save the defaults; a cancelled or failed document ends the job so (the defaults unsaved)."""
        self.result = apply_configuration(self.row, self.collection, self.embedder, store=self.store,
                                          archive=self.archive, run_id=self.run_id,
                                          watch=Watch(self._progress, lambda: self.cancel_requested))
        cancelled = any(r.error_type == IngestCancelled.__name__ for r in self.result.failed)
        self.status = "cancelled" if cancelled else "failed" if self.result.failed else "done"
        self.error = self.result.summary() if self.status == "failed" else None

    def _progress(self, event: pipeline.Progress) -> None:
        self.progress = event
