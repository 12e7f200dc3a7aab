"""Contextual chunk headers: the header reaches the embedder and BM25, never the stored content or the context;
the collection records the setting and later ingests and sweeps keep it; an older collection works as before."""

from __future__ import annotations

import json

import pytest

from rag import pipeline
from rag.chunking import headers
from rag.chunking.chunker import ChunkSettings
from rag.documents.loader import SourceFile
from rag.embeddings.fake import FakeEmbedder
from rag.errors import InvalidSettingsError
from rag.evaluation.querysets.queries import load_query_set
from rag.evaluation.sweeps.sweep import Sweep, grid, load_documents, run_sweep
from rag.retrieval import SearchRequest
from rag.store.client import META_KEY
from tests.conftest import run

# "Zebrafinken" is in the file name only: BM25 finds it through the header alone
GUIDE = ("# Haltung\n\nZebrafinken leben gern in Gruppen.\n\n## Futter\n\n"
         + " ".join(f"Die Vögel fressen Hirse und Keimfutter, Sorte {i}." for i in range(40))
         + "\n\n## Wasser\n\nFrisches Wasser gibt es jeden Morgen in einer flachen Schale.\n")
FILE = SourceFile("Ziervogel-Ratgeber.md", GUIDE.replace("Zebrafinken", "Die Tiere").encode())


class RecordingEmbedder(FakeEmbedder):
    """The test embedder that remembers every document text it was given."""

    def __init__(self):
        super().__init__(32)
        self.seen: list[str] = []

    def embed_documents(self, texts):
        self.seen.extend(texts)
        return super().embed_documents(texts)


def test_header_is_title_without_extension_then_heading_path():
    assert headers.header("R-FAQ.pdf", ()) == "R-FAQ"
    assert headers.header("fhs-3.0.txt", ("Introduction", "Purpose")) == "fhs-3.0\nIntroduction > Purpose"
    assert headers.header("Guide.md", ("Guide", "Install")) == "Guide\nInstall"  # the title is not said twice
    assert headers.indexed_text("body", "Southern California.txt", (), True) == "Southern California\n\nbody"
    assert headers.indexed_text("body", "Southern California.txt", ("A",), False) == "body"
    assert headers.parse_chunk_headers(" ON ") is True and headers.parse_chunk_headers("off") is False
    with pytest.raises(InvalidSettingsError):
        headers.parse_chunk_headers("yes")


def test_header_reaches_the_embedder_and_bm25_but_not_the_content(store):
    embedder = RecordingEmbedder()
    [result] = pipeline.ingest([FILE], "headed", ChunkSettings(60, 0), embedder, store=store, chunk_headers=True)
    assert result.ok and result.chunks >= 3
    chunks = store.document_chunks("headed", result.document_id)
    expected = [headers.indexed_text(c.content, c.document_title, c.heading_path, True) for c in chunks]
    assert sorted(embedder.seen) == sorted(expected)
    assert any("Haltung > Futter" in text for text in embedder.seen)
    assert all(text.startswith("Ziervogel-Ratgeber\n") for text in embedder.seen)
    text = FILE.data.decode()
    for chunk in chunks:  # stored content is the chunk text, at its offsets, without the header
        assert chunk.content == text[chunk.start:chunk.end] and "Ziervogel" not in chunk.content
    context = pipeline.retrieve("Ziervogel Ratgeber Hirse", "headed", SearchRequest(mode="sparse"), store=store,
                                embedder=embedder)
    assert context.text and "Ziervogel-Ratgeber\n" not in context.text.replace("'Ziervogel-Ratgeber.md'", "")
    # a word only in the title: every chunk matches it through its header
    found = pipeline.search("Ratgeber", "headed", SearchRequest(top_k=50, mode="sparse"), store=store)
    assert len(found) == result.chunks


def test_without_headers_the_title_is_not_indexed(store):
    embedder = RecordingEmbedder()
    [result] = pipeline.ingest([FILE], "plain", ChunkSettings(60, 0), embedder, store=store, chunk_headers=False)
    assert sorted(embedder.seen) == sorted(c.content for c in store.document_chunks("plain", result.document_id))
    assert pipeline.search("Ratgeber", "plain", SearchRequest(top_k=50, mode="sparse"), store=store) == []
    assert store.collection_meta("plain")[headers.META_KEY] is False


