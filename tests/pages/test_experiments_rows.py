"""The Experiments page (issue 30): its compare pickers offer each row once, and an empty cell reads "—", never
"None"."""

from __future__ import annotations

import pytest

from rag.cli import main
from rag.evaluation.querysets.squad import import_squad, write_import
from tests.pages.test_experiments_page import page
from ui import nav


@pytest.mark.slow
def test_compare_offers_each_row_once_and_empty_cells_are_a_dash(sweep_env, shared_data, capsys):
    docs = sweep_env / "docs"
    write_import(import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=1), docs)
    store = ["--store", str(sweep_env / "qdrant")]
    assert main([*store, "sweep", *map(str, sorted(docs.glob("*.txt"))), "--queries", str(docs / "queries.jsonl"),
                 "--chunk-size", "100,200", "--overlap", "0", "--mode", "dense", "--k", "1,5",
                 "--embedder", "fake:32"]) == 0
    assert main([*store, "ingest", *map(str, sorted(docs.glob("*.txt"))), "--embedder", "fake:32"]) == 0
    assert main([*store, "eval", str(docs / "queries.jsonl"), "--mode", "dense", "--k", "1,5"]) == 0
    capsys.readouterr()
    at = page(nav.EXPERIMENTS.path)
    for key in ("experiments_a", "experiments_b"):
        options = at.selectbox(key=key).options
        assert sorted(options) == sorted(set(options))
        sweep = [o for o in options if o.startswith("run 1 ")]
        assert len(sweep) == 2 and sum("(best)" in o for o in sweep) == 1, options  # its two rows, no third
        assert [o for o in options if o.startswith("run 2 ")] == [o for o in options if o.startswith("run 2 · ")]
    tables = [d for d in at.dataframe if d.value.isna().any().any()]
    assert tables, "no table with an empty cell to check"
    assert all(d.proto.placeholder == "—" for d in tables)
