"""The int8 engine of multilingual-e5-small (ONNX Runtime): its vectors and rankings against float32, its cached
model (killed, truncated, overwritten), the fallback without onnxruntime, and collections of either engine."""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.documents.loader import SourceFile
from rag.embeddings import e5, get_embedder
from rag.errors import InvalidSettingsError
from rag.retrieval import SearchRequest
from rag.store.open import open_store

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "rag" / "samples"


def test_spec_forms_name_the_engine_in_the_model_id(monkeypatch: pytest.MonkeyPatch):
    if e5.int8_missing():
        pytest.skip("onnxruntime is not installed")
    assert get_embedder("local").model_id == "local:multilingual-e5-small-int8"
    assert get_embedder("local:int8").model_id == "local:multilingual-e5-small-int8"
    assert get_embedder("local:fp32").model_id == "local:multilingual-e5-small"
    assert get_embedder("local:multilingual-e5-small").model_id == "local:multilingual-e5-small"  # older collections


def test_without_onnxruntime_local_is_float32_with_one_line(monkeypatch: pytest.MonkeyPatch, caplog):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    monkeypatch.setattr(e5, "_NOTES", {})
    with caplog.at_level(logging.WARNING, logger="rag.embeddings.e5"):
        assert get_embedder("local").model_id == "local:multilingual-e5-small"
        assert get_embedder("local").model_id == "local:multilingual-e5-small"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "onnxruntime is not installed" in lines[0] and "float32" in lines[0]


def test_an_int8_engine_that_fails_to_load_embeds_with_float32_and_says_why(monkeypatch: pytest.MonkeyPatch, caplog):
    sentinel = object()
    monkeypatch.setattr(e5, "_ENGINES", {"fp32": sentinel})
    monkeypatch.setattr(e5, "_NOTES", {})

    def broken(*args, **kwargs):
        raise RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Load model failed\nmore")

    monkeypatch.setattr("rag.embeddings.e5_onnx.OnnxE5", broken)
    with caplog.at_level(logging.WARNING, logger="rag.embeddings.e5"):
        assert e5.engine("int8") is sentinel
    embedder = get_embedder("local:int8")
    assert embedder.model_id == "local:multilingual-e5-small-int8"  # it still searches int8 collections
    assert "could not load ([ONNXRuntimeError] : 1 : FAIL : Load model failed)" in embedder.engine_note
    assert len(caplog.records) == 1


@pytest.mark.parametrize(("setting", "seen", "device"), [("", False, "cpu"), ("", True, "cuda"), ("cpu", True, "cpu"),
                                                         ("cuda", True, "cuda"), ("cpu", False, "cpu")])
def test_the_device_is_a_gpu_where_one_is_seen_unless_cpu_is_asked(setting: str, seen: bool, device: str):
    assert e5.choose_device(setting, seen) == device


def test_asking_for_a_gpu_that_is_not_there_is_one_line():
    with pytest.raises(InvalidSettingsError, match="RAG_EMBED_DEVICE=cuda, but no GPU is seen"):
        e5.choose_device("cuda", False)


def test_the_device_setting_is_checked(monkeypatch: pytest.MonkeyPatch):
    from rag import settings

    assert settings.load({"RAG_EMBED_DEVICE": " CUDA "}).embed_device == "cuda"
    with pytest.raises(InvalidSettingsError, match="RAG_EMBED_DEVICE='gpu' is not one of cpu, cuda"):
        settings.load({"RAG_EMBED_DEVICE": "gpu"})


# The real engines below: the int8 model is built once per machine into RAG_MODEL_CACHE (default ~/.cache).


@pytest.fixture(scope="module")
def engines():
    if e5.int8_missing():
        pytest.skip("onnxruntime is not installed")
    return get_embedder("local:int8"), get_embedder("local:fp32")


@pytest.fixture(scope="module")
def sample_texts() -> tuple[list[str], list[str]]:
    from rag.chunking.chunker import chunk_document
    from rag.documents.loader import load_document
    from rag.evaluation.querysets.queries import load_query_set

    chunks = []
    for path in sorted(SAMPLES.iterdir()):
        if path.suffix in (".md", ".txt", ".pdf"):
            chunks += [c.content for c in chunk_document(load_document(path.read_bytes(), path.name), 120, 20)]
    queries = [q.text for q in load_query_set((SAMPLES / "queries.jsonl").read_bytes(), "queries.jsonl")]
    return chunks, queries


@pytest.mark.model
def test_int8_vectors_stay_near_float32_on_real_text(engines, sample_texts):
    int8, fp32 = engines
    chunks, queries = sample_texts
    assert int8.engine == "onnx-int8" and int8.device == "cpu" and not int8.engine_note
    for texts, embed in ((chunks, "embed_documents"), (queries, "embed_query")):
        ours, reference = getattr(int8, embed)(texts), getattr(fp32, embed)(texts)
        assert ours.shape == reference.shape == (len(texts), 384) and ours.dtype == np.float32
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        cosine = (ours * reference).sum(axis=1)
        assert cosine.min() >= 0.98 and np.median(cosine) >= 0.995


@pytest.mark.model
def test_int8_ranks_the_same_top_five_as_float32(engines, sample_texts):
    """The same first hit for every question, and the same top five but for chunks that float32 itself scores within
    0.01 of the sixth (e5's scores of one small corpus crowd together: 0.7767 against 0.7767)."""
    int8, fp32 = engines
    chunks, queries = sample_texts
    assert len(chunks) >= 20 and len(queries) >= 15
    ours = int8.embed_query(queries) @ int8.embed_documents(chunks).T
    reference = fp32.embed_query(queries) @ fp32.embed_documents(chunks).T
    assert ours.argmax(axis=1).tolist() == reference.argmax(axis=1).tolist()
    for mine, theirs in zip(ours, reference, strict=True):
        order = np.argsort(-theirs)
        clear = {int(i) for i in order[:5] if theirs[i] > theirs[order[5]] + 0.01}
        assert clear <= set(np.argsort(-mine)[:5].tolist())
    assert np.abs(ours - reference).max() < 0.02  # every score within 0.02 of float32's


