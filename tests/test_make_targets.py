"""`make test-fast` leaves out what it says (browser, real model, crash/kill, slow) by markers that exist: a typo in
a -m expression would select silently instead of failing, and --strict-markers only checks the tests' marks."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def recipe(target: str) -> str:
    """Return the command lines of a Makefile target."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    found = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert found, f"no target {target} in the Makefile"
    return found.group(1)


def declared_markers() -> set[str]:
    """Return the markers pyproject.toml declares for pytest."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    return {line.split(":")[0].strip() for line in options["markers"]}


def test_test_fast_leaves_out_the_declared_browser_model_crash_and_slow_markers():
    expression = re.search(r'-m "([^"]+)"', recipe("test-fast")).group(1)
    left_out = set(re.findall(r"not (\w+)", expression))
    assert left_out == {"e2e", "model", "crash", "slow"}
    assert left_out <= declared_markers()


def test_make_test_runs_the_whole_suite():
    assert re.fullmatch(r"\t\$\(PY\) -m pytest\n", recipe("test"))
