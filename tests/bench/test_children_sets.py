"""bench.children's de-hard set: the XQuAD-de articles among German prose documents, cut from one prose file at
paragraph ends and chosen evenly over it, the same documents on every run."""

from __future__ import annotations

import argparse

import pytest

from bench.children import distractors, load_set, prose_pieces

PARAGRAPHS = [f"Absatz {i}: " + " ".join(["Wörter"] * (5 + i % 4)) for i in range(40)]


def test_prose_is_cut_at_paragraph_ends_into_pieces_of_about_the_size():
    text = "\n\n".join(PARAGRAPHS)

    pieces = prose_pieces(text, size=200)

    assert len(pieces) > 3
    assert all(len(p) >= 200 - 2 for p in pieces[:-1])  # each full piece reaches the size (less its last break)
    assert [par for p in pieces for par in p.split("\n\n")] == PARAGRAPHS  # nothing lost, nothing moved


def test_distractors_are_evenly_spaced_pieces_named_in_order(tmp_path):
    prose = tmp_path / "german.txt"
    prose.write_text("\n\n".join(PARAGRAPHS), encoding="utf-8")
    pieces = prose_pieces(prose.read_text(encoding="utf-8"), size=200)
    assert len(pieces) >= 6

    documents = distractors(prose, 3, size=200)

    assert [d.title for d in documents] == ["german-prose-01.txt", "german-prose-02.txt", "german-prose-03.txt"]
    assert [d.text.strip() for d in documents] == [pieces[0], pieces[len(pieces) // 3], pieces[2 * len(pieces) // 3]]
    assert [d.text for d in distractors(prose, 3, size=200)] == [d.text for d in documents]  # the same every run


def test_an_unknown_set_is_named_with_the_sets_there_are():
    with pytest.raises(SystemExit, match="use de, en or de-hard"):
        load_set("fr", argparse.Namespace())
