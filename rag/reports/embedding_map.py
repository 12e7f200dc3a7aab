"""A 2-D map of a collection's chunk embeddings, with a query and its hits marked.

Projection: "pca" (numpy SVD, the default: fast, deterministic, distances along the axes mean something),
"tsne" (scikit-learn) or "umap" (umap-learn), the last two only when
their package is installed (`available_methods()`). Vectors are L2-normalised first, since cosine search
compares directions.
PCA components get a fixed sign (each one's largest loading positive), so the same vectors give the same
picture every time; the query is projected with the chunks' components. t-SNE and UMAP cannot project a
new point, so the query joins their fit as one more row.

Sampling: a collection with more than `sample` chunks is shown as a random sample of `sample` chunks,
drawn with a fixed seed from the sorted point ids (the same chunks on every call while the collection is
unchanged), plus every hit of the query, which is always shown. EmbeddingMap.sampled and .notes say so.
"""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag import pipeline
from rag.embeddings import Embedder
from rag.errors import InvalidSettingsError, MissingPackageError, StoreError
from rag.retrieval import DEFAULT_REQUEST, Hit, SearchRequest, hit_from_point, vector_name
from rag.store import Store
from rag.words import counted

METHODS = ("pca", "tsne", "umap")
DEFAULT_SAMPLE = 2000
SEED = 0
PREVIEW_CHARS = 80
MIN_NONLINEAR = 5  # t-SNE and UMAP need a few neighbours; fewer points get PCA
_PACKAGES = {"tsne": ("sklearn", "scikit-learn"), "umap": ("umap", "umap-learn")}
_FIELDS = ["content", "document_id", "document_title", "heading_path", "chunk_index", "chunk_id"]


@dataclass(frozen=True)
class MapPoint:
    x: float
    y: float
    document_id: str
    document_title: str
    heading: str  # its heading at the first level that splits its document (split_headings): a colour of few values
    heading_path: tuple[str, ...]
    chunk_index: int | None
    preview: str  # the first PREVIEW_CHARS characters, one line, plain text (show it as text, never Markdown)
    is_hit: bool
    hit_rank: int | None  # 1 = the query's best hit; None when not a hit


@dataclass(frozen=True)
class EmbeddingMap:
    collection: str
    method: str  # "pca", "tsne" or "umap"
    points: tuple[MapPoint, ...]
    total: int  # chunks in the collection
    sampled: bool  # True: points are a sample of the collection (plus the hits)
    query: str | None = None
    query_point: tuple[float, float] | None = None  # where the query lands on the map
    explained: tuple[float, float] | None = None  # PCA: share of the variance along x and along y
    notes: tuple[str, ...] = ()

    def rows(self) -> list[dict]:
        """Return one dict per point (x, y, document_title, heading, chunk_index, preview, is_hit, hit_rank)."""
        return [{"x": p.x, "y": p.y, "document_title": p.document_title, "heading": p.heading,
                 "chunk_index": p.chunk_index, "preview": p.preview, "is_hit": p.is_hit, "hit_rank": p.hit_rank}
                for p in self.points]


def available_methods() -> list[str]:
    """Return the projection methods that can run here: "pca" always, "tsne" / "umap" when installed."""
    return ["pca", *(m for m, (module, _) in _PACKAGES.items() if importlib.util.find_spec(module) is not None)]


@dataclass(frozen=True)
class Projection:
    mean: np.ndarray  # (dimension,)
    components: np.ndarray  # (dims, dimension), rows of unit length
    explained: np.ndarray  # (dims,) share of the total variance along each component

    def project(self, vectors: np.ndarray) -> np.ndarray:
        """Return the coordinates of vectors (rows) in the components' space."""
        return (np.asarray(vectors, dtype=np.float64) - self.mean) @ self.components.T


