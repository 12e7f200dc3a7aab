"""Equal scores in a stable order (rag.store.edge.ties): keyword scores that differ in their last float32 digit tie,
dense scores tie only when equal, and a run of ties at the cut-off is fetched whole."""

from __future__ import annotations

from qdrant_client import models

from rag.store.edge.ties import stable_batch


def point(pid: int, score: float, document: str, index: int) -> models.ScoredPoint:
    return models.ScoredPoint(id=pid, version=0, score=score, payload={"document_id": document, "chunk_index": index})


class Engine:
    """Answers every request with the first `limit` of a fixed list (as the engine's heap would), recording limits."""

    def __init__(self, points: list[models.ScoredPoint]):
        self.points, self.limits = points, []

    def __call__(self, requests: list[models.QueryRequest]) -> list[list[models.ScoredPoint]]:
        self.limits += [r.limit for r in requests]
        return [self.points[: r.limit] for r in requests]


def keys(points: list[models.ScoredPoint]) -> list[tuple[str, int]]:
    return [(p.payload["document_id"], p.payload["chunk_index"]) for p in points]


def test_keyword_scores_a_float32_digit_apart_tie_and_are_ordered_by_document_and_chunk():
    engine = Engine([point(1, 8.7100005, "b", 0), point(2, 8.71, "a", 3), point(3, 5.0, "a", 0)])
    keyword = models.QueryRequest(query=models.SparseVector(indices=[1], values=[1.0]), using="bm25", limit=2,
                                  with_payload=True)
    (found,) = stable_batch(engine, [keyword])
    assert keys(found) == [("a", 3), ("b", 0)]
    assert found[0].score == 8.71  # scores stay as the engine gave them


def test_dense_scores_a_hair_apart_keep_their_order():
    # near neighbours of real vectors lie closer than the keyword tolerance: reordering them loses recall
    engine = Engine([point(1, 0.9990004, "b", 0), point(2, 0.9990001, "a", 3), point(3, 0.5, "a", 0)])
    dense = models.QueryRequest(query=[0.1, 0.2], using="v", limit=1, with_payload=True)
    (found,) = stable_batch(engine, [dense])
    assert keys(found) == [("b", 0)]
    exact_tie = Engine([point(1, 0.75, "b", 0), point(2, 0.75, "a", 3)])
    assert keys(stable_batch(exact_tie, [dense.model_copy(update={"limit": 1})])[0]) == [("a", 3)]


def test_a_tie_run_past_what_came_back_is_fetched_whole_so_every_top_k_is_a_prefix():
    tied = [point(i, 2.0, f"d{99 - i:02d}", 0) for i in range(60)]  # the engine's order is the reverse of the key's
    engine = Engine([point(100, 3.0, "z", 0), *tied])
    keyword = models.QueryRequest(query=models.SparseVector(indices=[1], values=[1.0]), using="bm25",
                                  with_payload=False)
    tops = {k: stable_batch(engine, [keyword.model_copy(update={"limit": k})])[0] for k in (3, 10)}
    assert len(engine.limits) > 2  # the run at the cut-off reached past the margin: asked again, deeper
    assert [p.id for p in tops[10][:3]] == [p.id for p in tops[3]]
    assert keys([p.model_copy(update={"payload": {"document_id": f"d{99 - p.id:02d}", "chunk_index": 0}})
                 for p in tops[3][1:]]) == [("d40", 0), ("d41", 0)]  # the lowest keys of all 60, not of the first 19
    assert all(p.payload is None for p in tops[10])  # without payload asked, none is returned
