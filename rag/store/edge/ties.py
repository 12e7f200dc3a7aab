"""Equal scores in a stable order, as qdrant-client's local mode gave them and Store's callers rely on.

Qdrant's top-k heap returns points of equal score (keyword and RRF scores tie often) in an order that depends on
the limit, and picks among those tied at the cut-off as it goes. So a search asks the engine for more than its
limit, asks again for more while a run of equal scores reaches the end of what came back, and orders each run
by (document_id, chunk_index), then point id: every top_k is then a prefix of a deeper one, and two collections
with the same chunks (ids differ: they hold the write's generation) rank them the same. "Equal" is equal in
float32: the engine's keyword scores of the same chunk differ in the last float32 digit between two such
collections (the order of its float32 sums differs between two builds of a shard, not between two searches of
one), so keyword and fused scores within TOLERANCE (relative, at least absolute for scores below 1) form one
run. Dense scores are the same in every build, and near neighbours of real (and of clustered) vectors lie
closer than TOLERANCE: a dense run is only exactly equal scores, else a tie run would put a lower score before
a higher one (exact search lost 2 % of numpy's top 10 at 100,000 clustered points that way). The scores
themselves are returned as the engine gave them.
"""

from __future__ import annotations

from collections.abc import Callable

from qdrant_client import models

from rag.retrieval import close, in_order

MARGIN = 1  # points asked for beyond a search's limit: one tied with the last says the run may go on
KEY_FIELDS = ["document_id", "chunk_index"]
MAX_DEPTH = 100_000
TOLERANCE = 1e-6


def stable_batch(run: Callable[[list[models.QueryRequest]], list[list[models.ScoredPoint]]],
                 requests: list[models.QueryRequest]) -> list[list[models.ScoredPoint]]:
    """Return run(requests) with every list cut to its request's limit and equal scores in a stable order."""
    asked = [_asking(r) for r in requests]
    answers = run(asked)
    for i, (request, more) in enumerate(zip(requests, asked, strict=True)):
        points, tolerance = answers[i], _tolerance(request)
        while request.offset is None and _tie_runs_past(points, _limit(request), more.limit, tolerance):
            more = more.model_copy(update={"limit": more.limit * 4})
            points = run([more])[0]
        answers[i] = points if request.offset else _cut(points, request, tolerance)
    return answers


def _tolerance(request: models.QueryRequest) -> float:
    """Return how far apart two scores of request's answer may be and still tie: 0 for a dense query."""
    query = request.query.nearest if isinstance(request.query, models.NearestQuery) else request.query
    return 0.0 if isinstance(query, list) else TOLERANCE


def _limit(request: models.QueryRequest) -> int:
    return 10 if request.limit is None else request.limit


def _asking(request: models.QueryRequest) -> models.QueryRequest:
    if request.offset:
        return request
    update: dict = {"limit": _limit(request) + MARGIN}
    if not request.with_payload:
        update["with_payload"] = models.PayloadSelectorInclude(include=KEY_FIELDS)
    elif isinstance(request.with_payload, models.PayloadSelectorInclude):
        update["with_payload"] = models.PayloadSelectorInclude(include=[*request.with_payload.include, *KEY_FIELDS])
    return request.model_copy(update=update)


def _tie_runs_past(points: list[models.ScoredPoint], limit: int, asked: int, tolerance: float) -> bool:
    """Return whether the run of equal scores at the cut-off may go on beyond what the engine returned."""
    return (limit < len(points) >= asked and asked < MAX_DEPTH
            and close(points[-1].score, points[limit - 1].score, tolerance))


def _key(point: models.ScoredPoint) -> tuple:
    payload = point.payload or {}
    index = payload.get("chunk_index")
    return str(payload.get("document_id", "")), index if isinstance(index, int) else -1, str(point.id)


def _cut(points: list[models.ScoredPoint], request: models.QueryRequest, tolerance: float
         ) -> list[models.ScoredPoint]:
    ordered = in_order(points, lambda p: p.score, _key, tolerance)[: _limit(request)]
    if not request.with_payload:
        return [p.model_copy(update={"payload": None}) for p in ordered]
    return ordered