def pca(matrix: np.ndarray, dims: int = 2) -> Projection:
    """Return the first dims principal components of matrix's rows (SVD of the centred rows), signs fixed.

    Fewer rows or columns than dims: the missing components are zero vectors with zero variance.
    """
    data = np.asarray(matrix, dtype=np.float64)
    mean = data.mean(axis=0) if len(data) else np.zeros(data.shape[1])
    _, singular, vt = np.linalg.svd(data - mean, full_matrices=False)
    components = np.zeros((dims, data.shape[1]))
    kept = min(dims, len(vt))
    components[:kept] = vt[:kept]
    for row in components:  # sign convention: the largest loading of each component is positive
        if row.any() and row[np.argmax(np.abs(row))] < 0:
            row *= -1
    variance = singular**2
    explained = np.zeros(dims)
    if variance.sum() > 0:
        explained[:kept] = variance[:kept] / variance.sum()
    return Projection(mean, components, explained)


def preview(text: str, width: int = PREVIEW_CHARS) -> str:
    """Return text on one line, cut to width characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def normalised(matrix: np.ndarray) -> np.ndarray:
    """Return the rows of matrix scaled to unit length (zero rows stay zero)."""
    data = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(data, axis=1, keepdims=True)
    return np.divide(data, norms, out=np.zeros_like(data), where=norms > 0)


def sample_ids(ids: Sequence[Any], sample: int, seed: int = SEED) -> tuple[list[Any], bool]:
    """Return (at most sample ids drawn without replacement with seed from the sorted ids, whether it is a sample)."""
    ordered = sorted(ids, key=str)
    if len(ordered) <= sample:
        return ordered, False
    chosen = np.random.default_rng(seed).choice(len(ordered), size=sample, replace=False)
    return [ordered[i] for i in sorted(chosen)], True


def _dense(point: Any, vector: str, dimension: int) -> list[float]:
    """Return the point's dense vector: the named one, the unnamed one, or the only one of the right size."""
    raw = point.vector
    if isinstance(raw, dict):
        fits = [v for name, v in raw.items() if (name == vector or not vector) and isinstance(v, list)]
        fits = [v for v in fits if not dimension or len(v) == dimension] or fits
        raw = fits[0] if len(fits) == 1 else None
    if not isinstance(raw, list):
        raise StoreError(f"Point {point.id} has no single dense vector to map; pick the collection's embedder.")
    return raw


def _point_id(hit: Hit) -> Any | None:
    """Return the Qdrant point id of a hit if its chunk_id can be one (RAG Lab's ids are the point ids)."""
    if hit.chunk_id.isdigit():
        return int(hit.chunk_id)
    try:
        return str(uuid.UUID(hit.chunk_id))
    except ValueError:
        return None


def _project(vectors: np.ndarray, query: np.ndarray | None, method: str) -> tuple[np.ndarray, np.ndarray | None, Any]:
    """Return (2-D coordinates of vectors, of the query or None, PCA's explained shares or None)."""
    if method == "pca":
        projection = pca(vectors)
        where = projection.project(query[None, :])[0] if query is not None else None
        return projection.project(vectors), where, projection.explained
    rows = vectors if query is None else np.vstack([vectors, query[None, :]])
    coords = _tsne(rows) if method == "tsne" else _umap(rows)
    return (coords[: len(vectors)], coords[-1] if query is not None else None, None)


def _tsne(rows: np.ndarray) -> np.ndarray:
    from sklearn.manifold import TSNE

    perplexity = float(min(30.0, max(1.0, (len(rows) - 1) / 3)))
    return TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=SEED).fit_transform(rows)


def _umap(rows: np.ndarray) -> np.ndarray:
    import umap

    return umap.UMAP(n_components=2, random_state=SEED, n_neighbors=max(2, min(15, len(rows) - 1))).fit_transform(rows)


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise InvalidSettingsError(f"Unknown map method '{method}'. Use one of: {', '.join(METHODS)}.")
    if method not in available_methods():
        module, package = _PACKAGES[method]
        install = f"run `pip install {package}`"
        raise MissingPackageError(f"The {method} map needs the package {package}, which is not installed here: "
                                  f"{install}, or use the pca map.")


