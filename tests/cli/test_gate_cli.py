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


def junit_suite(path: Path) -> tuple[ElementTree.Element, dict[str, ElementTree.Element]]:
    suite = ElementTree.parse(path).getroot().find("testsuite")
    return suite, {case.get("name"): case for case in suite.findall("testcase")}


def ingest_swapped(tmp_path: Path, capsys, store: str, swapped: int = 2) -> None:
    """Collection 'mixed': 'good', but the first `swapped` documents hold each other's text (those questions drop)."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    for i in range(len(WORDS)):
        word = WORDS[(swapped - 1 - i) if i < swapped else i]
        (folder / f"d{i}.txt").write_text(f"Ein Text über die {word}. Die {word} ist eine Frucht.\n")
    code, _, err = run(capsys, "--store", store, "ingest", *sorted(map(str, folder.iterdir())), "--collection",
                       "mixed", "--embedder", "fake:64")
    assert code == 0, err


def test_the_junit_report_fails_exactly_when_the_gate_fails_the_job(gated, capsys):
    folder, base, (good, _) = gated
    ingest_swapped(folder, capsys, base[1])
    junit = folder / "report.xml"
    code, out, err = run(capsys, *base, "--collection", "mixed", "--baseline", good, "--fail-if-worse",
                         "--junit", str(junit))
    assert code == 0 and out.strip().splitlines()[-1].startswith("PASS: too few questions differ"), err
    suite, cases = junit_suite(junit)
    assert suite.get("failures") == "0" and suite.get("errors") == "0"  # a JUnit reporter stays green, as the job
    assert not [c for c in cases.values() if c.find("failure") is not None or c.find("error") is not None]
    dropped = [c.find("system-out").text for c in cases.values() if "1.000 -> 0.000" in c.find("system-out").text]
    assert len(dropped) == 2 and all("lower than the baseline run (reported, not failed" in text for text in dropped)
    assert cases["verdict: mrr@10"].find("system-out").text.startswith("PASS: too few questions differ")

    code, out, _ = run(capsys, *base, "--collection", "broken", "--baseline", good, "--junit", str(junit))
    suite, cases = junit_suite(junit)  # worse, but without --fail-if-worse the job passes: so does the report
    assert code == 0 and "FAIL: mrr@10 is worse" in out and suite.get("failures") == "0"
    assert "Not failing the job" in cases["verdict: mrr@10"].find("system-out").text

    code, _, _ = run(capsys, *base, "--collection", "broken", "--junit", str(junit))  # no gate: nothing fails
    suite, cases = junit_suite(junit)
    assert code == 0 and suite.get("failures") == "0" and suite.get("skipped") == "1"
    assert sum("no relevant chunk" in (c.findtext("system-out") or "") for c in cases.values()) == len(WORDS)

    code, out, _ = run(capsys, *base, "--collection", "broken", "--baseline", good, "--fail-if-worse",
                       "--junit", str(junit))
    suite, cases = junit_suite(junit)
    assert code == 1 and int(suite.get("failures")) == len(WORDS) + 1
    assert cases["verdict: mrr@10"].find("failure").get("message") == out.strip().splitlines()[-1]


def test_the_gate_warns_when_the_baseline_used_another_query_set_version(gated, capsys):
    folder, base, (good, _) = gated
    code, out, _ = run(capsys, *base, "--collection", "good", "--baseline", good)
    assert code == 0 and "warning" not in out  # the same version: no warning
    fewer = folder / "fewer.jsonl"
    fewer.write_text("".join((folder / "q.jsonl").read_text().splitlines(keepends=True)[:-1]))
    argv = ["--store", base[1], "eval", str(fewer), *base[4:], "--collection", "good", "--baseline", good]
    code, out, _ = run(capsys, *argv)
    lines = out.strip().splitlines()
    assert code == 0 and lines[-1].startswith("PASS:")
    assert lines[-2].startswith("warning: the baseline and this evaluation used different query-set versions")
    assert lines[-2].endswith("0 questions added, 1 removed, 0 with changed labels or judgments.")
    code, out, err = run(capsys, *argv, "--json", "--junit", str(folder / "report.xml"))
    gate_json = json.loads(out)["gate"]
    assert gate_json["version_warning"] == lines[-2] and gate_json["version_warning"] in err
    assert gate_json["query_versions"]["same"] is False and gate_json["query_versions"]["questions_removed"] == [
        f"Was ist eine {WORDS[-1]}?"]
    suite, cases = junit_suite(folder / "report.xml")
    assert lines[-2] in cases["verdict: mrr@10"].find("system-out").text


def test_an_exported_run_gates_as_the_kept_run_does(gated, capsys):
    folder, base, (good, broken) = gated
    baseline = folder / "baseline.json"
    code, out, err = run(capsys, "--store", base[1], "runs", "export", good, "--out", str(baseline))
    assert code == 0 and str(baseline) in out, err
    data = json.loads(baseline.read_text())
    assert data["format"] == "rag-lab-run" and data["version"] == 1 and data["source"]["run"] == int(good)
    assert len(data["outcomes"][0]) == len(WORDS) and "mrr@10" in data["outcomes"][0][0]["values"]
    verdicts = []
    for given in (good, str(baseline)):
        code, out, _ = run(capsys, *base, "--collection", "broken", "--baseline", given, "--fail-if-worse", "--json")
        verdicts.append((code, json.loads(out)["gate"]))
    (code_id, by_id), (code_file, by_file) = verdicts
    assert code_id == code_file == 1 and by_file["baseline"] == f"{good} from {baseline}"
    assert {k: v for k, v in by_id.items() if k not in ("baseline", "line")} == \
        {k: v for k, v in by_file.items() if k not in ("baseline", "line")}
    assert by_file["line"].startswith(f"FAIL: mrr@10 is worse than baseline run {good} from {baseline}")
    compared = []
    for given in (good, str(baseline)):
        code, out, _ = run(capsys, "--store", base[1], "runs", "compare", given, broken, "--json")
        assert code == 0
        compared.append(json.loads(out))
    assert compared[0]["paired"] == compared[1]["paired"] and compared[1]["a"]["file"] == str(baseline)
    code, _, _ = run(capsys, "--store", base[1], "runs", "export", f"{good}/1", "--out", str(folder / "row.json"))
    assert code == 0 and json.loads((folder / "row.json").read_text())["source"]["row"] == 1


def test_a_bad_or_missing_baseline_file_is_one_line(gated, capsys):
    folder, base, (good, broken) = gated
    baseline = folder / "baseline.json"
    assert run(capsys, "--store", base[1], "runs", "export", good, "--out", str(baseline))[0] == 0
    data = json.loads(baseline.read_text())
    newer = data | {"version": 2}
    nan_value = json.loads(baseline.read_text())
    nan_value["outcomes"][0][3]["values"]["mrr@10"] = "high"
    files = {"missing.json": None, "cut.json": baseline.read_text()[:500], "list.json": "[1, 2]",
             "other.json": json.dumps({"format": "something else"}), "newer.json": json.dumps(newer),
             "values.json": json.dumps(nan_value), "deep.json": "[" * 100_000, "binary.json": b"\xff\xfe\x00"}
    for name, content in files.items():
        if isinstance(content, bytes):
            (folder / name).write_bytes(content)
        elif content is not None:
            (folder / name).write_text(content)
    said = {}
    for name in [*files, "."]:
        path = str(folder / name) if name != "." else str(folder)
        for argv in ([*base, "--collection", "good", "--baseline", path, "--fail-if-worse"],
                     ["--store", base[1], "runs", "compare", path, broken]):
            code, out, err = run(capsys, *argv)
            assert code == 1 and not out and len(err.strip().splitlines()) == 1, (name, err)
            said[name] = err
    assert "no such run file" in said["missing.json"] and "newer RAG Lab" in said["newer.json"]
    assert "not JSON" in said["cut.json"] and "not JSON" in said["deep.json"] and "not JSON" in said["binary.json"]
    assert 'no "format"' in said["other.json"] and 'outcome 4 "values"' in said["values.json"]
    assert "is a folder" in said["."]


def test_run_ids_past_sqlite_integers_are_one_line(gated, capsys):
    _, base, (good, _) = gated
    huge = "99999999999999999999999"
    for argv in ([*base, "--collection", "good", "--baseline", huge],
                 [*base, "--collection", "good", "--baseline", f"{good}/{huge}"],
                 ["--store", base[1], "runs", "compare", huge, good],
                 ["--store", base[1], "runs", "compare", good, f"{huge}/1"],
                 ["--store", base[1], "runs", "delete", huge],
                 ["--store", base[1], "runs", "export", huge, "--out", str(Path(base[1]).parent / "x.json")]):
        code, out, err = run(capsys, *argv)
        assert code == 1 and len(err.strip().splitlines()) == 1 and ("no run" in err or "has rows 1 to 1" in err), err
