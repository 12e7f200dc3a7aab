"""The fake embedder: deterministic, normalised, and texts sharing words are closer than unrelated ones."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rag.embeddings import FakeEmbedder


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_fake_vectors_relate_texts_that_share_words() -> None:
    fake = FakeEmbedder()
    a, b, c = fake.embed_documents(
        ["Der Vertrag wurde gekündigt.", "Die Kündigung des Vertrags erfolgte.", "Heute scheint die Sonne."]
    )
    assert cosine(a, b) > cosine(a, c)
    assert fake.count_tokens("Die Kündigung, bitte! Grüße") == 4
    assert fake.max_input_tokens >= 100_000 and fake.tokens_exact


@given(st.lists(st.text(max_size=60), min_size=1, max_size=5))
def test_fake_is_deterministic_normalised_and_batch_independent(texts: list[str]) -> None:
    fake = FakeEmbedder(32)
    matrix = fake.embed_documents(texts)
    assert matrix.shape == (len(texts), 32) and matrix.dtype == np.float32
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(matrix, fake.embed_documents(texts))
    assert np.array_equal(matrix[-1], fake.embed_documents([texts[-1]])[0])


def test_fake_vectors_are_the_same_in_another_process() -> None:
    code = ("from rag.embeddings import FakeEmbedder; "
            "print(FakeEmbedder(8).embed_documents(['Grüße aus Köln']).tolist())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == FakeEmbedder(8).embed_documents(["Grüße aus Köln"]).tolist()
