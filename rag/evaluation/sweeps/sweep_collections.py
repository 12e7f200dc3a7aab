"""The collections of a sweep: one per configuration, named from it, reused when they hold exactly its chunks.

A name is `sweep-<8 hex of the sorted document ids>-cs400-ov50-<vector name>` (with the strategy when not
structure, `-hdr` with chunk headers), so a sweep finds its own collections again, and the pickers and the
Library can tell them apart. A sweep over a collection's documents reads them here (collection_documents), its
stored vectors into the embedding cache, so a configuration at the collection's own settings embeds nothing;
differs tells whether a collection holds exactly a configuration's chunks, so such a configuration can search the
collection itself, as stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import numpy as np

from rag.chunking import Chunk, children, headers
from rag.documents import Document
from rag.embeddings import Embedder, EmbeddingCache, model_key, store_cache
from rag.evaluation.sweeps.results import SweepConfig
from rag.retrieval import vector_name
from rag.store import Store, document_from_chunks

SWEEP_PREFIX = "sweep-"


def is_sweep_collection(name: str) -> bool:
    """Return True for a collection a sweep made (named by collection_name)."""
    return name.startswith(SWEEP_PREFIX)


def sweep_groups(names: Sequence[str]) -> dict[str, list[str]]:
    """Return the sweep collections among names grouped per sweep (its document set's hash), in name order."""
    groups: dict[str, list[str]] = {}
    for name in sorted(n for n in names if is_sweep_collection(n)):
        groups.setdefault(name[len(SWEEP_PREFIX):].split("-")[0], []).append(name)
    return groups


def collection_name(document_ids: Iterable[str], config: SweepConfig, model_id: str) -> str:
    """Return the collection of a configuration: sweep-<hash of the sorted ids>-cs<size>-ov<overlap>-<vector>."""
    digest = hashlib.sha256("\n".join(sorted(set(document_ids))).encode()).hexdigest()[:8]
    strategy = f"-{config.strategy}" if config.strategy != "structure" else ""
    strategy += "-hdr" if config.chunk_headers else ""
    strategy += f"-ch{config.child_size}" if config.child_size else ""
    return f"sweep-{digest}-cs{config.chunk_size}-ov{config.overlap}{strategy}-{vector_name(model_id)}"


def holds_chunks(store: Store, name: str, chunks: dict[str, list[Chunk]], config: SweepConfig, embedder: Embedder,
           keywords: bool = False) -> bool:
    """Return whether collection name holds exactly these chunks (settings, embedder, keyword vectors if asked).

    A stale one (other chunker, interrupted run, made before keyword vectors) is deleted: it is ours by name.
    """
    same = differs(store, name, chunks, config, embedder, keywords) is None
    if not same and store.has_collection(name):
        store.delete_collection(name)
    return same


def differs(store: Store, name: str, chunks: dict[str, list[Chunk]], config: SweepConfig, embedder: Embedder,
            keywords: bool = False) -> str | None:
    """Return why collection name does not hold exactly these chunks, in words ("'mine' is chunked 350/50, not
    200/0"), or None when it does: the same documents, chunked at config's settings into as many chunks, by this
    embedder, with keyword vectors when asked, the same chunk headers and child size. It changes nothing."""
    if not store.has_collection(name):
        return f"there is no collection '{name}'"
    infos = store.documents(name)
    if {i.document_id for i in infos} != set(chunks):
        return f"'{name}' holds other documents than the {len(chunks)} of the sweep"
    held = sorted({(i.chunk_size, i.overlap, i.strategy) for i in infos})
    if held != [(config.chunk_size, config.overlap, config.strategy)]:
        def shape(size: int, overlap: int, how: str) -> str:
            return f"{size}/{overlap}" + (f" {how}" if how != "structure" else "")
        shown = ", ".join(shape(*held_shape) for held_shape in held)
        return f"'{name}' is chunked {shown}, not {shape(config.chunk_size, config.overlap, config.strategy)}"
    models = sorted({str(i.embedder) for i in infos})
    if models != [embedder.model_id]:
        return f"'{name}' is embedded by {', '.join(models)}, not {embedder.model_id}"
    if {i.document_id: i.chunks for i in infos} != {d: len(c) for d, c in chunks.items()}:
        return f"'{name}' holds other chunks than {config.short} makes of its documents now"
    if keywords and not store.has_keywords(name):
        return f"'{name}' has no keyword vectors (a keyword mode is asked for)"
    if store.chunk_headers(name) != config.chunk_headers:
        return f"'{name}' embeds its chunks {'with' if store.chunk_headers(name) else 'without'} chunk headers"
    if store.child_size(name) != config.child_size:
        return f"'{name}' has child_size {store.child_size(name)}, not {config.child_size}"
    return None


def indexed_texts(documents: Sequence[Document], chunks: dict[str, list[Chunk]], config: SweepConfig) -> list[str]:
    """Return the texts a configuration's chunks are embedded as, in document order (rag.chunking.headers), then
    those of their children (rag.chunking.children), in document order."""
    texts = [headers.indexed_text(c.model_text, d.title, c.heading_path, config.chunk_headers)
             for d in documents for c in chunks[d.id]]
    return texts + [t for d in documents for t in children.indexed_texts(
        d, chunks[d.id], children.children_of(chunks[d.id], config.child_size), config.chunk_headers)]


def index_chunks(store: Store, name: str, documents: Sequence[Document], chunks: dict[str, list[Chunk]],
           vectors: np.ndarray, config: SweepConfig, embedder: Embedder) -> None:
    """Write each document's chunks with their rows of vectors (in document order) to collection name."""
    row, kid_row = 0, sum(len(c) for c in chunks.values())  # the children's vectors follow the chunks'
    for document in documents:
        count = len(chunks[document.id])
        kids = children.children_of(chunks[document.id], config.child_size)
        kid_count = sum(map(len, kids))
        store.upsert_document(name, document, chunks[document.id], vectors[row : row + count], config.settings,
                              embedder, chunk_headers=config.chunk_headers, child_size=config.child_size,
                              kids=kids if config.child_size else None,
                              kid_vectors=vectors[kid_row : kid_row + kid_count])
        row, kid_row = row + count, kid_row + kid_count


def remember_stored_vectors(store: Store, collection: str, cache: EmbeddingCache) -> int:
    """Return how many stored vectors of collection were put into cache, each under the text it was embedded as
    (the collection's model, document prompt and chunk headers): chunking its documents again at its own
    settings then embeds nothing, also for a collection ingested before ingests used the cache. 0 when foreign."""
    meta = store.collection_meta(collection)
    model = meta.get("embedder")
    if not model:
        return 0
    name, headed = vector_name(model), store.chunk_headers(collection)
    points = store.points_with_vectors(collection, store.point_ids(collection), name,
                                       ["content", "document_title", "heading_path"])
    texts, vectors = [], []
    for point in points:
        payload, vector = point.payload or {}, point.vector
        vector = vector.get(name) if isinstance(vector, dict) else vector
        if not payload.get("content") or vector is None:
            continue  # the registry point, or a point without our vector
        texts.append(headers.indexed_text(payload["content"], str(payload.get("document_title") or ""),
                                          tuple(payload.get("heading_path") or ()), headed))
        vectors.append(np.asarray(vector, dtype=np.float32))
    cache.remember(model_key(model, str(meta.get("document_prompt") or "")), texts, vectors)
    return len(texts)


def collection_documents(store: Store, collection: str, cache: EmbeddingCache | None = None) -> list[Document]:
    """Return the documents of a collection rebuilt from their stored chunks (offsets kept), by title.

    Their stored vectors go into cache (default: the store's, which the app's sweeps use): a sweep of them at the
    collection's own settings embeds only the questions (remember_stored_vectors).
    """
    remember_stored_vectors(store, collection, cache if cache is not None else store_cache(store))
    return [document_from_chunks(i.document_id, i.title, store.document_chunks(collection, i.document_id))
            for i in store.documents(collection)]
