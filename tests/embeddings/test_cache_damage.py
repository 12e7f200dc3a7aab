"""The embedding cache only saves time, so nothing in it is trusted (rag.embeddings.cache): a damaged or foreign file is
set aside and rebuilt with one line saying so, a cached vector that cannot stand for its text is a miss (embedded
again and overwritten), and an embedder's NaN or all-zero vector is refused in one line naming the model."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from rag import pipeline
from rag.chunking import ChunkSettings
from rag.documents.loader import SourceFile
from rag.embeddings.cache import EmbeddingCache, cache_model, text_digest
from rag.errors import EmbeddingError
from rag.ingested import IngestOptions
from rag.store.open import open_store
from tests.conftest import fake_embedder, run

TEXTS = [f"Absatz {i}: Die Kündigungsfrist des Vertrags beträgt drei Monate zum Monatsende." for i in range(600)]
DOCUMENT = "# Vertrag\n\n" + "\n\n".join(TEXTS[:40]) + "\n"


def filled(folder: Path) -> Path:
    """Fill a cache file in folder with TEXTS (fake:16, as documents); return the file."""
    EmbeddingCache(folder).embed(TEXTS, fake_embedder())
    return folder / "embeddings.sqlite"


def truncated(path: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)


def overwritten(path: Path) -> None:
    path.write_bytes(b"%PDF-1.7 not a cache at all\n" * 4000)


def foreign(path: Path) -> None:
    """Replace the file by another program's SQLite database with a table of the same name."""
    path.unlink()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE vectors (id INTEGER PRIMARY KEY, embedding TEXT)")
        db.execute("INSERT INTO vectors (embedding) VALUES ('[1, 2, 3]')")


@pytest.mark.parametrize("damage", [truncated, overwritten, foreign])
def test_a_damaged_cache_is_set_aside_and_rebuilt_and_the_ingest_goes_on(tmp_path: Path, damage) -> None:
    folder = tmp_path / "cache"
    damage(filled(folder))
    store = open_store(":memory:")
    try:
        (result,) = pipeline.ingest([SourceFile("vertrag.md", DOCUMENT.encode())], "c", ChunkSettings(40, 0),
                                    fake_embedder(), store=store, options=IngestOptions(cache=EmbeddingCache(folder)))
        assert result.ok and result.chunks > 0, result.error
        (aside,) = folder.glob("embeddings.sqlite.damaged-*")
        (note,) = result.notes
        assert note.startswith(f"The embedding cache {folder / 'embeddings.sqlite'} was damaged (")
        assert f"it was set aside as {aside.name} and a new one is built" in note and "\n" not in note
    finally:
        store.close()
    EmbeddingCache(folder).embed(TEXTS[:3], fake_embedder())
    again = EmbeddingCache(folder)  # the new file is a working cache
    again.embed(TEXTS[:3], fake_embedder())
    assert (again.hits, again.notices) == (3, []) and len(list(folder.glob("embeddings.sqlite.damaged-*"))) == 1


def test_the_cli_ingest_says_in_one_note_that_the_cache_was_set_aside(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("RAG_EMBEDDING_CACHE", str(tmp_path / "cache"))
    overwritten(filled(tmp_path / "cache"))
    document = tmp_path / "vertrag.md"
    document.write_text(DOCUMENT, encoding="utf-8")
    code, out, err = run(capsys, "ingest", str(document), "--store", str(tmp_path / "qdrant"), "--collection", "c",
                         "--embedder", "fake")
    assert code == 0, err
    notes = [line for line in out.splitlines() if line.startswith("note: vertrag.md: The embedding cache")]
    assert len(notes) == 1 and "was damaged (file is not a database); it was set aside" in notes[0], out


def stored_rows(folder: Path, rows: dict[str, bytes]) -> None:
    """Put raw vector bytes under texts (fake:16, as documents) into the cache file in folder, as a bug or another
    version of a model could have left them."""
    model = cache_model(fake_embedder(), False)
    with sqlite3.connect(folder / "embeddings.sqlite") as db:
        db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                       [(model, text_digest(t), len(v) // 4, v) for t, v in rows.items()])


def test_an_unusable_cached_vector_is_a_miss_embedded_again_and_overwritten(tmp_path: Path) -> None:
    embedder, texts = fake_embedder(), TEXTS[:5]
    EmbeddingCache(tmp_path).embed(texts, embedder)
    bad = {texts[0]: np.ones(8, dtype=np.float32).tobytes(),  # another model's length
           texts[1]: np.full(16, np.nan, dtype=np.float32).tobytes(),
           texts[2]: np.zeros(16, dtype=np.float32).tobytes(),
           texts[3]: b""}
    stored_rows(tmp_path, bad)
    cache = EmbeddingCache(tmp_path)
    vectors = cache.embed(texts, embedder)
    assert np.array_equal(vectors, embedder.embed_documents(texts))
    assert (cache.hits, cache.misses) == (1, 4)
    again = EmbeddingCache(tmp_path)  # overwritten with the good ones
    assert np.array_equal(again.embed(texts, embedder), vectors) and (again.hits, again.misses) == (5, 0)


class Broken:
    """An embedder that returns a NaN vector for texts holding 'NaN' and zeros for texts holding 'null'."""

    def __init__(self) -> None:
        self.inner = fake_embedder()
        self.model_id, self.query_prompt, self.document_prompt = "ollama:kaputt", "", ""
        self.dimension = self.inner.dimension

    def embed_documents(self, texts):
        vectors = np.array(self.inner.embed_documents(texts))
        for i, text in enumerate(texts):
            vectors[i] = np.nan if "NaN" in text else 0.0 if "null" in text else vectors[i]
        return vectors

    embed_query = embed_documents


@pytest.mark.parametrize(("marker", "what"), [("NaN", "a vector with NaN or infinity"), ("null", "an all-zero vector")])
def test_an_embedders_nan_or_zero_vector_is_refused_naming_the_model_and_nothing_is_stored(tmp_path: Path, marker,
                                                                                           what) -> None:
    cache, texts = EmbeddingCache(tmp_path), ["Ein guter Satz.", f"Ein Satz mit {marker} darin."]
    with pytest.raises(EmbeddingError) as refused:
        cache.embed(texts, Broken())
    assert str(refused.value).startswith(f"The embedding model 'ollama:kaputt' returned {what} for the chunk "
                                         f"'Ein Satz mit {marker} darin.'; nothing of it was stored.")
    assert "\n" not in str(refused.value)
    model = cache_model(Broken(), False)
    with sqlite3.connect(tmp_path / "embeddings.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM vectors WHERE model = ?", [model]).fetchone() == (0,)
