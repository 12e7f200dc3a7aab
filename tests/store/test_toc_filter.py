"""Tables of contents are left out of searches unless asked for, and the filter that does it is only sent where
a collection holds one (the engine checks it on every point it compares)."""

from __future__ import annotations

from rag.chunking.chunker import TOC, Chunk, ChunkSettings
from rag.documents.model import Document, Page
from rag.retrieval import SearchRequest
from rag.store.open import open_store
from tests.conftest import fake_embedder

TEXTS = ["Inhalt: Kündigungsfrist 3, Kündigungsfrist 7, Kündigungsfrist 9", "Die Kündigungsfrist beträgt drei Monate.",
         "Urlaub wird schriftlich beantragt."]


def store_with(flags: list[tuple[str, ...]]):
    store, embedder = open_store(":memory:"), fake_embedder()
    text = "\n\n".join(TEXTS)
    document = Document(id="vertrag", title="vertrag.md", kind="markdown", pages=(Page(1, text),), text=text)
    chunks, start = [], 0
    for index, (content, flag) in enumerate(zip(TEXTS, flags, strict=True)):
        chunks.append(Chunk("vertrag", index, content, len(content.split()), (), None, None, start,
                            start + len(content), flag))
        start += len(content) + 2
    vectors = embedder.embed_documents(TEXTS)
    store.upsert_document("c", document, chunks, vectors, ChunkSettings(100, 0, "tokens"), embedder)
    return store, embedder


def found(store, embedder, include_toc: bool = False) -> list[int]:
    query = "Kündigungsfrist Kündigungsfrist"
    hits = store.search("c", embedder.embed_query([query])[0], embedder,
                        SearchRequest(top_k=3, mode="hybrid", include_toc=include_toc), query_text=query)
    return [h.chunk_index for h in hits]


def test_a_table_of_contents_is_left_out_unless_asked_for():
    store, embedder = store_with([(TOC,), (), ()])
    assert 0 not in found(store, embedder) and 1 in found(store, embedder)
    assert 0 in found(store, embedder, include_toc=True)
    layout = store._layout("c")
    assert store.search_filter(layout, None).must_not  # the collection holds one: the condition is sent


def test_without_a_table_of_contents_no_condition_is_sent():
    store, embedder = store_with([(), (), ()])
    assert store.search_filter(store._layout("c"), None) is None
    assert found(store, embedder, include_toc=True) == found(store, embedder)


def test_the_check_is_one_engine_count_until_the_next_write(monkeypatch):
    """Every search asks whether the collection holds a table of contents; on a busy CPU each engine call waits for
    the engine's search thread (issue 30), so the answer is remembered until this process writes again."""
    from rag.store.edge import api

    store, embedder = store_with([(), (), ()])
    counted = []
    real = api.count
    monkeypatch.setattr(api, "count", lambda shard, flt: counted.append(flt) or real(shard, flt))
    for _ in range(3):
        found(store, embedder)
    assert len(counted) == 1
    text = TEXTS[0]  # a second document with a table of contents: the remembered "none" must not survive it
    document = Document(id="anhang", title="anhang.md", kind="markdown", pages=(Page(1, text),), text=text)
    chunk = Chunk("anhang", 0, text, len(text.split()), (), None, None, 0, len(text), (TOC,))
    store.upsert_document("c", document, [chunk], embedder.embed_documents([text]), ChunkSettings(100, 0, "tokens"),
                          embedder)
    assert store.search_filter(store._layout("c"), None).must_not
    assert found(store, embedder).count(0) == 1  # vertrag's chunk 0 (no flag) only, anhang's left out
