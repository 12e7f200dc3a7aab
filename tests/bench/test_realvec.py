"""The real-vector cache of bench.search (bench/realvec.py): N vectors are the first N rows of the cached list,
a shorter cache is extended (only the missing texts embedded), a different list or model is not reused."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from bench import realvec


class Recorder:
    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return np.array([[len(t), float(t[-1])] for t in texts], dtype=np.float32)


TEXTS = [f"chunk {n}" for n in range(10)]


def rows_of(texts):
    return np.array([[len(t), float(t[-1])] for t in texts], dtype=np.float32)


def test_embeds_once_then_serves_prefixes_and_extends(tmp_path, monkeypatch):
    monkeypatch.setattr(realvec, "BLOCK", 3)
    embed = Recorder()
    first = realvec.vectors(TEXTS, 5, embed, "local:e5", "documents", tmp_path)
    assert np.array_equal(first, rows_of(TEXTS[:5]))
    assert [len(c) for c in embed.calls] == [3, 2]  # saved per block
    assert [p.name.rsplit("-", 1)[1] for p in tmp_path.glob("*.npy")] == ["5.npy"]  # only the latest file stays

    embed.calls.clear()
    assert np.array_equal(realvec.vectors(TEXTS, 4, embed, "local:e5", "documents", tmp_path), rows_of(TEXTS[:4]))
    assert embed.calls == []

    longer = realvec.vectors(TEXTS, 8, embed, "local:e5", "documents", tmp_path)
    assert embed.calls == [TEXTS[5:8]]
    assert np.array_equal(longer, rows_of(TEXTS[:8]))
    assert [p.name.rsplit("-", 1)[1] for p in tmp_path.glob("*.npy")] == ["8.npy"]


def test_other_list_or_model_is_not_reused(tmp_path):
    embed = Recorder()
    realvec.vectors(TEXTS, 4, embed, "local:e5", "documents", tmp_path)
    realvec.vectors(TEXTS[::-1], 4, embed, "local:e5", "documents", tmp_path)
    realvec.vectors(TEXTS, 4, embed, "ollama:bge-m3", "documents", tmp_path)
    realvec.vectors(TEXTS, 4, embed, "local:e5", "queries", tmp_path)
    assert len(embed.calls) == 4
    assert len(list(tmp_path.glob("*.npy"))) == 4


def test_deadline_keeps_what_was_embedded(tmp_path, monkeypatch):
    monkeypatch.setattr(realvec, "BLOCK", 3)
    embed = Recorder()
    realvec.vectors(TEXTS, 3, embed, "m", "documents", tmp_path)
    got = realvec.vectors(TEXTS, 9, embed, "m", "documents", tmp_path, deadline=time.monotonic() - 1)
    assert len(got) == 3 and len(embed.calls) == 1


def test_more_than_the_list_holds_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="Only 10 distinct texts for documents"):
        realvec.vectors(TEXTS, 11, Recorder(), "m", "documents", tmp_path)


def test_bundle_gives_the_first_rows(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    np.save(bundle / "points.npy", rows_of(TEXTS))
    np.save(bundle / "queries.npy", rows_of(TEXTS[:2]))
    (bundle / "texts.json").write_text(json.dumps({"texts": TEXTS, "asked": ["a", "b"]}))
    points, queries, texts, asked = realvec.read_bundle(bundle, 4, 1)
    assert np.array_equal(points, rows_of(TEXTS[:4])) and texts == TEXTS[:4] and asked == ["a"]
    assert np.array_equal(queries, rows_of(TEXTS[:1]))
    with pytest.raises(SystemExit, match="holds 10 points"):
        realvec.read_bundle(bundle, 11, 1)
