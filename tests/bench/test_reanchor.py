"""bench/reanchor.py: answer spans moved to today's text (nearest occurrence, whitespace as the text has it), and
the English query set's spans holding on the documents as RAG Lab extracts them (when they are fetched)."""

from __future__ import annotations

import json

from bench import reanchor

TEXT = "Intro. Ross Ihaka and\nRobert Gentleman wrote R. Later: Ross Ihaka and Robert Gentleman again. ⟨wd⟩ end"


def test_a_span_moves_to_the_nearest_occurrence_with_the_texts_whitespace():
    row = {"query": "q", "document": "d", "answer": "Ihaka and Robert Gentleman wrote", "answer_start": 2}
    moved, what = reanchor.reanchor(row, TEXT)
    assert what == "moved" and moved["answer_start"] == 12 and moved["answer"] == "Ihaka and\nRobert Gentleman wrote"
    row = row | {"answer": "Ross Ihaka and Robert Gentleman"}  # verbatim at 55, with a line break at 7
    assert reanchor.reanchor(row, TEXT)[0]["answer_start"] == TEXT.index("Ross Ihaka and Robert")
    dropped, what = reanchor.reanchor(row | {"answer": "⟨wd ⟩", "answer_start": 0}, TEXT)
    assert what == "moved" and dropped["answer"] == "⟨wd⟩" and TEXT[dropped["answer_start"]:].startswith("⟨wd⟩")
    assert reanchor.reanchor(moved, TEXT) == (moved, "ok")
    assert reanchor.reanchor(row | {"answer": "Guido"}, TEXT) == (row | {"answer": "Guido"}, "missing")


def test_the_file_is_rewritten_with_only_its_moved_spans_changed(tmp_path, capsys):
    (tmp_path / "d.txt").write_text(TEXT)
    rows = [{"query": "a", "document": "d.txt", "answer": "wrote R", "answer_start": 0},
            {"query": "b", "document": "d.txt", "answer": "Intro", "answer_start": 0}, {"query": "c"}]
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    assert reanchor.main(["--queries", str(queries), "--documents", str(tmp_path), "--check"]) == 1
    assert reanchor.main(["--queries", str(queries), "--documents", str(tmp_path)]) == 0
    lines = [json.loads(line) for line in queries.read_text().splitlines()]
    assert lines == [rows[0] | {"answer_start": TEXT.index("wrote R")}, rows[1], rows[2]]
    assert "3 spans" not in capsys.readouterr().out  # 2 spans: the line without one is not counted
