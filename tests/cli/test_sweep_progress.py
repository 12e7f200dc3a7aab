"""`rag sweep` progress on stderr: one line per stage, the texts embedded, and the time left once estimated."""

from __future__ import annotations

import pytest

from rag.cli import main
from rag.cli.sweep import SweepReporter
from rag.evaluation.querysets.squad import import_squad, write_import
from rag.evaluation.sweeps.results import SweepConfig, SweepProgress


def test_reporter_lines_say_the_time_left(capsys):
    report, config = SweepReporter(), SweepConfig(350, 50)
    report(SweepProgress("queries", 0, 6, None, 0, 632, "embedding 632 queries"))
    report(SweepProgress("queries", 0, 6, None, 8, 632, "embedding 632 queries"))  # after a slice: not said again
    report(SweepProgress("embedding", 1, 6, config, 0, 0, "chunk_size 350, overlap 50: embedding", 30.0))
    report(SweepProgress("embedding", 1, 6, config, 40, 126, "chunk_size 350, overlap 50: embedding", 150.0))
    report(SweepProgress("embedding", 1, 6, config, 126, 126, "chunk_size 350, overlap 50: embedding", 118.0))
    report(SweepProgress("searching", 1, 6, config, 0, 3, "chunk_size 350, overlap 50: searching", 42.0))
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["embedding 632 queries",  # no estimate yet: nothing said
                     "[2/6] chunk_size 350, overlap 50: embedding 126/126 · about 2 min left",  # not a terminal:
                     "[2/6] chunk_size 350, overlap 50: searching · about 40 s left"]  # the end of embedding only


@pytest.mark.slow
def test_sweep_command_reports_the_time_left(shared_data, tmp_path, capsys):
    imported = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=2)
    write_import(imported, tmp_path / "docs")
    argv = ["sweep", str(tmp_path / "docs"), "--queries", str(tmp_path / "docs/queries.jsonl"), "--chunk-size",
            "100,200", "--overlap", "0", "--k", "1,5", "--embedder", "fake:32", "--store", str(tmp_path / "q"),
            "--mode", "dense,sparse", "--no-cache"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("chunking 2 documents for 2 configurations")
    searching = [line for line in err if ": searching" in line]
    assert len(searching) == 2 and all(" left" in line.split(" · ")[-1] for line in searching)  # modes together
    assert "queries, dense, sparse" in searching[0]
    assert err[-3].startswith("[2/2] chunk_size 200, overlap 0, child_size 128: done · a few seconds left")
    assert err[-2].startswith("tracing the misses of 4 rows")  # every row's funnel (rag.evaluation.funnel)
    assert err[-1].startswith("kept as run 1")  # then where the run was kept