def embedding_map(
    store: Store,
    collection: str,
    embedder: Embedder | None = None,
    query: str | None = None,
    sample: int = DEFAULT_SAMPLE,
    method: str = "pca",
    *,
    request: SearchRequest = DEFAULT_REQUEST,
    hits: Sequence[Hit] | None = None,
) -> EmbeddingMap:
    """Return a 2-D map of collection's chunks (a seeded sample if it has more than sample), query and hits marked.

    The query's hits come from pipeline.search(query, request) (a mode or fusion None: dense, DEFAULT_FUSION, as a
    Store searches), or pass the hits already found.
    The query is embedded with embedder (default: the collection's own) to place it on the map.
    """
    _check_method(method)
    if sample < 1:
        raise InvalidSettingsError(f"The map needs a sample of at least 1 chunk, not {sample}.")
    model_id, dimension = store.collection_embedder(collection)
    if query is not None:
        embedder = embedder or pipeline.embedder_for(store, collection)
        if hits is None:
            hits = pipeline.search(query, collection, request.as_searched(), store=store, embedder=embedder)
    every = store.point_ids(collection)
    ids, sampled = sample_ids(every, sample)
    chosen = set(ids)
    extra = list(dict.fromkeys(i for i in (_point_id(h) for h in hits or ()) if i is not None and i not in chosen))
    points = store.points_with_vectors(collection, ids + extra, vector_name(model_id) if model_id else "", _FIELDS)
    query_vector = normalised(embedder.embed_query([query]))[0] if query is not None else None
    hit_ranks = {h.chunk_id: rank for rank, h in enumerate(hits or (), 1)}
    notes = []
    if method != "pca" and len(points) < MIN_NONLINEAR:
        notes.append(f"{len(points)} chunks are too few for {method}; this map uses PCA.")
        method = "pca"
    shown = _points(points, vector_name(model_id) if model_id else "", dimension, hit_ranks, method, query_vector)
    if sampled:
        notes.append(f"Showing a random sample of {len(ids):,} of {len(every):,} chunks (seed {SEED})"
                     + (f", plus {counted(len(extra), 'hit')} outside it." if extra else "."))
    if method != "pca":
        notes.append(f"{method} keeps neighbours close but distorts the distances between groups; PCA does not.")
    return EmbeddingMap(collection, method, shown[0], len(every), sampled, query, shown[1], shown[2], tuple(notes))


def _points(points: list[Any], vector: str, dimension: int, hit_ranks: dict[str, int], method: str,
            query_vector: np.ndarray | None) -> tuple[tuple[MapPoint, ...], Any, Any]:
    """Return (the map points, the query's (x, y) or None, PCA's explained shares or None) of retrieved points."""
    if not points:
        return (), None, None
    chunks = [hit_from_point(p, None) for p in points]
    matrix = normalised(np.array([_dense(p, vector, dimension) for p in points], dtype=np.float64))
    coords, where, explained = _project(matrix, query_vector, method)
    headings = split_headings([(c.document_id, c.heading_path) for c in chunks])
    shown = tuple(MapPoint(float(x), float(y), c.document_id, c.document_title, heading, c.heading_path,
                           c.chunk_index, preview(c.content), c.chunk_id in hit_ranks, hit_ranks.get(c.chunk_id))
                  for (x, y), c, heading in zip(coords, chunks, headings, strict=True))
    shown = tuple(sorted(shown, key=lambda p: (p.document_title, p.document_id, p.chunk_index or 0)))
    return (shown, None if where is None else (float(where[0]), float(where[1])),
            None if explained is None else (float(explained[0]), float(explained[1])))


def split_headings(chunks: Sequence[tuple[str, tuple[str, ...]]]) -> list[str]:
    """Return each chunk's heading (of its (document id, heading path)) at the first level where its document's
    chunks differ: a document under one title (a Markdown file's single #) is split by its next level; "" before
    the first heading."""
    paths: dict[str, set[tuple[str, ...]]] = {}
    for document, path in chunks:
        if path:
            paths.setdefault(document, set()).add(path)
    levels = {document: _split_level(found) for document, found in paths.items()}
    return [path[min(levels[document], len(path) - 1)] if path else "" for document, path in chunks]


def _split_level(paths: set[tuple[str, ...]]) -> int:
    """Return the first heading level at which paths differ (0 when they never do)."""
    for level in range(max(len(p) for p in paths)):
        if len({p[: level + 1] for p in paths}) > 1:
            return level
    return 0
