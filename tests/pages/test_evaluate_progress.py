"""The Evaluate page's progress bar during a sweep (AppTest): it only grows and its text says the time left.

The sweep is a job (ui.jobs.sweep); the bar draws its last progress event once a second, so the test records
every event the job took, with the text the bar shows for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui import nav
from ui.jobs.sweep import SweepJob

ROOT = Path(__file__).resolve().parents[2]


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

def test_the_sweep_progress_says_how_long_is_left(bars):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page(nav.EVALUATE.path)
    at.run()
    at.radio(key="evaluate_query_from").set_value("Sample folder")
    at.run()
    at.number_input(key="evaluate_articles").set_value(2)
    at.run()
    at.text_input(key="evaluate_sizes").set_value("100,200")
    at.text_input(key="evaluate_overlaps").set_value("0")
    at.text_input(key="evaluate_ks").set_value("1,5")
    next(b for b in at.button if b.label == "Run the sweep").click()
    at.run()
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    assert at.dataframe[0].value is not None  # the sweep ran (the page tests wait for the job, then run again)
    values = [value for value, _ in bars]
    assert values == sorted(values) and values[-1] == 1.0
    searching = [text for _, text in bars if ": searching" in text]
    assert searching and all(text.rsplit(" · ", 1)[-1].endswith(" left") for text in searching)