@pytest.mark.model
@pytest.mark.slow
def test_a_damaged_or_half_built_model_is_built_again_with_one_line(engines, tmp_path, monkeypatch, caplog):
    from rag.embeddings import e5_onnx

    built = e5_onnx.recipe_folder()
    assert (built / e5_onnx.MODEL).is_file()  # the fixture's engine built or found it
    monkeypatch.setenv("RAG_MODEL_CACHE", str(tmp_path))
    ours = e5_onnx.recipe_folder()
    killed, building = tmp_path / f".{ours.name}.killed", tmp_path / f".{ours.name}.building"
    for scratch in (killed, building):  # a build killed before it moved its folder into place; one under way
        scratch.mkdir()
        (scratch / e5_onnx.MODEL).write_bytes(b"half")
    os.utime(killed, (time.time() - 3600, time.time() - 3600))
    shutil.copytree(built, ours)
    whole = (ours / e5_onnx.MODEL).read_bytes()
    (ours / e5_onnx.MODEL).write_bytes(whole[: len(whole) // 2])  # truncated
    texts = ["Die Kündigungsfrist beträgt drei Monate.", "Wie lang muss ein Passwort sein?"]
    expected = engines[0].embed_documents(texts)
    with caplog.at_level(logging.WARNING, logger="rag.embeddings.e5_onnx"):
        engine = e5_onnx.OnnxE5(1, tokenizer=e5.tokenizer())
    said = [r.getMessage() for r in caplog.records]
    assert len([s for s in said if "is damaged" in s]) == 1 and "does not match its SHA-256" in said[0]
    assert np.allclose(engine.encode(texts), expected, atol=1e-4)
    assert sorted(p.name for p in tmp_path.iterdir()) == [building.name, ours.name]  # the killed build's is gone
    (ours / e5_onnx.MODEL).write_bytes(b"\0" * 1000)  # overwritten, digest and all
    (ours / e5_onnx.DIGEST).write_text("0" * 64)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rag.embeddings.e5_onnx"):
        again = e5_onnx.OnnxE5(1, tokenizer=e5.tokenizer())
    assert any("is damaged" in r.getMessage() for r in caplog.records)
    assert np.allclose(again.encode(texts), expected, atol=1e-4)


HIDE_ONNXRUNTIME = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("onnxruntime", "onnx"):
            raise ModuleNotFoundError(name)
        return None
sys.meta_path.insert(0, Hide())
import importlib.util
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.split(".")[0] in ("onnxruntime", "onnx") else real(name, *a)
from rag import pipeline
from rag.store.open import open_store
store = open_store(path=sys.argv[1])
embedder = pipeline.embedder_for(store, "documents")
hits = pipeline.search(sys.argv[2], "documents", top_k=3, store=store, embedder=embedder, mode="dense")
print(embedder.model_id)
print(embedder.engine_note or "-")
print(hits[0].chunk_id)
"""


@pytest.mark.model
@pytest.mark.slow
def test_a_collection_of_one_engine_searched_from_a_process_with_the_other(engines, tmp_path):
    folder = tmp_path / "qdrant"
    store = open_store(path=str(folder))
    files = [SourceFile(p.name, path=p) for p in sorted(SAMPLES.glob("*.md"))]
    question = "Wie lang muss ein Passwort mindestens sein?"
    for collection, spec in (("documents", "local"), ("reference", "local:fp32")):
        results = pipeline.ingest(files, collection, ChunkSettings(120, 20), get_embedder(spec), store=store)
        assert all(r.ok for r in results)
    assert pipeline.embedder_for(store, "documents").model_id == "local:multilingual-e5-small-int8"
    assert pipeline.embedder_for(store, "reference").model_id == "local:multilingual-e5-small"  # fp32 queries
    top = pipeline.search(question, "documents", SearchRequest(top_k=3, mode="dense"), store=store,
                          embedder=engines[0])[0]
    store.close()
    done = subprocess.run([sys.executable, "-c", HIDE_ONNXRUNTIME, str(folder), question], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    model_id, note, first = done.stdout.strip().splitlines()[-3:]
    assert model_id == "local:multilingual-e5-small-int8"
    assert "could not load" in note and "float32" in note
    assert first == top.chunk_id


def test_engine_facts_name_the_engine_and_device_without_loading_one(monkeypatch: pytest.MonkeyPatch):
    from rag.embeddings import engine_facts

    class Loaded:
        name, device = "onnx-int8", "cpu"

    monkeypatch.setattr(e5, "_ENGINES", {})
    monkeypatch.setattr(e5, "_NOTES", {})
    embedder = get_embedder("local:int8")
    assert engine_facts(embedder, load=False) == {} and e5._ENGINES == {}  # the sidebar never waits for a model
    monkeypatch.setattr(e5, "_ENGINES", {"int8": Loaded()})
    assert engine_facts(embedder, load=False) == {"engine": "onnx-int8", "device": "cpu"}
    monkeypatch.setattr(e5, "_NOTES", {"int8": "The int8 engine could not load (x); ..."})
    assert engine_facts(embedder)["engine_note"].startswith("The int8 engine could not load")
    assert engine_facts(get_embedder("fake")) == {}
