"""An upload whose PDF expands past RAG_MAX_CHARS (issue 39): the app stays up, says so in one line, and stores the
other file of the same ingest."""

from __future__ import annotations

import pytest

from tests.documents.test_expansion import bomb_pdf
from tests.pages.conftest import plain, results, start, texts, upload


@pytest.mark.slow
def test_an_uploaded_bomb_is_refused_in_one_line_and_the_other_file_is_stored(app_env, monkeypatch):
    monkeypatch.setenv("RAG_MAX_CHARS", "10000")
    (app_env / "bombe.pdf").write_bytes(bomb_pdf(2_000))  # 28,000 characters on one page of 8 KB
    (app_env / "gut.md").write_text("# Frist\n\nDie Kündigungsfrist beträgt drei Monate.\n", encoding="utf-8")
    at = upload(start(), app_env, "bombe.pdf", "gut.md")
    assert [plain(e.label) for e in at.expander if plain(e.label).startswith("Done: 1 of 2 files stored")]
    assert ("'bombe.pdf' expands to more than 10,000 characters of text (page 1 alone holds more). Split it into "
            "smaller files, or raise the limit with RAG_MAX_CHARS.") in texts(at.error)
    rows = results(at)
    assert (rows["bombe.pdf"]["status"], rows["gut.md"]["status"]) == ("failed", "ingested")
    at.run()  # the app goes on
    assert not at.exception, at.exception
