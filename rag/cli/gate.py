"""The regression gate of `rag eval`: --baseline RUN_ID [--fail-if-worse] [--metric M] [--alpha A] [--junit FILE].

    python -m rag eval QUERIES --collection C --baseline RUN_ID --fail-if-worse [--metric mrr@10] [--alpha 0.05]
                       [--junit FILE]

Exit 1 only with --fail-if-worse when the paired test of `rag runs compare` says the new evaluation is worse
than the baseline run (rag.evaluation.comparisons.gate); ties and "too few questions differ" pass and say so.
The verdict is one line on stdout (on stderr with --json, which carries it as "gate").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag.cli import common
from rag.errors import UsageError
from rag.evaluation import METRICS, Evaluation, GateVerdict, gate, junit_xml
from rag.runs import RunLog, outcomes_of, pair_outcomes, runs_path_of
from rag.runs import parse_run_side as parse_side


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", metavar="RUN_ID", help="a kept run (ID or ID/ROW) to test this evaluation "
                        "against with the paired test of `rag runs compare`")
    parser.add_argument("--fail-if-worse", action="store_true", help="with --baseline: exit 1 when the new "
                        "evaluation is worse (ties and too few differing questions pass)")
    parser.add_argument("--metric", metavar="METRIC", help="the metric the gate tests (default mrr@ the largest k)")
    parser.add_argument("--alpha", type=_alpha, default=0.05, help="the gate's significance level (default 0.05)")
    parser.add_argument("--junit", metavar="FILE", help="write a JUnit XML report: a test case per question and "
                        "one for the verdict")


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
        raise UsageError("--fail-if-worse needs --baseline RUN_ID: the kept run to compare with (`rag runs`).")
    if args.metric:
        name, _, k = args.metric.partition("@")
        if name not in METRICS or not k.isdigit() or int(k) not in args.k:
            measured = ", ".join(map(str, args.k))
            raise UsageError(f"--metric must be one of {', '.join(METRICS)} at a measured k ({measured}), e.g. "
                             f"mrr@{args.k[-1]}; got {args.metric!r}.")
    return common.output_file(args.junit) if args.junit else None


def check_baseline(args: argparse.Namespace, store) -> None:
    """Raise RunNotFoundError for a --baseline run that is not kept, before the evaluation runs."""
    if args.baseline:
        parse_side(RunLog(runs_path_of(store)), args.baseline)


def run_gate(args: argparse.Namespace, evaluation: Evaluation, store, junit: Path | None) -> tuple[dict | None, int]:
    """Return the gate's JSON ("gate") and exit code, after printing its line and writing the JUnit file."""
    metric = args.metric or f"mrr@{evaluation.ks[-1]}"
    new = outcomes_of(evaluation)
    verdict: GateVerdict | None = None
    pairs: list = []
    if args.baseline:
        log = RunLog(runs_path_of(store))
        side = parse_side(log, args.baseline)
        pairs, only_baseline, only_new = pair_outcomes(log.outcomes(side.run["id"], side.row), new)
        pairs = [(x, y) for x, y in pairs if metric in x["values"]]
        if not pairs:
            raise UsageError(f"Baseline run {side.name} shares no question measured by {metric} with this query set; "
                             "give a run of the same questions and k.")
        verdict = gate(pairs, metric, args.alpha, side.name, only_baseline, only_new)
        print(verdict.line(), file=sys.stderr if args.json else sys.stdout)
    if junit:
        common.write_report(junit, junit_xml(new, pairs, verdict, metric, f"rag eval {Path(args.queries).name} on "
                                             f"{args.collection}"))
    code = 1 if verdict is not None and verdict.failed and args.fail_if_worse else 0
    return (verdict.to_json() if verdict else None), code
