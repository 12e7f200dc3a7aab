"""Two kept runs compared on the questions both ran: the paired test of `rag compare --queries`, from kept outcomes.

A side is "ID" (a run's best row; an evaluation has one), "ID/ROW" (row ROW, 1-based, of a sweep) or the path of
a file `rag runs export` wrote (rag.runs.export: its best row). Questions are paired by their text and expected
documents (the n-th repeat with the n-th), so two runs of different query sets are compared on what they share,
and the counts of questions only one side ran are said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rag.errors import QuerySetError, RunNotFoundError
from rag.evaluation.comparisons import EvaluationComparison, QueryDelta
from rag.evaluation.metrics import paired_difference, quality
from rag.evaluation.querysets import diff_versions, diff_words
from rag.runs.db import RunLog
from rag.runs.export import RUN_ID, read_export
from rag.words import counted


@dataclass(frozen=True)
class RunSide:
    run: dict
    row: int  # 0-based
    outcomes: list = field(default_factory=list, repr=False, compare=False)  # the row's kept question outcomes
    file: str | None = None  # the run file it was read from (rag.runs.export); None: the runs database
    source: str = ""  # how the run file names its run, e.g. "7/3"

    @property
    def settings(self) -> dict:
        return self.run["rows"][self.row]

    @property
    def version(self) -> dict:
        """Return the query-set version the run kept (only its hash for a run kept before versions were)."""
        return self.run["settings"].get("query_version") or {"hash": self.run["settings"]["query_hash"]}

    @property
    def name(self) -> str:
        """Return the side as the user names it: "7" for a run's only row, else "7/3"; "7 from FILE" for a file."""
        if self.file is not None:
            return f"{self.source} from {self.file}"
        return str(self.run["id"]) if len(self.run["rows"]) == 1 else f"{self.run['id']}/{self.row + 1}"

    def to_json(self) -> dict:
        row = self.settings
        return {"run": self.run["id"], "row": self.row + 1, "file": self.file, "kind": self.run["kind"],
                "label": row["label"],
                "collection": row["collection"], "chunk_size": row["chunk_size"], "overlap": row["overlap"],
                "mode": row["mode"], "fusion": row["fusion"], "rerank": row["rerank"],
                "embedder": self.run["settings"]["embedder"], "query_set": self.run["settings"]["query_set"],
                "query_hash": self.run["settings"]["query_hash"], "created_at": self.run["created_at"]}


@dataclass(frozen=True)
class RunComparison:
    a: RunSide
    b: RunSide
    comparison: EvaluationComparison
    only_a: int  # questions only A ran
    only_b: int

    def to_json(self) -> dict:
        """Return the comparison as `rag runs compare --json` prints it: the fields of `rag compare --queries
        --json` ("paired", "verdict", ...), each side's run and settings, and the questions only one side ran."""
        data = self.comparison.to_json()
        a = self.a.to_json() | {"metrics": data.pop("metrics_a")}
        b = self.b.to_json() | {"metrics": data.pop("metrics_b")}
        return {"queries": data.pop("queries"), "ks": data.pop("ks"), "a": a, "b": b, "only_a": self.only_a,
                "only_b": self.only_b, "same_query_set": a["query_hash"] == b["query_hash"],
                "query_versions": self.query_versions()} | data

    def query_versions(self) -> dict:
        """Return both runs' query-set versions (rag.evaluation.querysets.versions; without per-question digests) and
        what changed from A to B: {"a", "b", "same", "questions_added", "questions_removed", "questions_changed"}."""
        return query_versions(self.a.version, self.b.version)

    def version_warning(self) -> str:
        """Return a one-line warning when the runs used different query-set versions, else ""."""
        return version_warning(self.a.version, self.b.version, (self.only_a, self.only_b))


def query_versions(a: dict, b: dict, names: tuple[str, str] = ("a", "b")) -> dict:
    """Return two kept query-set versions (without per-question digests) under names, and what changed from a to b:
    {"a", "b", "same", "questions_added", "questions_removed", "questions_changed"}."""
    shown = [{k: v for k, v in version.items() if k != "items"} for version in (a, b)]
    return dict(zip(names, shown, strict=True)) | diff_versions(a, b)


def version_warning(a: dict, b: dict, only: tuple[int, int], names: tuple[str, str] = ("A", "B"),
                    subject: str = "the runs") -> str:
    """Return a one-line warning when kept query-set versions a and b differ, else ""; only: the counts of
    questions only a and only b ran (said when the versions kept no per-question digests)."""
    versions = query_versions(a, b)
    if versions["same"]:
        return ""
    said = []
    for name, version in zip(names, (versions["a"], versions["b"]), strict=True):
        number = f"version {version['version']}, " if version.get("version") else ""
        counts = (f", {counted(version['questions'], 'question')}, {counted(version['judgments'], 'judgment')}"
                  if "questions" in version else "")
        said.append(f"{name} {number}{version['hash'][:8]}{counts}")
    change = (diff_words(versions) if "items" in a and "items" in b
              else f"{counted(only[0], 'question')} only {names[0]} ran, {only[1]} only {names[1]}")
    return f"warning: {subject} used different query-set versions ({'; '.join(said)}): {change}."


