"""The regression gate: is a new evaluation worse than a kept baseline run? And its JUnit XML report for CI.

The test is the paired sign-flip test of `rag runs compare` (rag.evaluation.metrics.paired) on the questions both
ran, for one metric (default the run's mrr@k at its largest k), new minus baseline:
  worse           the difference is below 0 and p < alpha: the gate fails (exit 1 with --fail-if-worse)
  better, tied    p < alpha above 0, or p >= alpha: it passes
  too few differ  so few questions differ that no p below alpha is possible: it passes, and says so
The JUnit report holds one test case per question and one for the verdict, and fails exactly when the gate fails
the job (exit 1): then the verdict and each question whose metric dropped below the baseline's fail; otherwise
every drop is reported in its case's system-out (so a JUnit reporter never turns a passing job red).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.etree import ElementTree

import numpy as np

from rag.evaluation.metrics import EXACT_UP_TO, PairedDifference, p_words, paired_difference
from rag.words import counted


def too_few_at(differing: int, alpha: float) -> bool:
    """Return whether a sign-flip test over that many differing questions cannot reach p < alpha."""
    return differing == 0 or (differing <= EXACT_UP_TO and 2.0 ** (1 - differing) >= alpha)


@dataclass(frozen=True)
class GateVerdict:
    metric: str
    baseline: str  # the baseline run as the user named it, e.g. "4" or "4/2"
    paired: PairedDifference  # new minus baseline
    alpha: float
    only_baseline: int
    only_new: int

    @property
    def verdict(self) -> str:
        """Return "worse", "better", "tied" or "too_few_differ"."""
        if too_few_at(self.paired.differing, self.alpha):
            return "too_few_differ"
        if self.paired.p_value >= self.alpha:
            return "tied"
        return "worse" if self.paired.difference < 0 else "better"

    @property
    def failed(self) -> bool:
        return self.verdict == "worse"

    def line(self) -> str:
        """Return the verdict in one line, e.g. "FAIL: mrr@10 is worse than baseline run 4: -0.120 (...)"."""
        p = self.paired
        numbers = (f"{self.metric} {p.difference:+.3f} (95 % interval {p.low:+.3f} to {p.high:+.3f}, "
                   f"{p_words(p.p_value)}) on {counted(p.queries, 'question')} both ran")
        words = {"worse": f"FAIL: {self.metric} is worse than baseline run {self.baseline}",
                 "better": f"PASS: {self.metric} is better than baseline run {self.baseline}",
                 "tied": f"PASS: {self.metric} is tied with baseline run {self.baseline} (no difference at "
                         f"alpha {self.alpha:g})",
                 "too_few_differ": f"PASS: too few questions differ to tell ({p.differing} of {p.queries} differ) "
                                   f"against baseline run {self.baseline}"}[self.verdict]
        return f"{words}: {numbers}."

    def to_json(self) -> dict:
        return {"baseline": self.baseline, "metric": self.metric, "alpha": self.alpha, "verdict": self.verdict,
                "failed": self.failed, "paired": self.paired.to_json() | {"too_few_differ": self.verdict ==
                                                                           "too_few_differ"},
                "only_baseline": self.only_baseline, "only_new": self.only_new, "line": self.line()}


def gate(pairs: Sequence[tuple[dict, dict]], metric: str, alpha: float, baseline: str, only_baseline: int = 0,
         only_new: int = 0) -> GateVerdict:
    """Return the verdict on (baseline outcome, new outcome) pairs of kept outcomes (rag.runs.records)."""
    a = np.array([x["values"][metric] for x, _ in pairs], dtype=np.float64)
    b = np.array([y["values"][metric] for _, y in pairs], dtype=np.float64)
    return GateVerdict(metric, baseline, paired_difference(a, b), alpha, only_baseline, only_new)


def junit_xml(new: Sequence[dict], pairs: Sequence[tuple[dict, dict]], verdict: GateVerdict | None, metric: str,
              suite: str, fails: bool | None = None, notes: Sequence[str] = ()) -> str:
    """Return a JUnit XML report: one test case per question of new, one for the verdict.

    fails: whether the gate fails the job (exit 1; default: the verdict is "worse"). The report fails exactly
    then, so a JUnit reporter agrees with the exit code: the verdict case and each question whose metric dropped
    fail; otherwise those drops (and, without a baseline, the questions with no relevant chunk) are reported in
    the case's system-out and nothing fails. notes: lines for the verdict case, e.g. a query-set version warning.
    """
    fails = verdict is not None and verdict.failed if fails is None else fails
    before = {id(y): x for x, y in pairs}
    cases = [_question_case(outcome, before.get(id(outcome)), verdict, metric, suite, fails) for outcome in new]
    cases.append(_verdict_case(verdict, metric, suite, fails, notes))
    failures = sum(case.find("failure") is not None for case in cases)
    suites = ElementTree.Element("testsuites")
    element = ElementTree.SubElement(suites, "testsuite", name=suite, tests=str(len(cases)), failures=str(failures),
                                     errors="0", skipped=str(int(verdict is None)))
    element.extend(cases)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(suites, encoding="unicode") + "\n"


def _question_case(outcome: dict, old: dict | None, verdict: GateVerdict | None, metric: str, suite: str,
                   fails: bool) -> ElementTree.Element:
    """Return one question's test case: failed only when it dropped and the gate fails; else said in system-out."""
    case = ElementTree.Element("testcase", classname=suite, name=f"line {outcome['line']}: {outcome['query']}",
                               time="0")
    value = outcome["values"].get(metric, 0.0)
    was = None if old is None else old["values"].get(metric, 0.0)
    if was is not None and value < was and fails:
        ElementTree.SubElement(case, "failure", message=f"{metric} {was:.3f} -> {value:.3f}", type="worse")
        return case
    if was is not None:
        said = f"{metric} {was:.3f} -> {value:.3f}" + (": lower than the baseline run (reported, not failed: "
                                                       "the gate does not fail the job)" if value < was else "")
    elif verdict is not None:
        said = f"{metric} {value:.3f}; not in the baseline run"
    else:
        said = f"{metric} {value:.3f}" + (": no relevant chunk" if value == 0.0 else "")
    ElementTree.SubElement(case, "system-out").text = said
    return case


def _verdict_case(verdict: GateVerdict | None, metric: str, suite: str, fails: bool,
                  notes: Sequence[str]) -> ElementTree.Element:
    case = ElementTree.Element("testcase", classname=suite, name=f"verdict: {metric}", time="0")
    if verdict is None:
        ElementTree.SubElement(case, "skipped", message="no --baseline run to compare with")
    elif fails:
        ElementTree.SubElement(case, "failure", message=verdict.line(), type="regression")
    else:
        said = verdict.line() + (" Not failing the job: without --fail-if-worse the gate only reports."
                                 if verdict.failed else "")
        notes = [said, *notes]
    if notes:
        ElementTree.SubElement(case, "system-out").text = "\n".join(notes)
    return case
