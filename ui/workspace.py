"""What every page works on: the store, the collection and its embedder, as chosen in the sidebar."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from rag.embeddings import Embedder
from rag.evaluation import is_sweep_collection
from rag.reports import SearchOutcome
from rag.retrieval import SearchRequest
from rag.store import CollectionInfo, DocumentInfo, Hit, Store
from ui import errors, nav, resources, settings, state


@dataclass(frozen=True)
class Workspace:
    store: Store
    location: str  # folder path or server URL, for display
    collection: str
    info: CollectionInfo | None  # None: the collection does not exist yet
    collections: tuple[CollectionInfo, ...]
    spec: str  # embedder spec used with this collection
    spec_fixed: bool  # the collection was made by RAG Lab, so its embedder is fixed
    servers: tuple[str, str, str] = ("", "", "")  # Ollama host, OpenAI base URL, OpenAI key (sidebar overrides)

    @property
    def points(self) -> int:
        return self.info.points if self.info else 0

    @property
    def store_empty(self) -> bool:
        return not any(c.points for c in self.collections)

    def embedder(self) -> Embedder:
        """Return the collection's embedder with the prompts it was built with (a new one: the model's own)."""
        return self.embedder_for(self.collection)

    def embedder_for(self, collection: str, prompts: tuple[str, str] | None = None) -> Embedder:
        """Return the embedder that writes to / searches collection: its own model and prompts, when it has them."""
        info = next((c for c in self.collections if c.name == collection), None)
        if info is not None and not info.foreign and info.embedder:
            return resources.embedder(info.embedder, *self.servers, info.prompts)
        return resources.embedder(self.spec_for(collection), *self.servers, prompts)

    def spec_for(self, collection: str) -> str:
        """Return the embedder spec for writing to collection: its own if RAG Lab made it, else the chosen one."""
        info = next((c for c in self.collections if c.name == collection), None)
        if info is not None and not info.foreign and info.embedder:
            return info.embedder
        chosen = state.get(state.EMBEDDER_SPEC) or settings.embedder_spec()
        return settings.embedder_spec() if settings.refused_model_folder(chosen) else chosen

    def documents(self) -> list[DocumentInfo]:
        if self.info is None:
            return []
        return resources.documents(self.store, self.location, self.collection, resources.version())

    def document_chunks(self, document_id: str) -> list[Hit]:
        return resources.document_chunks(self.store, self.location, self.collection, document_id, resources.version())


@dataclass(frozen=True)
class SearchRun:
    """One search as the Search page ran it; the Context page builds its preview from it."""

    query: str
    collection: str
    location: str
    request: SearchRequest  # the controls: mode, fusion, top_k, threshold, documents, TOC (mode and fusion given)
    hits: list[Hit]  # before the threshold
    outcome: SearchOutcome  # after the threshold
    model_id: str
    seconds: float  # the search's time; for a cut, the time of the search whose ranking it cut
    ranking: tuple[Hit, ...] = ()  # the first CANDIDATES of the ranking hits were cut from (top_k <= its length)
    version: int = 0  # the store's change count (ui.resources.version) when it was searched
    rerank: tuple[str, int] = ("", 0)  # (reranker spec, depth) of the ranking; "" when reranking was off
    cut: bool = False  # top_k or the threshold cut an earlier search's ranking again: nothing was searched

    @property
    def top_k(self) -> int:
        return self.request.top_k

    @property
    def threshold(self) -> float | None:
        return self.request.score_threshold

    @property
    def document_ids(self) -> tuple[str, ...]:
        return self.request.document_ids or ()

    @property
    def mode(self) -> str:
        return self.request.searched_mode

    @property
    def fusion(self) -> str:
        return self.request.searched_fusion

    @property
    def include_toc(self) -> bool:
        return self.request.include_toc

    def settings(self) -> tuple[SearchRequest, tuple[str, int]]:
        """Return what the controls set (the query aside): a change of any of them shows another result."""
        return self.request, self.rerank

    def same_ranking(self, query: str, request: SearchRequest, version: int, rerank: tuple[str, int] = ("", 0)
                     ) -> bool:
        """Return whether a search with these settings ranks as this one did, so top_k and the threshold may
        just cut this run's ranking again (a control cuts, never reorders: rag.retrieval.search)."""
        return (query, _ranked(request), version, rerank) == (self.query, _ranked(self.request), self.version,
                                                              self.rerank)


def _ranked(request: SearchRequest) -> SearchRequest:
    """Return the part of a request that orders the ranking: all but the cuts (top_k, threshold)."""
    return request.replace(top_k=1, score_threshold=None)


def current() -> Workspace:
    """Return the workspace the sidebar set up in this run (app.py stops before a page when there is none)."""
    return st.session_state[state.WORKSPACE]


def documents_or_stop(workspace: Workspace, empty_message: str) -> list[DocumentInfo]:
    """Return the collection's documents; when it has none or the store fails, say so and stop the page."""

    if workspace.points == 0:
        st.info(empty_message)
        st.page_link(nav.UPLOAD.path, label="Upload documents", icon=":material/upload_file:")
        st.stop()
    with errors.reported(stop=True):
        return workspace.documents()


def pickable(workspace: Workspace, sweeps: bool = False) -> list[CollectionInfo]:
    """Return the collections a picker offers: not those a sweep made (unless sweeps, or one is the current)."""
    return [c for c in workspace.collections
            if sweeps or not is_sweep_collection(c.name) or c.name == workspace.collection]


def collections_or_stop(workspace: Workspace, nothing_message: str) -> list[str]:
    """Return the names of the pickable collections that hold chunks; when none does, say so and stop the page."""
    names = [c.name for c in pickable(workspace) if c.points]
    if not names:
        st.info(nothing_message)
        st.page_link(nav.UPLOAD.path, label="Upload documents", icon=":material/upload_file:")
        st.stop()
    return names


def last_search(workspace: Workspace) -> SearchRun | None:
    """Return the last search if it was made in this workspace's collection and location."""
    run = state.get(state.SEARCH)
    if run and run.collection == workspace.collection and run.location == workspace.location:
        return run
    return None