def test_the_setting_is_recorded_and_later_ingests_keep_it(store):
    embedder = RecordingEmbedder()
    pipeline.ingest([FILE], "headed", ChunkSettings(60, 0), embedder, store=store, chunk_headers=True)
    assert store.collection_meta("headed")[headers.META_KEY] is True
    assert [c.chunk_headers for c in store.collections()] == [True]
    embedder.seen.clear()
    other = SourceFile("Wellensittiche.md", b"# Pflege\n\nWellensittiche brauchen viel Platz zum Fliegen.\n")
    [result] = pipeline.ingest([other], "headed", ChunkSettings(60, 0), embedder, store=store)  # setting left out
    assert result.ok and embedder.seen == ["Wellensittiche\nPflege\n\n# Pflege\n\nWellensittiche brauchen viel "
                                           "Platz zum Fliegen."]
    found = pipeline.search("Wellensittiche", "headed", SearchRequest(mode="sparse"), store=store)
    assert found[0].document_title == other.name
    with pytest.raises(InvalidSettingsError, match="chunk headers on"):
        pipeline.ingest([other], "headed", ChunkSettings(60, 0), embedder, store=store, chunk_headers=False)


def test_a_collection_without_the_record_is_indexed_as_before(store):
    embedder = RecordingEmbedder()
    pipeline.ingest([FILE], "old", ChunkSettings(60, 0), embedder, store=store)
    meta = store.client.get_collection("old").config.metadata  # as collections made before the setting
    meta[META_KEY] = {k: v for k, v in meta[META_KEY].items() if k != headers.META_KEY}
    store.client.update_collection("old", metadata=meta)
    assert headers.META_KEY not in store.collection_meta("old") and store.chunk_headers("old") is False
    embedder.seen.clear()
    other = SourceFile("Kanarien.md", b"Kanarienvogel singen am Morgen.\n")
    [result] = pipeline.ingest([other], "old", ChunkSettings(60, 0), embedder, store=store)
    assert result.ok and embedder.seen == ["Kanarienvogel singen am Morgen."]
    assert pipeline.search("Ratgeber", "old", SearchRequest(mode="sparse"), store=store) == []
    with pytest.raises(InvalidSettingsError, match="chunk headers off"):
        store.check_writable("old", embedder, chunk_headers=True)


def test_sweep_compares_headers_off_and_on_in_two_collections(store):
    embedder = RecordingEmbedder()
    configs, _ = grid([60], [0], chunk_headers=[False, True])
    assert [c.short for c in configs] == ["60/0", "60/0 +headers"]
    queries = load_query_set(json.dumps({"query": "Ziervogel Ratgeber", "document": FILE.name}), "q.jsonl")
    result = run_sweep(Sweep(load_documents([FILE]), queries, configs, modes=["sparse"]), embedder, store=store)
    off, on = result.results
    assert off.collection != on.collection and "-hdr-" in on.collection
    assert store.chunk_headers(on.collection) is True and store.chunk_headers(off.collection) is False
    assert on.to_json()["chunk_headers"] is True
    assert off.metrics["hit@10"] == 0.0 and on.metrics["hit@10"] == 1.0  # only the header holds "Ratgeber"
    assert any(t.startswith("Ziervogel-Ratgeber\nHaltung > Futter\n\n") for t in embedder.seen)


def test_cli_ingest_and_collections_show_the_setting(tmp_path, capsys):
    doc = tmp_path / FILE.name
    doc.write_bytes(FILE.data)
    path = str(tmp_path / "qdrant")
    code, _, err = run(capsys, "ingest", str(doc), "--collection", "h", "--chunk-headers", "on", "--embedder",
                       "fake:16", "--store", path)
    assert code == 0, err
    code, out, _ = run(capsys, "collections", "--json", "--store", path)
    assert json.loads(out)[0]["chunk_headers"] is True
    code, _, err = run(capsys, "ingest", str(doc), "--collection", "h", "--chunk-headers", "off", "--store", path)
    assert code != 0 and "chunk headers on" in err


def test_cli_sweep_takes_chunk_headers_as_a_dimension(tmp_path, capsys):
    doc, queries = tmp_path / FILE.name, tmp_path / "q.jsonl"
    doc.write_bytes(FILE.data)
    queries.write_text(json.dumps({"query": "Ziervogel Ratgeber", "document": FILE.name}) + "\n")
    code, out, err = run(capsys, "sweep", str(doc), "--queries", str(queries), "--chunk-size", "60", "--overlap", "0",
                         "--mode", "sparse", "--chunk-headers", "off,on", "--embedder", "fake:16", "--no-cache",
                         "--store", str(tmp_path / "qdrant"), "--json")
    assert code == 0, err
    rows = json.loads(out)["configs"]
    assert [(r["chunk_headers"], r["metrics"]["hit@10"]) for r in rows] == [(False, 0.0), (True, 1.0)]
    try:
        run(capsys, "sweep", str(doc), "--queries", str(queries), "--chunk-headers", "maybe")
    except SystemExit as stop:
        assert stop.code == 2 and "must be 'on' or 'off'" in capsys.readouterr().err
    else:
        raise AssertionError("--chunk-headers maybe was accepted")
