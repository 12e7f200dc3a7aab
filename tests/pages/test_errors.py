"""ui.errors: the one way a page shows a RagError (one error line), while any other exception surfaces as a bug."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag.errors import RagError, StoreError
from ui import errors

ROOT = Path(__file__).resolve().parents[2]


def test_reported_shows_a_rag_error_once_and_says_it_failed(monkeypatch):
    shown = []
    monkeypatch.setattr(errors, "show", shown.append)
    with errors.reported() as report:
        raise StoreError("The store is gone. Open it again.")
    assert report.failed and [str(e) for e in shown] == ["The store is gone. Open it again."]
    with errors.reported() as report:
        value = 1
    assert not report.failed and value == 1 and len(shown) == 1


def test_any_other_exception_is_a_bug_and_is_not_shown(monkeypatch):
    shown = []
    monkeypatch.setattr(errors, "show", shown.append)
    with pytest.raises(ZeroDivisionError), errors.reported():
        _ = 1 / 0
    assert errors.attempt(lambda: (_ for _ in ()).throw(RagError("nein"))) is None and len(shown) == 1
    with pytest.raises(KeyError):
        errors.attempt(lambda: {}["x"])


def test_pages_show_rag_errors_through_ui_errors_not_by_hand():
    """A hand-written `except RagError` that calls errors.show is what errors.reported is for."""
    by_hand = [str(p.relative_to(ROOT)) for folder in ("ui", "app_pages") for p in (ROOT / folder).rglob("*.py")
               if re.search(r"except RagError as error:\n\s+errors\.show\(error\)", p.read_text(encoding="utf-8"))
               and p.name != "errors.py"]
    assert by_hand == []
