"""The Evaluate page's progress bar during a sweep (AppTest): it only grows and its text says the time left.

The sweep is a job (ui.jobs.sweep); the bar draws its last progress event once a second, so the test records
every event the job took, with the text the bar shows for it."""

from __future__ import annotations

import pytest

from tests.pages.test_evaluate_page import evaluate_page, sample_articles, set_grid
from ui.jobs.sweep import SweepJob


@pytest.fixture
def bars(sweep_env, monkeypatch) -> list[tuple[float, str]]:
    """Return the (value, text) of the sweep job's progress bar at every event it took."""
    seen: list[tuple[float, str]] = []
    original = SweepJob._progress

    def progress(self, event):
        original(self, event)
        seen.append((self.fraction, self.text))

    monkeypatch.setattr(SweepJob, "_progress", progress)
    return seen

@pytest.mark.slow
def test_the_sweep_progress_says_how_long_is_left(bars):
    at = evaluate_page()
    sample_articles(at, 2)
    set_grid(at, "100,200", "0", "1,5")
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    assert at.dataframe[0].value is not None  # the sweep ran (the page tests wait for the job, then run again)
    values = [value for value, _ in bars]
    assert values == sorted(values) and values[-1] == 1.0
    searching = [text for _, text in bars if ": searching" in text]
    assert searching and all(text.rsplit(" · ", 1)[-1].endswith(" left") for text in searching)
