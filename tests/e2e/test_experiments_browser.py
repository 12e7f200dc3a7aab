"""The Experiments page in a real browser: the hover toolbar of a run's table leaves its caption readable (it
covered the caption's end, the run's total time)."""

from __future__ import annotations

import pytest

from rag.runs import RunLog
from rag.settings import runs_file
from tests.e2e.conftest import go, settle
from tests.pages.test_wording import kept_run, row

pytestmark = pytest.mark.e2e


def test_a_runs_toolbar_does_not_cover_its_caption(app_server, page, shot, tmp_path):
    log = RunLog(runs_file(tmp_path / "qdrant"))
    rows = [row(f"{size}/50 hybrid-convex", f"sweep-9c30103c-cs{size}-ov50-local-multilingual") for size in (200, 350)]
    log.save(*kept_run("sweep", [1, None], rows, {"collection": "xquad", "prompts": {"query": "query: ",
                                                                                     "document": "passage: "}}))
    server = app_server(RAG_EMBEDDER="fake")
    page.goto(server.url)
    go(page, "Experiments")
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text="14.6 s")
    caption.wait_for()
    table = page.get_by_test_id("stDataFrame").nth(1)  # the run list, then the run's rows
    table.hover()
    toolbar = page.get_by_test_id("stElementToolbar").nth(1)
    toolbar.wait_for(state="visible")
    settle(page)
    shot("experiments-run-caption")
    words, tools = caption.bounding_box(), toolbar.bounding_box()
    assert words["y"] + words["height"] <= tools["y"] or tools["x"] >= words["x"] + words["width"], (words, tools)
