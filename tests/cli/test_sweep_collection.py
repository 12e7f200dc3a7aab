"""`rag sweep --collection C` (issue 34.3): the Evaluate page's sweep over "A collection" on the command line, on
the same code path (rag.evaluation.sweeps.sweep.run_sweep with the collection): at C's own settings C is searched as
stored, with `rag eval`'s metrics; other settings say why in one line and build a collection of their own."""

from __future__ import annotations

import json

from tests.conftest import run


def test_a_sweep_of_a_collection_at_its_own_settings_searches_it_with_rag_evals_metrics(xquad, tmp_path, capsys):
    documents, queries = xquad
    folder = tmp_path / "docs"
    folder.mkdir()
    for document in documents:
        (folder / document.title).write_text(document.text, encoding="utf-8")
    (tmp_path / "q.jsonl").write_text("\n".join(json.dumps({"query": q.text, "document": q.documents[0],
                                                            "answer": q.answer}, ensure_ascii=False)
                                                 for q in queries), encoding="utf-8")
    store, asked = str(tmp_path / "qdrant"), str(tmp_path / "q.jsonl")
    code, _, err = run(capsys, "--store", store, "ingest", *(str(folder / d.title) for d in documents), "--collection",
                       "mine", "--chunk-size", "350", "--overlap", "50", "--embedder", "fake:32")
    assert code == 0, err
    code, out, err = run(capsys, "--store", store, "sweep", "--collection", "mine", "--queries", asked,
                         "--chunk-size", "350", "--overlap", "50", "--mode", "dense", "--embedder", "fake:32",
                         "--k", "1,5", "--json")
    assert code == 0, err
    swept = json.loads(out)
    assert "note: Searched 'mine' as stored at its own settings (350/50 child 128)" in err
    assert [row["collection"] for row in swept["configs"]] == ["mine"]
    code, out, err = run(capsys, "--store", store, "eval", asked, "--collection", "mine", "--mode", "dense",
                         "--k", "1,5", "--json")
    assert code == 0, err
    assert json.loads(out)["metrics"] == swept["configs"][0]["metrics"]
    code, out, err = run(capsys, "--store", store, "sweep", "--collection", "mine", "--queries", asked,
                         "--chunk-size", "200", "--overlap", "0", "--mode", "dense", "--embedder", "fake:32", "--json")
    assert code == 0, err
    assert "note: Not searched as stored: 'mine' is chunked 350/50, not 200/0; the sweep built its own." in err
    assert json.loads(out)["configs"][0]["collection"].startswith("sweep-")
    code, _, err = run(capsys, "--store", store, "sweep", str(folder), "--collection", "mine", "--queries", asked)
    assert code != 0 and "one of the two" in err
