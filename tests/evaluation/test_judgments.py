"""Judgments: graded spans mapped to any chunking, judged@k / hole@k, graded nDCG, atomic writes, clear errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rag import files
from rag.errors import QuerySetError
from rag.evaluation.judges.judging import judgment_of, read_query_file, save_judgments
from rag.evaluation.metrics.metrics import evaluate
from rag.evaluation.querysets.judgments import Judgment
from rag.evaluation.querysets.queries import Query, load_query_set
from rag.evaluation.querysets.versions import query_set_hash, read_log
from rag.retrieval.records import Hit

TEXT = "A" * 100 + "B" * 100 + "C" * 100 + "D" * 100  # four spans of 100 characters


def hit(start: int, end: int, title: str = "doc.md") -> Hit:
    return Hit(1.0, TEXT[start:end], "id-1", title, f"c{start}", start // 100, (), None, None, start, end)


def judged_query() -> Query:
    return Query("Frage?", (), judgments=(
        Judgment("doc.md", 0, 100, 2),  # A relevant
        Judgment("doc.md", 100, 200, 1),  # B partly
        Judgment("doc.md", 200, 300, 0),  # C not relevant
        Judgment("doc.md", 200, 300, 2, by="llm:m"),  # the LLM disagrees on C: the person wins
    ))


def test_graded_metrics_and_holes_by_hand():
    query = judged_query()
    hits = [hit(200, 300), hit(100, 200), hit(300, 400), hit(0, 100)]  # C (0), B (1), D (unjudged), A (2)
    evaluation = evaluate([query], [hits], ks=[1, 4])
    m = evaluation.metrics
    assert m["hit@1"] == 0.0 and m["hit@4"] == 1.0
    assert m["mrr@4"] == 0.5 and m["precision@4"] == 0.5 and m["recall@4"] == 1.0
    dcg = 1 / math.log2(3) + 2 / math.log2(5)  # B (gain 1) at rank 2, A (gain 2) at rank 4
    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    assert m["ndcg@4"] == pytest.approx(dcg / ideal)
    assert m["judged@1"] == 1.0 and m["hole@1"] == 0.0  # a grade 0 is a judgment
    assert m["judged@4"] == 0.75 and m["hole@4"] == 0.25
    entry = evaluation.to_json()["per_query"][0]
    assert entry["hole@4"] == 0.25 and [r["grade"] for r in entry["retrieved"]] == [0, 1, None, 2]


def test_a_judgment_maps_to_any_chunking_by_span_overlap():
    query = Query("Frage?", (), judgments=(Judgment("doc.md", 150, 160, 2),))  # evidence inside B
    for chunks in ([hit(s, s + 100) for s in range(0, 400, 100)],  # 4 chunks, no overlap
                   [hit(s, min(s + 60, 400)) for s in range(0, 400, 40)]):  # 60 wide, 20 overlap
        result = evaluate([query], [chunks], ks=[10]).per_query[0]
        relevant = [(h.start, h.end) for h, c in zip(result.hits, result.covers, strict=True) if c is not None]
        assert relevant == [(h.start, h.end) for h in chunks if h.start < 160 and h.end > 150]
    other_document = hit(150, 160, title="other.md")
    assert evaluate([query], [[other_document]], ks=[1]).metrics["judged@1"] == 0.0


def test_old_query_sets_keep_their_meaning_and_hash():
    line = {"query": "Wo?", "document": "doc.md", "answer": "BBB", "answer_start": 150}
    queries = load_query_set(json.dumps(line))
    assert queries[0].judgments == () and queries[0].units == 1
    hits = [hit(0, 100), hit(100, 200)]
    m = evaluate(queries, [hits], ks=[2]).metrics
    assert (m["mrr@2"], m["ndcg@2"], m["judged@2"], m["hole@2"]) == (0.5, pytest.approx(1 / math.log2(3)), 0.5, 0.5)
    import hashlib
    old = [[q.text, list(q.documents), q.answer, q.answer_start] for q in queries]  # the hash runs kept before
    assert query_set_hash(queries) == hashlib.sha256(json.dumps(old, ensure_ascii=False).encode()).hexdigest()


def test_bad_judgment_lines_name_their_line(tmp_path):
    good = json.dumps({"query": "Q", "judgments": [{"document": "d", "start": 0, "end": 5, "grade": 2}]})
    for bad, words in ((json.dumps({"query": "Q", "judgments": [{"document": "d", "start": 0, "end": 5,
                                                                  "grade": 3}]}), "grade must be 0"),
                       ('{"query": "Q", "judgments": [', "not valid JSON"),
                       (json.dumps({"query": "Q", "judgments": [{"document": "d", "start": 5, "end": 5,
                                                                  "grade": 1}]}), "0 <= start < end")):
        with pytest.raises(QuerySetError, match=f"q.jsonl line 2.*{words}"):
            load_query_set(good + "\n" + bad, "q.jsonl")


def test_evidence_outside_the_chunk_and_grade_three_are_one_line_errors():
    chunk = hit(100, 200)
    assert judgment_of(chunk, 2, "BBBB").start == 100
    with pytest.raises(QuerySetError, match="not inside chunk 'c100'"):
        judgment_of(chunk, 2, "AAAA")
    with pytest.raises(QuerySetError, match="grade must be 0 .* got 3"):
        judgment_of(chunk, 3)


def test_saving_keeps_other_lines_byte_for_byte_and_versions(tmp_path):
    path = tmp_path / "q.jsonl"
    old = '{"query":  "Wo?", "document": "doc.md"}\n'  # odd spacing: must survive untouched
    path.write_text(old, encoding="utf-8")
    saved = save_judgments(path, "Neu?", [judgment_of(hit(0, 100), 2)])
    assert saved.new_question and path.read_text(encoding="utf-8").startswith(old)
    save_judgments(path, "Neu?", [judgment_of(hit(0, 100), 0)])  # the person changes their mind: replaced
    save_judgments(path, "Wo?", [judgment_of(hit(100, 200), 1, "BB")])
    _, queries = read_query_file(path)
    assert [len(q.judgments) for q in queries] == [1, 1] and queries[1].judgments[0].grade == 0
    assert [v["version"] for v in read_log(path)] == [1, 2, 3] and read_log(path)[-1]["judgments"] == 2


def test_a_failed_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "q.jsonl"
    save_judgments(path, "Q?", [judgment_of(hit(0, 100), 2)])
    before = path.read_bytes()

    def killed(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", killed)  # the one atomic writer (rag.files) renames last
    with pytest.raises(QuerySetError, match="No space left on device. The query set is unchanged"):
        save_judgments(path, "Q?", [judgment_of(hit(100, 200), 1)])
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_hand_edited_invalid_query_set_is_not_overwritten(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "Q?", "document": "d"}\n{"query": "kaputt"\n', encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(QuerySetError, match="q.jsonl line 2: not valid JSON"):
        save_judgments(path, "Q?", [judgment_of(hit(0, 100), 2)])
    assert path.read_bytes() == before


@pytest.mark.crash
def test_a_killed_writer_leaves_the_old_file_whole(tmp_path):
    """A process killed (SIGKILL) in the middle of writing the new query set: the old file is there, whole."""
    import subprocess
    import sys

    path = tmp_path / "q.jsonl"
    save_judgments(path, "Q?", [judgment_of(hit(0, 100), 2)])
    before = path.read_bytes()
    script = f"""
