"""The regression gate of `rag eval`: --baseline RUN [--fail-if-worse] [--metric M] [--alpha A] [--junit FILE].

    python -m rag eval QUERIES --collection C --baseline RUN --fail-if-worse [--metric mrr@10] [--alpha 0.05]
                       [--junit FILE]

RUN: a kept run (ID or ID/ROW) or a file `rag runs export` wrote (rag.runs.export), e.g. a baseline.json kept
in the repository a CI job checks out. Exit 1 only with --fail-if-worse when the paired test of `rag runs
compare` says the new evaluation is worse than the baseline (rag.evaluation.comparisons.gate); ties and "too few
questions differ" pass and say so. The verdict is one line on stdout (on stderr with --json, which carries it as
"gate"), after a warning line when the baseline used another version of the query set. The JUnit report fails
exactly when the command exits 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag.cli import common
from rag.errors import UsageError
from rag.evaluation import METRICS, Evaluation, GateVerdict, gate, junit_xml
from rag.runs import RunLog, outcomes_of, pair_outcomes, query_versions, runs_path_of, version_warning
from rag.runs import parse_run_side as parse_side


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", metavar="RUN", help="a kept run (ID or ID/ROW), or a file `rag runs export` "
                        "wrote, to test this evaluation against with the paired test of `rag runs compare`")
    parser.add_argument("--fail-if-worse", action="store_true", help="with --baseline: exit 1 when the new "
                        "evaluation is worse (ties and too few differing questions pass)")
    parser.add_argument("--metric", metavar="METRIC", help="the metric the gate tests (default mrr@ the largest k)")
    parser.add_argument("--alpha", type=_alpha, default=0.05, help="the gate's significance level (default 0.05)")
    parser.add_argument("--junit", metavar="FILE", help="write a JUnit XML report: a test case per question and "
                        "one for the verdict; it fails exactly when the command exits 1")


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"--alpha must be a number between 0 and 1, e.g. 0.05; got {text!r}")
    return value


def check_gate_options(args: argparse.Namespace) -> Path | None:
    """Raise UsageError for gate options that do not fit together, before any work; return the JUnit file."""
    if args.fail_if_worse and not args.baseline:
        raise UsageError("--fail-if-worse needs --baseline RUN: the kept run (`rag runs`) or run file (`rag runs "
                         "export`) to compare with.")
    if args.metric:
        name, _, k = args.metric.partition("@")
        if name not in METRICS or not k.isdigit() or int(k) not in args.k:
            measured = ", ".join(map(str, args.k))
            raise UsageError(f"--metric must be one of {', '.join(METRICS)} at a measured k ({measured}), e.g. "
                             f"mrr@{args.k[-1]}; got {args.metric!r}.")
    return common.output_file(args.junit) if args.junit else None


def check_baseline(args: argparse.Namespace, store) -> None:
    """Raise RunNotFoundError for a --baseline run that is not kept (RunFileError for a file that is no run file),
    before the evaluation runs."""
    if args.baseline:
        parse_side(RunLog(runs_path_of(store)), args.baseline)


def run_gate(args: argparse.Namespace, evaluation: Evaluation, store, junit: Path | None,
             version: dict | None = None) -> tuple[dict | None, int]:
    """Return the gate's JSON ("gate") and exit code, after printing its lines and writing the JUnit file; version:
    the query set's version this evaluation used (rag.evaluation.version_of), to warn when the baseline's differs."""
    metric = args.metric or f"mrr@{evaluation.ks[-1]}"
    new = outcomes_of(evaluation)
    verdict: GateVerdict | None = None
    pairs: list = []
    notes: list[str] = []
    extra: dict = {}
    if args.baseline:
        side = parse_side(RunLog(runs_path_of(store)), args.baseline)
        pairs, only_baseline, only_new = pair_outcomes(side.outcomes, new)
        pairs = [(x, y) for x, y in pairs if metric in x["values"]]
        if not pairs:
            raise UsageError(f"Baseline run {side.name} shares no question measured by {metric} with this query set; "
                             "give a run of the same questions and k.")
        verdict = gate(pairs, metric, args.alpha, side.name, only_baseline, only_new)
        if version is not None:
            warning = version_warning(side.version, version, (only_baseline, only_new),
                                      ("baseline", "this evaluation"), "the baseline and this evaluation")
            notes += [warning] if warning else []
            extra = {"query_versions": query_versions(side.version, version, ("baseline", "new")),
                     "version_warning": warning or None}
        for line in [*notes, verdict.line()]:
            print(line, file=sys.stderr if args.json else sys.stdout)
    code = 1 if verdict is not None and verdict.failed and args.fail_if_worse else 0
    if junit:
        common.write_report(junit, junit_xml(new, pairs, verdict, metric, f"rag eval {Path(args.queries).name} on "
                                             f"{args.collection}", fails=code == 1, notes=notes))
    return (verdict.to_json() | extra if verdict else None), code
