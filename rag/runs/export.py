"""A kept run as a file: `rag runs export RUN --out FILE` writes one, so a CI baseline can live in the repository
the job checks out; `--baseline FILE` and `rag runs compare FILE ...` read it as they read a kept run.

The file is JSON, {"format": "rag-lab-run", "version": 1, "exported_at", "source": {"run", "row"}, "run",
"outcomes"}: "run" the kept run as rag.runs.records keeps it (settings with the query set's version, rows with
metrics, "best") and "outcomes" one list of question outcomes per row ({"query", "line", "documents", "rank",
"score", "score_kind", "values": {metric: value}}), everything the paired test needs. RUN "7" exports a run whole
(its best row is what a baseline compares with), "7/3" row 3 of a sweep alone. A file is checked whole when it is
read: anything else is one line (RunFileError) that says what to do.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from pathlib import Path

from rag.errors import RunFileError, RunNotFoundError
from rag.runs.db import RunLog
from rag.runs.records import upgrade, upgrade_outcome

FORMAT = "rag-lab-run"
VERSION = 1  # what this code writes; a file of a later version is refused with the reason
MAX_BYTES = 256 * 1024 * 1024  # a run of 100,000 questions is some 30 MB
RUN_ID = re.compile(r"\s*[0-9]+(/[0-9]+)?\s*")  # "7" or "7/3"; anything else is a run file's path
METRIC_NAME = re.compile(r"[a-z]+@[1-9][0-9]{0,5}")  # "mrr@10"


def export_run(log: RunLog, text: str) -> dict:
    """Return the file's JSON of the kept run "ID" (whole) or "ID/ROW" (that row alone); RunNotFoundError if none."""
    if not RUN_ID.fullmatch(str(text)):
        raise RunNotFoundError(f"'{text}' names no kept run: write a run id such as 7, or 7/3 for row 3 of sweep 7 "
                               "(`rag runs` lists them).")
    head, _, tail = str(text).strip().partition("/")
    run = log.run(int(head))
    if tail and not 1 <= int(tail) <= len(run["rows"]):
        raise RunNotFoundError(f"Run {head} has rows 1 to {len(run['rows'])}, not {tail}.")
    outcomes = [log.outcomes(run["id"], i) for i in range(len(run["rows"]))]
    if not any(outcomes[int(tail) - 1] if tail else outcomes):
        raise RunNotFoundError(f"Run {text} kept no question outcomes, so it cannot be a baseline; evaluate again.")
    return export_data(run, outcomes, int(tail) - 1 if tail else None)


def export_data(run: dict, outcomes: list[list[dict]], row: int | None) -> dict:
    """Return the file's JSON of a kept run (with its "id"): the whole run, or only row (0-based) of it; no local
    path is written (the file is meant to be committed)."""
    kept = {k: v for k, v in run.items() if k not in ("id", "has_report")}
    if row is not None:
        kept |= {"rows": [run["rows"][row]], "best": 0}
        outcomes = [outcomes[row]]
    return {"format": FORMAT, "version": VERSION, "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "source": {"run": run["id"], "row": None if row is None else row + 1},
            "run": kept, "outcomes": outcomes}


def read_export(path: str | Path) -> tuple[dict, list[list[dict]], str]:
    """Return (run with its "id", outcomes per row, how the source is named, e.g. "7/3") of a run file;
    RunFileError in one line when it is missing, unreadable or not a run file."""
    file = Path(path)
    try:
        if file.stat().st_size > MAX_BYTES:
            raise _bad(file, f"it holds more than {MAX_BYTES // 2**20} MB")
        data = json.loads(file.read_bytes())
    except FileNotFoundError:
        raise RunFileError(f"{path}: no such run file. Give a kept run's id (`rag runs` lists them) or a file "
                           "`rag runs export RUN --out FILE` wrote.") from None
    except IsADirectoryError:
        raise RunFileError(f"{path} is a folder; give a file `rag runs export` wrote.") from None
    except OSError as error:
        raise RunFileError(f"{path}: cannot read it ({error.strerror}).") from None
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise _bad(file, f"not JSON: {str(error).splitlines()[0][:80]}") from None
    run, outcomes, source = _checked(file, data)
    name = str(source["run"]) + (f"/{source['row']}" if source.get("row") else "")
    return upgrade(run) | {"id": source["run"]}, [[upgrade_outcome(o) for o in row] for row in outcomes], name


def _bad(file: Path, why: str) -> RunFileError:
    return RunFileError(f"{file} is not a run file of `rag runs export` ({why}); export the run again with "
                        f"`rag runs export RUN --out {file.name}`.")


def _checked(file: Path, data) -> tuple[dict, list[list[dict]], dict]:
    """Return the run, outcomes and source of a file's JSON after checking their shape; RunFileError if wrong."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _bad(file, f'no "format": "{FORMAT}"')
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _bad(file, '"version" is not a whole number')
    if version > VERSION:
        raise RunFileError(f"{file} was written by a newer RAG Lab (run file version {version}; this one reads "
                           f"up to {VERSION}): update RAG Lab, or export the run again with this one.")
    run, outcomes, source = data.get("run"), data.get("outcomes"), data.get("source")
    if not isinstance(source, dict) or not _whole(source.get("run")):
        raise _bad(file, '"source" names no run id')
    if why := _run_fault(run):
        raise _bad(file, f'"run" {why}')
    if not isinstance(outcomes, list) or len(outcomes) != len(run["rows"]) or \
            not all(isinstance(row, list) for row in outcomes):
        raise _bad(file, '"outcomes" is not one list per row')
    for number, outcome in enumerate((o for row in outcomes for o in row), 1):
        if why := _outcome_fault(outcome):
            raise _bad(file, f"outcome {number} {why}")
    return run, outcomes, source


def _run_fault(run) -> str:
    """Return what is wrong with the kept run of a file, "" when nothing is."""
    if not isinstance(run, dict) or not isinstance(run.get("rows"), list) or not run["rows"] or \
            not all(isinstance(row, dict) for row in run["rows"]):
        return 'has no "rows"'
    settings = run.get("settings") or {}
    ks = settings.get("ks") if isinstance(settings, dict) else None
    if not isinstance(settings, dict) or not isinstance(ks or [], list) or \
            not all(_whole(k) and 1 <= k <= 10**6 for k in ks or []):
        return '"settings" has no list of cut-offs "ks"'
    if not all(_metrics(row.get("metrics", {})) for row in run["rows"]):
        return 'has a row whose "metrics" are not {metric@k: number}'
    return ""


def _metrics(values) -> bool:
    return isinstance(values, dict) and all(isinstance(k, str) and METRIC_NAME.fullmatch(k) and _number(v)
                                            for k, v in values.items())


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _outcome_fault(outcome) -> str:
    """Return what is wrong with one question outcome, "" when nothing is."""
    if not isinstance(outcome, dict) or not isinstance(outcome.get("query"), str):
        return 'has no "query" text'
    if not isinstance(outcome.get("documents", []), list) or \
            not all(isinstance(d, str) for d in outcome.get("documents", [])):
        return '"documents" is not a list of names'
    if not _metrics(outcome.get("values")):
        return '"values" is not {metric@k: number}'
    rank, score = outcome.get("rank"), outcome.get("score")
    if not (rank is None or (_whole(rank) and rank >= 1)) or not (score is None or _number(score)):
        return '"rank" or "score" is not a number'
    return ""