import os, signal
from rag.evaluation.judges import judging
from tests.evaluation.test_judgments import hit
fsync = os.fsync
def killed(fd):  # the new text is written, not yet in place: die here (the version log's fsync passes)
    if os.readlink("/proc/self/fd/%d" % fd).endswith(".tmp"):
        os.kill(os.getpid(), signal.SIGKILL)
    fsync(fd)
os.fsync = killed
judging.save_judgments({str(path)!r}, "Q?", [judging.judgment_of(hit(100, 200), 1)])
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert done.returncode == -9
    assert path.read_bytes() == before
    assert [q.text for q in read_query_file(path)[1]] == ["Q?"]


# ---- one place for a user's judgments: Search and Evaluate on a collection share its file -----------------------

def test_search_and_evaluate_keep_a_collections_judgments_in_one_file(tmp_path):
    from rag.evaluation.judges.merging import judgments_path

    assert judgments_path(tmp_path, "handbuch", "fragen.jsonl") == judgments_path(tmp_path, "handbuch")
    assert judgments_path(tmp_path, "handbuch").name == "handbuch.jsonl"
    assert judgments_path(tmp_path, None, "fragen.jsonl").name == "evaluate-fragen.jsonl"  # no collection: its own


def test_an_older_files_judgments_merge_into_the_collections_once_and_none_is_lost(tmp_path):
    from rag.evaluation.judges.merging import merge_judgments

    old, new = tmp_path / "evaluate-fragen.jsonl", tmp_path / "handbuch.jsonl"
    save_judgments(old, "Frage?", [Judgment("doc.md", 0, 100, 2, at="2026-12-01T00:00:00+00:00"),
                                   Judgment("doc.md", 100, 200, 0, at="2026-12-02T00:00:00+00:00"),
                                   Judgment("doc.md", 0, 100, 1, by="llm:m", at="2026-12-01T00:00:00+00:00")])
    save_judgments(old, "Noch eine?", [Judgment("doc.md", 300, 400, 1)])
    save_judgments(new, "Frage?", [Judgment("doc.md", 100, 200, 2, at="2026-12-01T00:00:00+00:00"),  # older
                                   Judgment("doc.md", 200, 300, 1, at="2026-12-03T00:00:00+00:00")])
    before = old.read_bytes()
    assert merge_judgments(old, new) == 4
    judged = {q.text: {(j.span, j.by): j.grade for j in q.judgments} for q in read_query_file(new)[1]}
    assert judged == {"Frage?": {(("doc.md", 0, 100), "person"): 2, (("doc.md", 100, 200), "person"): 0,
                                 (("doc.md", 200, 300), "person"): 1, (("doc.md", 0, 100), "llm:m"): 1},
                      "Noch eine?": {(("doc.md", 300, 400), "person"): 1}}
    versions = len(read_log(new))
    assert merge_judgments(old, new) == 0 and len(read_log(new)) == versions  # again: nothing written
    assert old.read_bytes() == before
