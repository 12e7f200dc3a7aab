"""The regression gate of `rag eval`: exit codes by the paired test, one verdict line, the JUnit report."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from rag.evaluation.comparisons.gate import gate
from tests.conftest import run

WORDS = ["Apfel", "Birne", "Kirsche", "Pflaume", "Traube", "Melone", "Banane", "Zitrone", "Orange", "Mango",
         "Feige", "Dattel"]


@pytest.fixture
def gated(tmp_path: Path, capsys) -> tuple[Path, list[str]]:
    """Collections 'good' and 'broken' of the same titles; in 'broken' each title holds the next word's text."""
    store = str(tmp_path / "qdrant")
    for collection, shift in (("good", 0), ("broken", 1)):
        folder = tmp_path / collection
        folder.mkdir()
        for i in range(len(WORDS)):
            word = WORDS[(i + shift) % len(WORDS)]
            (folder / f"d{i}.txt").write_text(f"Ein Text über die {word}. Die {word} ist eine Frucht.\n")
        code, _, err = run(capsys, "--store", store, "ingest", *sorted(map(str, folder.iterdir())), "--collection",
                           collection, "--embedder", "fake:64")
        assert code == 0, err
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"query": f"Was ist eine {w}?", "document": f"d{i}.txt"}) + "\n"
                               for i, w in enumerate(WORDS)))
    base = ["--store", store, "eval", str(queries), "--mode", "sparse", "--k", "1,10"]
    runs = []
    for collection in ("good", "broken"):
        code, out, err = run(capsys, *base, "--collection", collection, "--json")
        assert code == 0, err
        runs.append(str(json.loads(out)["run"]))
    return tmp_path, base, runs


def test_worse_fails_better_and_ties_pass(gated, capsys):
    folder, base, (good, broken) = gated
    junit = folder / "report.xml"
    code, out, err = run(capsys, *base, "--collection", "broken", "--baseline", good, "--fail-if-worse",
                         "--metric", "mrr@10", "--alpha", "0.05", "--junit", str(junit))
    assert code == 1, err
    verdict = out.strip().splitlines()[-1]
    assert verdict.startswith(f"FAIL: mrr@10 is worse than baseline run {good}") and "p < 0.001" in verdict
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(WORDS) + 1 and int(suite.get("failures")) == len(WORDS) + 1
    assert cases[-1].find("failure").get("message") == verdict

    code, out, _ = run(capsys, *base, "--collection", "good", "--baseline", broken, "--fail-if-worse")
    assert code == 0 and out.strip().splitlines()[-1].startswith("PASS: mrr@10 is better")
    code, out, _ = run(capsys, *base, "--collection", "good", "--baseline", good, "--fail-if-worse", "--json")
    data = json.loads(out)
    assert code == 0 and data["gate"]["verdict"] == "too_few_differ" and not data["gate"]["failed"]
    assert "too few questions differ to tell" in data["gate"]["line"]
    code, out, _ = run(capsys, *base, "--collection", "broken", "--baseline", good)  # no --fail-if-worse: exit 0
    assert code == 0 and "FAIL: mrr@10 is worse" in out


def test_ties_pass_and_say_so():
    pairs = [({"values": {"mrr@10": a}}, {"values": {"mrr@10": b}}) for a, b in
             [(1.0, 0.5), (0.5, 1.0)] * 5 + [(1.0, 0.0)] * 2]  # 12 differ, mostly cancelling
    verdict = gate(pairs, "mrr@10", 0.05, "3")
    assert verdict.verdict == "tied" and not verdict.failed
    assert verdict.line().startswith("PASS: mrr@10 is tied with baseline run 3")
    few = gate(pairs[-2:] + [({"values": {"mrr@10": 1.0}}, {"values": {"mrr@10": 1.0}})] * 10, "mrr@10", 0.05, "3")
    assert few.verdict == "too_few_differ" and not few.failed  # 2 of 12 differ: no test can decide


def test_gate_usage_errors(gated, capsys):
    _, base, (good, _) = gated
    code, _, err = run(capsys, *base, "--collection", "good", "--fail-if-worse")
    assert code == 1 and "--fail-if-worse needs --baseline" in err
    code, _, err = run(capsys, *base, "--collection", "good", "--baseline", good, "--metric", "mrr@7")
    assert code == 1 and "--metric must be one of" in err
    code, _, err = run(capsys, *base, "--collection", "good", "--baseline", "999")
    assert code == 1 and len(err.strip().splitlines()) == 1
