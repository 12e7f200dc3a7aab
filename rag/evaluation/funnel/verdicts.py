"""One chunk's way through a search in words: why a ranked stage does not hold it, and where it was lost, said from
the stages shown beside it (the Search page's "why not this one?" and `rag search --explain` say the same).

lost_at is rag.evaluation.funnel.stages' (the funnels of `rag eval` and the sweeps count by the same rule); these
words only tell it with the chunk's own ranks: "in neither list's top 4: the keyword list does not hold it (no
query word matches it), and the dense list ranked it #21 of 21".
"""

from __future__ import annotations

from rag.chunking import TOC
from rag.evaluation.funnel.rankings import Placed
from rag.evaluation.funnel.stages import Explanation
from rag.retrieval import CANDIDATES


def absent_note(explanation: Explanation, stage: str) -> str:
    """Return why a ranked stage does not hold the chunk ("no reranker", "no query word matches it", ...)."""
    if stage == "reranked":
        return "not in this ranking" if explanation.reranked else "no reranker"
    if stage not in ("dense", "keyword"):
        return "not in this ranking"
    if TOC in (explanation.stages.chunk.payload.get("flags") or ()):
        return "a table of contents: left out of searches"
    if stage == "keyword" and explanation.matched is None:
        return "the collection has no keyword vectors"
    if stage == "keyword" and not explanation.matched:
        return "no query word matches it"  # BM25 scores only the chunks that hold a query word
    return f"not among the {CANDIDATES} candidates"


def _list_words(explanation: Explanation, stage: str) -> str:
    """Return where one candidate list has the chunk: "the dense list ranked it #21 of 21", or why it has not."""
    place: Placed | None = getattr(explanation.stages, stage)
    if place is None:
        return f"the {stage} list does not hold it ({absent_note(explanation, stage)})"
    size = explanation.listed.get(stage)
    of = f" of {size}" if size is not None and size < CANDIDATES else ""
    return f"the {stage} list ranked it #{place.rank}{of}"


def _rank(place: Placed | None, what: str) -> str:
    return f"#{place.rank} in {what}" if place is not None else f"not in {what}"


def verdict(explanation: Explanation) -> str:
    """Return where the chunk was lost (or that it was found), in terms of the stages shown beside it."""
    stages, k, lost = explanation.stages, explanation.k, explanation.lost_at
    if lost is None:
        return f"Found: it is in the context of the top {k}."
    if lost == "context":
        return f"Lost at context: in the top {k}, but not in the context built from it ({stages.context})."
    if lost == "reranked":
        return (f"Lost at reranked: in the top {k} before reranking, "
                f"{_rank(stages.reranked, 'the reranked order')} after it.")
    if lost == "fused":
        lists = [_list_words(explanation, s) for s in ("dense", "keyword")
                 if getattr(stages, s) is not None and getattr(stages, s).rank <= k]
        fused = _rank(stages.fused, "the fused ranking")
        return f"Lost at fused: {' and '.join(lists)}, in the top {k}, but it is {fused}."
    if explanation.mode.startswith("hybrid"):
        first = "keyword" if lost == "keyword" else "dense"
        other = "dense" if first == "keyword" else "keyword"
        words = (f"in neither list's top {k}: {_list_words(explanation, first)}, and "
                 f"{_list_words(explanation, other)}")
    else:
        place = stages.keyword if lost == "keyword" else stages.dense
        words = _list_words(explanation, "keyword" if lost == "keyword" else "dense")
        words += f", below the top {k}" if place is not None else ""
    if lost == "read_whole":
        words += "; and the model cut the chunk off: it never read all of it"
    return f"Lost at {lost}: {words}."
