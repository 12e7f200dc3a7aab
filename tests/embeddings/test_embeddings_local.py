"""The real local model (all-MiniLM-L6-v2, bundled): loaded once per test session, offline."""

from __future__ import annotations

import numpy as np
import pytest

from rag.embeddings import Embedder, LocalEmbedder, get_embedder
from rag.embeddings.local import load_model
from rag.errors import EmbeddingError

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    embedder = get_embedder("local:all-MiniLM-L6-v2")
    assert isinstance(embedder, LocalEmbedder)
    return embedder


def test_vectors_are_384_normalised_float32(local: LocalEmbedder) -> None:
    matrix = local.embed_documents(["Der Vertrag wurde gekündigt.", "Ein zweiter Satz.", ""])
    assert local.dimension == 384 and matrix.shape == (3, 384) and matrix.dtype == np.float32
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert local.embed_documents([]).shape == (0, 384)
    assert isinstance(local, Embedder)


def test_german_paraphrase_scores_higher_than_an_unrelated_sentence(local: LocalEmbedder) -> None:
    contract, paraphrase, unrelated = local.embed_documents(
        [
            "Der Vertrag wurde gekündigt.",
            "Die Kündigung des Vertrags erfolgte.",
            "Im Sommer blühen die Rosen im Garten.",
        ]
    )
    assert contract @ paraphrase > contract @ unrelated


def test_tokens_are_counted_in_wordpieces_with_special_tokens(local: LocalEmbedder) -> None:
    assert local.max_input_tokens == 256 and local.tokens_exact
    assert local.count_tokens("") == 2  # [CLS] and [SEP]
    long_text = "Die Kündigungsfrist beträgt drei Monate zum Quartalsende. " * 40
    assert local.count_tokens(long_text) > 256
    # a text that does not fit is truncated: its vector equals that of its first 256 tokens
    ids = local.model.tokenizer(long_text, add_special_tokens=False)["input_ids"][:254]
    head = local.model.tokenizer.decode(ids)
    assert local.count_tokens(head) <= 256
    assert float(local.embed_documents([long_text])[0] @ local.embed_documents([head])[0]) > 0.99


def test_the_model_is_loaded_once_per_process(local: LocalEmbedder) -> None:
    again = get_embedder("local:all-MiniLM-L6-v2")
    assert again.model is local.model
    assert LocalEmbedder(local.path).model is local.model is load_model(local.path)
    assert LocalEmbedder(local.path).model_id == "local:all-MiniLM-L6-v2"


def test_a_folder_without_a_model_is_a_clear_error(tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(EmbeddingError, match="Could not load a sentence-transformers model"):
        LocalEmbedder(tmp_path).embed_documents(["a"])