def parse_side(log: RunLog, text: str) -> RunSide:
    """Return the run side "ID", "ID/ROW" or a run file's path names, with its outcomes; RunNotFoundError for an
    unknown run or row, RunFileError for a file that is missing or no run file."""
    if not RUN_ID.fullmatch(str(text)):
        if not str(text).strip() or not (any(c in str(text) for c in "./\\") or Path(text).exists()):
            raise RunNotFoundError(f"'{text}' names no run: write a run id such as 7, or 7/3 for row 3 of sweep 7 "
                                   "(`rag runs` lists them), or a file `rag runs export` wrote.")
        run, outcomes, source = read_export(text)
        best = run["best"] or 0
        source = source if len(run["rows"]) == 1 else f"{run['id']}/{best + 1}"
        return RunSide(run, best, outcomes[best], file=str(text), source=source)
    head, _, tail = str(text).strip().partition("/")
    run = log.run(int(head))
    row = int(tail) - 1 if tail else run["best"] or 0
    if not 0 <= row < len(run["rows"]):
        raise RunNotFoundError(f"Run {head} has rows 1 to {len(run['rows'])}, not {tail}.")
    return RunSide(run, row, log.outcomes(run["id"], row))


def _keyed(outcomes: list[dict]) -> dict[tuple, dict]:
    keyed, seen = {}, {}
    for outcome in outcomes:
        key = (outcome["query"], tuple(outcome["documents"]))
        seen[key] = seen.get(key, 0) + 1
        keyed[(*key, seen[key])] = outcome
    return keyed


def pair_outcomes(a: list[dict], b: list[dict]) -> tuple[list[tuple[dict, dict]], int, int]:
    """Return the kept outcomes of the questions both lists hold, paired (A's order), and the counts only A and
    only B hold."""
    kept = _keyed(a), _keyed(b)
    shared = [key for key in kept[0] if key in kept[1]]
    return [(kept[0][key], kept[1][key]) for key in shared], len(kept[0]) - len(shared), len(kept[1]) - len(shared)


def compare_runs(log: RunLog, a: str, b: str) -> RunComparison:
    """Return B minus A over the questions both runs ran: means, per-question changes, the paired test per metric."""
    sides = parse_side(log, a), parse_side(log, b)
    pairs, only_a, only_b = pair_outcomes(sides[0].outcomes, sides[1].outcomes)
    if not pairs:
        raise QuerySetError(f"Runs {sides[0].name} and {sides[1].name} share no question (or their outcomes were not "
                            "kept); compare runs of the same query set.")
    ks = tuple(k for k in sides[0].run["settings"]["ks"] if k in sides[1].run["settings"]["ks"])
    names = [n for n in pairs[0][0]["values"] if n in pairs[0][1]["values"] and int(n.split("@")[1]) in ks]
    if not ks or not names:
        raise QuerySetError(f"Runs {sides[0].name} and {sides[1].name} share no k; measure both at one k.")
    values = {n: (np.array([x["values"][n] for x, _ in pairs]), np.array([y["values"][n] for _, y in pairs]))
              for n in names}
    means_a, means_b = ({n: float(v[i].mean()) for n, v in values.items()} for i in (0, 1))
    comparison = EvaluationComparison(
        ks, means_a, means_b, {n: means_b[n] - means_a[n] for n in names},
        tuple(_delta(x, y, ks[-1]) for x, y in pairs),
        {n: paired_difference(*values[n]) for n in names})
    return RunComparison(*sides, comparison, only_a, only_b)


def _delta(a: dict, b: dict, k: int) -> QueryDelta:
    rank_a, rank_b = (o["rank"] if o["rank"] is not None and o["rank"] <= k else None for o in (a, b))
    order = [float("inf") if r is None else r for r in (rank_a, rank_b)]
    change = "same" if rank_a == rank_b else "better" if order[1] < order[0] else "worse"
    comparable = a["score"] is not None and b["score"] is not None and a["score_kind"] == b["score_kind"]
    deltas = {n: b["values"][n] - a["values"][n] for n in quality(a["values"]) if n.endswith(f"@{k}")
              and n in b["values"]}
    return QueryDelta(a["query"], a["line"], rank_a, rank_b, a["score"], b["score"],
                      b["score"] - a["score"] if comparable else None, change, deltas)
