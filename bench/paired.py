"""One paired comparison of two evaluations on the same queries, as Markdown lines: each side's metric with its
95 % interval, the paired difference with its interval and p (rag.evaluation.metrics.paired), and on how many
queries the second side ranks the answer higher or lower. bench.headers and bench.children print it."""

from __future__ import annotations

from collections.abc import Sequence

from rag.evaluation.metrics import Evaluation, paired_difference

UNRANKED = 99  # an answer not found ranks below every found one


def paired_table(base: Evaluation, side: Evaluation, metrics: Sequence[str], names: tuple[str, str],
                 moved: str) -> list[str]:
    """Return the table of base against side for metrics, then "<moved> ranks the answer higher on N queries, lower
    on M". names: the two columns' names, e.g. ("headers off", "headers on")."""
    lines = [f"| metric | {names[0]} [95 %] | {names[1]} [95 %] | difference [95 %] | p |", "|---|---|---|---|---|"]
    for metric in metrics:
        cells = []
        for evaluation in (base, side):
            low, high = evaluation.intervals[metric]
            cells.append(f"{evaluation.metrics[metric]:.3f} [{low:.3f}, {high:.3f}]")
        diff = paired_difference(base.values(metric), side.values(metric))
        cells += [f"{diff.difference:+.3f} [{diff.low:+.3f}, {diff.high:+.3f}]", f"{diff.p_value:.3f}"]
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    pairs = list(zip(base.per_query, side.per_query, strict=True))
    better = sum((b.rank or UNRANKED) < (a.rank or UNRANKED) for a, b in pairs)
    worse = sum((b.rank or UNRANKED) > (a.rank or UNRANKED) for a, b in pairs)
    lines.append(f"{moved} ranks the answer higher on {better} queries, lower on {worse}")
    return lines
