"""rag.evaluation.querysets.kept_documents: uploaded documents kept under the data root for a sweep after a reload;
names made safe (never a path outside the set's folder), the uploaded name kept as the title, sizes capped as an
upload's."""

from __future__ import annotations

from rag.evaluation.querysets.kept_documents import forget_document, keep_documents, kept_documents


def test_kept_documents_stay_inside_their_set_and_keep_their_uploaded_names(tmp_path):
    root = tmp_path / "data"
    files = [("../../a b.txt", b"eins"), ("C:\\x\\a_b.txt", b"zwei"), (".hidden.md", b"# drei")]
    name, refused = keep_documents(root, files)
    assert refused == [] and name is not None
    kept = kept_documents(root, name)
    assert [d.name for d in kept] == ["a b.txt", "a_b.txt", ".hidden.md"]  # titles, as the query set names them
    assert [d.path.name for d in kept] == ["a_b.txt", "a_b-2.txt", "hidden.md"]
    assert all(d.path.parent == root / "evaluate-documents" / name for d in kept)
    assert [d.path.read_bytes() for d in kept] == [b"eins", b"zwei", b"# drei"]
    assert not (tmp_path / "a b.txt").exists()
    assert keep_documents(root, files)[0] == name  # the same upload, the same set
    assert [d.name for d in forget_document(root, name, "a_b-2.txt")] == ["a b.txt", ".hidden.md"]
    for outside in ("../names.json", "names.json", "../../a b.txt"):  # only a file the set lists is removed
        assert len(forget_document(root, name, outside)) == len(kept_documents(root, name)) == 2
    assert kept_documents(root, "../" + name) == [] and kept_documents(root, None) == []


def test_files_an_upload_may_not_hold_are_refused_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_MAX_FILE_MB", "0.001")  # about 1 KB
    name, refused = keep_documents(tmp_path, [("big.txt", b"x" * 5000), ("empty.md", b""), ("run.sh", b"echo"),
                                              ("ok.txt", b"klein")])
    assert [d.name for d in kept_documents(tmp_path, name)] == ["ok.txt"]
    assert len(refused) == 3 and "RAG_MAX_FILE_MB" in refused[0] and "empty" in refused[1]
    assert "'run.sh' is not a PDF, Markdown or text file" in refused[2]
    assert keep_documents(tmp_path, [("run.sh", b"echo")])[0] is None
