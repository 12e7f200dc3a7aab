"""How hybrid search fuses the dense and the keyword candidate lists, written as a short spec.

    rrf                 Qdrant's reciprocal rank fusion: sum of 1 / (k + rank - 1), k = 2
    rrf:k=10:w=0.7      weighted RRF: the dense list counts w, the keyword list 1 - w (Qdrant's weights,
                        scaled so w = 0.5 is plain RRF); 1 / ((rank) / weight + k - 1) per list
    dbsf                Qdrant's distribution-based score fusion (each list's scores normalised by its
                        mean +- 3 standard deviations, then added)
    convex:w=0.6        a normalised convex combination: each list's scores min-max normalised over its
                        candidates, fused = w * dense + (1 - w) * keyword (0 for a list a chunk is not in);
                        computed here from the same two candidate lists

rrf and convex are computed here from the two candidate lists the engine returns (rrf with Qdrant's formula,
so a server and the embedded engine fuse alike): a list's equal scores are in a stable order there
(rag.store.edge.ties), where inside the engine's own fusion two keyword scores a float32 digit apart could
swap ranks between two collections of the same chunks. dbsf runs in Qdrant. DEFAULT_FUSION is the one measured
best on German and English query sets (bench/modes.py; docs/benchmarks.md, "Retrieval defaults").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from qdrant_client import models

from rag.errors import InvalidSettingsError
from rag.retrieval.equal_scores import in_order

METHODS = ("rrf", "dbsf", "convex")
DEFAULT_FUSION = "convex"  # w = 0.5: within 0.003 MRR@10 of the best weight on XQuAD-de and the English set
DEFAULT_WEIGHT = 0.5
RRF_K = 2  # Qdrant's default ranking constant
TOLERANCE = 1e-6  # fused scores (0-1 for convex, below 1 for rrf) this close count as equal


@dataclass(frozen=True)
class Fusion:
    method: str = "rrf"
    weight: float = DEFAULT_WEIGHT  # the dense list's share (rrf, convex)
    k: int = RRF_K  # rrf's ranking constant

    @property
    def spec(self) -> str:
        """Return the fusion as text, parameters only where they differ from the defaults ("convex:w=0.6")."""
        params = []
        if self.method == "rrf" and self.k != RRF_K:
            params.append(f"k={self.k}")
        if self.method in ("rrf", "convex") and self.weight != DEFAULT_WEIGHT:
            params.append(f"w={self.weight:g}")
        return ":".join([self.method, *params])

    @property
    def fused_here(self) -> bool:
        """Return whether RAG Lab fuses the lists itself (rrf, convex) rather than the engine (dbsf)."""
        return self.method != "dbsf"

    def fuse(self, dense: Sequence[tuple[str, float]], keyword: Sequence[tuple[str, float]],
             order: Mapping[str, tuple] | None = None) -> list[tuple[str, float]]:
        """Return (id, fused score) best first of two candidate lists (best first); rrf or convex."""
        if self.method == "rrf":
            return rrf([i for i, _ in dense], [i for i, _ in keyword], self.weight, self.k, order)
        return convex(dense, keyword, self.weight, order)

    def query(self) -> models.FusionQuery | models.RrfQuery:
        """Return the engine's fusion query for rrf and dbsf."""
        if self.method == "dbsf":
            return models.FusionQuery(fusion=models.Fusion.DBSF)
        if self.weight == DEFAULT_WEIGHT and self.k == RRF_K:
            return models.FusionQuery(fusion=models.Fusion.RRF)
        return models.RrfQuery(rrf=models.Rrf(k=self.k, weights=[2 * self.weight, 2 * (1 - self.weight)]))


def parse_fusion(text: str | Fusion) -> Fusion:
    """Return the Fusion of a spec such as "rrf", "rrf:k=10:w=0.7", "dbsf" or "convex:w=0.6"."""
    if isinstance(text, Fusion):
        return text
    method, *params = str(text).strip().lower().split(":")
    if method not in METHODS:
        raise InvalidSettingsError(f"Unknown fusion '{text}'. Use one of: {', '.join(METHODS)} (e.g. convex:w=0.6).")
    values: dict[str, float] = {}
    for item in filter(None, (p.strip() for p in params)):
        key, _, value = item.partition("=")
        try:
            values[key.strip()] = float(value)
        except ValueError:
            values[key.strip()] = float("nan")
    weight, k = values.pop("w", DEFAULT_WEIGHT), values.pop("k", RRF_K)
    if values or not 0.0 <= weight <= 1.0 or not (k >= 1 and float(k).is_integer()) or (params and method == "dbsf"):
        raise InvalidSettingsError(
            f"Fusion '{text}' has parameters it cannot take. rrf takes k (a whole number >= 1) and w (0-1), "
            "convex takes w (0-1: the dense list's share), dbsf takes none."
        )
    return Fusion(method, round(weight, 4), int(k))


def rrf(dense: Sequence[str], keyword: Sequence[str], weight: float = DEFAULT_WEIGHT, k: int = RRF_K,
        order: Mapping[str, tuple] | None = None) -> list[tuple[str, float]]:
    """Return (id, fused score) best first by Qdrant's reciprocal rank fusion of two ranked id lists.

    Each list adds 1 / (rank / share + k - 1) for a rank from 1, share = 2 x weight for the dense list and
    2 x (1 - weight) for the keyword list (1 each at the default 0.5: 1 / (k + rank - 1)); a list of share 0
    adds nothing. Equal fused scores (common: the first of one list and the first of the other) are ordered
    by order[id], then by id, as in convex.
    """
    fused: dict[str, float] = {}
    for share, ranked in ((2 * weight, dense), (2 * (1 - weight), keyword)):
        for rank, point in enumerate(ranked, 1):
            fused[point] = fused.get(point, 0.0) + (1 / (rank / share + k - 1) if share > 0 else 0.0)
    return _ordered(fused, order)


def convex(dense: Sequence[tuple[str, float]], keyword: Sequence[tuple[str, float]], weight: float,
           order: Mapping[str, tuple] | None = None) -> list[tuple[str, float]]:
    """Return (id, fused score) best first: weight x min-max-normalised dense + (1 - weight) x keyword.

    Equal fused scores are common (at weight 0.5 the top of each list, missing from the other, score 0.5
    each); they are ordered by order[id] (e.g. document and chunk index), then by id. Point ids change with
    every ingest, so without an order the same documents could rank differently after re-ingesting.
    """
    fused: dict[str, float] = {}
    for share, ranked in ((weight, dense), (1 - weight, keyword)):
        if not ranked:
            continue
        scores = [score for _, score in ranked]
        low, high = min(scores), max(scores)
        for point, score in ranked:
            normal = (score - low) / (high - low) if high > low else 1.0
            fused[point] = fused.get(point, 0.0) + share * normal
    return _ordered(fused, order)


def _ordered(fused: dict[str, float], order: Mapping[str, tuple] | None) -> list[tuple[str, float]]:
    """Return (id, fused score) best first; scores within TOLERANCE count as equal and follow order[id], then id
    (a convex fusion carries the last-digit noise of keyword scores: rag.retrieval.equal_scores)."""
    order = order or {}
    ranked = sorted(fused.items(), key=lambda item: -item[1])
    return in_order(ranked, lambda item: item[1], lambda item: (order.get(item[0], ()), item[0]), TOLERANCE)
