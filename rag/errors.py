"""The errors a user of RAG Lab can see. Every message says what happened, to what, and what to do.

RagError                          base: pages and the CLI catch this and show str(error)
├── DocumentError                 one file could not be read (the others go on)
│   ├── UnsupportedFileError      not a PDF, text or Markdown file
│   ├── EmptyDocumentError        zero bytes, or only whitespace
│   ├── DocumentTooLargeError     over the size, page or character limit, or the memory or time of its read
│   ├── EncryptedDocumentError    needs a password, or the password is wrong (.wrong_password)
│   ├── CorruptDocumentError      damaged or truncated file
│   ├── NoTextLayerError          scanned: no page has text, OCR is needed
│   └── NoPageImageError          a page cannot be drawn: stored without boxes or file, a page past the end
├── EmbeddingError                the embedding model or server failed
│   ├── UnknownEmbedderError      a spec that no provider takes (lists the valid ones)
│   ├── EmbedderUnavailableError  server unreachable, timed out, or kept failing
│   ├── ModelNotFoundError        the server does not have that model
│   └── EmbedderAuthError         API key missing or refused (the key is never printed)
├── LLMError                      the chat model or its server failed
│   ├── UnknownLLMError           an --llm spec that no provider takes (says the valid forms)
│   ├── LLMUnavailableError       server unreachable, timed out, or kept failing
│   ├── LLMModelNotFoundError     the server does not have that model
│   ├── LLMAuthError              API key missing or refused (the key is never printed)
│   └── ContextWindowError        the prompt does not fit the model's context window
├── RerankError                   the reranker (a /rerank server or a cross-encoder folder) failed
│   ├── UnknownRerankerError      a --rerank spec that no dialect takes (says the valid forms)
│   ├── RerankerUnavailableError  server unreachable, timed out, or kept failing
│   └── RerankerAuthError         API key missing or refused (the key is never printed)
├── StoreError                    Qdrant failed
│   ├── StoreUnavailableError     server down, or the embedded folder is locked by another process
│   ├── CollectionNotFoundError   no such collection
│   ├── DocumentNotFoundError     no such document in the collection (or an ambiguous id)
│   ├── EmbedderMismatchError     the collection was made by another embedder or dimension
│   └── SparseVectorsMissingError no keyword (sparse) vectors: re-ingest for sparse/hybrid search
├── EmbeddingCacheError           the embedding cache file cannot be read or written
├── RunsDatabaseError             the kept runs (runs.sqlite) cannot be read or written: locked, disk full
│   ├── RunNotFoundError          no kept run with that id (or row)
│   └── RunFileError              a run file (`rag runs export`) is missing, not JSON, or not a run
├── Cancelled                     a user's Cancel stopped the work; what finished before it stays
│   ├── IngestCancelled           an ingest, before this file was stored
│   ├── IndexCancelled            an index build (rag.store.edge.index), the collection as it was
│   │   IndexCancelledError       the same as the Store says it (rag.store.indexing; also a StoreError)
│   └── SweepCancelled            a sweep job (ui.jobs.sweep); rag.embeddings.pace.Cancelled is this base itself
├── InvalidSettingsError          a setting (environment, flag, field, chunk_size, k, mode) is malformed or not
│   │                             allowed; also a ValueError, so argparse and callers of a parser keep working
│   └── MissingPackageError       an optional package (e.g. umap-learn) is needed and not installed
├── QueryError                    a query that cannot be searched: empty, only stop words, unknown mode
├── QuerySetError                 a query set line is malformed, points at unknown documents, or two
│   │                             evaluations cannot be compared
│   └── SyntheticQueriesError     no synthetic query could be made from the documents (no usable sentences)
└── UsageError                    a command-line argument names a file that is missing or unusable
"""

from __future__ import annotations


class RagError(Exception):
    """Base of every error meant for the user; str(error) is the message to show."""


class DocumentError(RagError):
    """A file could not be turned into a document."""

    def __init__(self, message: str, filename: str | None = None):
        super().__init__(message)
        self.filename = filename


class UnsupportedFileError(DocumentError):
    pass


class EmptyDocumentError(DocumentError):
    pass


class DocumentTooLargeError(DocumentError):
    pass


class EncryptedDocumentError(DocumentError):
    """The PDF is encrypted; `wrong_password` tells a missing password from a wrong one."""

    def __init__(self, message: str, filename: str | None = None, wrong_password: bool = False):
        super().__init__(message, filename)
        self.wrong_password = wrong_password


class CorruptDocumentError(DocumentError):
    pass


class NoTextLayerError(DocumentError):
    """No page has extractable text: the file is a scan and needs OCR."""

    def __init__(self, message: str, filename: str | None = None, pages: int = 0):
        super().__init__(message, filename)
        self.pages = pages


class NoPageImageError(DocumentError):
    """A chunk's page cannot be drawn: its document was stored before boxes or its file were kept, or no such page."""


class EmbeddingError(RagError):
    pass


class UnknownEmbedderError(EmbeddingError):
    pass


class EmbedderUnavailableError(EmbeddingError):
    pass


class ModelNotFoundError(EmbeddingError):
    pass


class EmbedderAuthError(EmbeddingError):
    pass


class LLMError(RagError):
    pass


class UnknownLLMError(LLMError):
    pass


class LLMUnavailableError(LLMError):
    pass


class LLMModelNotFoundError(LLMError):
    pass


class LLMAuthError(LLMError):
    pass


class ContextWindowError(LLMError):
    pass


class RerankError(RagError):
    pass


class UnknownRerankerError(RerankError):
    pass


class RerankerUnavailableError(RerankError):
    pass


class RerankerAuthError(RerankError):
    pass


class StoreError(RagError):
    pass


class StoreUnavailableError(StoreError):
    pass


class CollectionNotFoundError(StoreError):
    pass


class DocumentNotFoundError(StoreError):
    pass


class ChunkNotFoundError(StoreError):
    """No searchable chunk of the collection has the id asked for."""


class EmbedderMismatchError(StoreError):
    pass


class SparseVectorsMissingError(StoreError):
    """The collection has no RAG Lab keyword (sparse) vectors: sparse and hybrid search cannot run."""


class Cancelled(RagError):
    """A user's Cancel stopped the work (an ingest, a sweep, a comparison, an index build): whatever finished before
    it stays, nothing half-done is kept. One `except Cancelled` catches every kind."""


class IngestCancelled(Cancelled):
    """The ingest was cancelled before this file was stored; the files stored before it stay."""


class EmbeddingCacheError(RagError):
    """The cache file cannot be read or written."""


class RunsDatabaseError(RagError):
    pass


class RunNotFoundError(RunsDatabaseError):
    pass


class RunFileError(RunsDatabaseError):
    """A file given for a run (`--baseline FILE`, `rag runs compare FILE ...`) cannot be read as one."""


class InvalidSettingsError(RagError, ValueError):
    """A setting is malformed (a URL, a limit, a chunk size) or points where it may not (a folder outside the data
    root). A ValueError too: parsers given to argparse as `type=` and their callers catch it as one."""


class MissingPackageError(InvalidSettingsError):
    """The choice needs an optional package that is not installed; the message names the pip command."""


class QueryError(RagError):
    """The query cannot be searched as asked (empty, only stop words, an unknown search mode)."""


class QuerySetError(RagError):
    pass


class SyntheticQueriesError(QuerySetError):
    """No synthetic query could be made: the documents have no usable sentences, or no LLM reply was usable."""


class UsageError(RagError):
    """A command-line argument names a file that does not exist or cannot be read (not an argparse error)."""
