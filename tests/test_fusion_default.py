"""One default fusion: every public function of rag (and ui) that takes a fusion defaults to DEFAULT_FUSION (or None,
"the default"), and an evaluation without a fusion ranks as rag.search does without one."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import rag
import ui
from rag import pipeline
from rag.chunking import ChunkSettings
from rag.documents.samples import BUNDLED, sample_files
from rag.embeddings import get_embedder
from rag.evaluation import evaluate_collection, load_query_set
from rag.retrieval import SearchRequest
from rag.store import DEFAULT_FUSION, open_store


def fusion_defaults() -> dict[str, object]:
    """Return {qualified name: default} of every parameter named fusion with a default, in every module of rag
    and ui: functions, classes (their constructors, e.g. a dataclass field) and methods."""
    found: dict[str, object] = {}
    for package in (rag, ui):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if getattr(value, "__module__", None) != module.__name__:
                    continue
                members = [value, *(m for m in vars(value).values() if inspect.isfunction(m))] \
                    if inspect.isclass(value) else [value] if inspect.isfunction(value) else []
                for member in members:
                    try:
                        parameters = inspect.signature(member).parameters
                    except (TypeError, ValueError):
                        continue
                    if "fusion" in parameters and parameters["fusion"].default is not inspect.Parameter.empty:
                        found[f"{module.__name__}.{member.__qualname__}"] = parameters["fusion"].default
    return found


def test_every_fusion_parameter_defaults_to_the_one_constant():
    defaults = fusion_defaults()
    walked = {"rag.evaluation.sweeps.sweep.evaluate_collection", "rag.evaluation.metrics.modes.SearchMode",
              "rag.evaluation.metrics.modes.parse_mode", "rag.evaluation.metrics.modes.parse_modes",
              "rag.evaluation.comparisons.compare.parse_side", "rag.retrieval.search.check_mode",
              "rag.retrieval.request.SearchRequest"}
    assert walked <= set(defaults), walked - set(defaults)  # the walk reached them
    other = {name: default for name, default in defaults.items() if default not in (DEFAULT_FUSION, None)}
    assert not other, f"fusion defaults other than DEFAULT_FUSION ({DEFAULT_FUSION!r}): {other}"


@pytest.fixture(scope="module")
def samples():
    store, embedder = open_store(":memory:"), get_embedder("fake:64")
    pipeline.ingest(sample_files(BUNDLED), "samples", ChunkSettings(120, 0), embedder, store=store)
    queries = load_query_set((BUNDLED / "queries.jsonl").read_bytes(), "queries.jsonl")
    return store, embedder, queries


def test_an_evaluation_without_a_fusion_ranks_as_rag_search_does(samples):
    store, embedder, queries = samples
    for saved in (None, "rrf"):  # rag.search takes a collection's saved fusion, else DEFAULT_FUSION
        store.save_collection_setting("samples", "fusion", saved)
        evaluation = evaluate_collection(queries, "samples", embedder, SearchRequest(mode="hybrid"), store=store,
                                         ks=(10,))
        for outcome in evaluation.per_query:
            hits = rag.search(outcome.query.text, "samples", SearchRequest(top_k=10, mode="hybrid"), store=store,
                              embedder=embedder)
            assert [(h.chunk_id, h.score_kind) for h in outcome.hits] == [(h.chunk_id, h.score_kind) for h in hits]
        assert {h.score_kind for o in evaluation.per_query for h in o.hits} == {saved or DEFAULT_FUSION}
