"""The kept runs: one SQLite file `runs.sqlite` in the data folder, beside the embedded Qdrant folder (for a
Qdrant server: in the data root, RAG_DATA_ROOT). Several processes may share it (the app and the CLI); each
call opens its own connection, so threads share one RunLog.

Three tables: runs (the run's JSON with its schema version, rag.runs.records), outcomes (one JSON list of
question outcomes per row, read only to compare) and reports (the run's HTML report, compressed). Saving a
run never costs its result: `save_quietly` turns a locked database or a full disk into one warning line.
"""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from rag.errors import RunNotFoundError, RunsDatabaseError
from rag.runs.records import upgrade, upgrade_outcome
from rag.settings import load, runs_file
from rag.store import Store

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, "
    "created_at TEXT NOT NULL, schema INTEGER NOT NULL, data TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS outcomes (run_id INTEGER NOT NULL, row INTEGER NOT NULL, data TEXT NOT NULL, "
    "PRIMARY KEY (run_id, row))",
    "CREATE TABLE IF NOT EXISTS reports (run_id INTEGER PRIMARY KEY, html BLOB NOT NULL)",
)
LARGEST_ID = 2**63 - 1  # SQLite's largest INTEGER: a larger id names no run (and would overflow the query)


def runs_path(path: str | None = None, url: str | None = None) -> Path:
    """Return the runs file of a store named as the CLI names it (--store / --qdrant-url, else RAG_QDRANT_PATH /
    QDRANT_URL), without opening the store."""
    if url or (not path and os.environ.get("QDRANT_URL")):
        return runs_file()
    return runs_file(os.path.abspath(os.path.expanduser(path or load().qdrant_path)))


def runs_path_of(store: Store) -> Path:
    """Return the runs file of an open store: beside its embedded folder, else in the data root."""
    return runs_file(store.location if store.local and store.location != "memory" else None)


class RunLog:
    """The runs kept in one SQLite file (created on the first save)."""

    def __init__(self, path: str | Path, timeout: float = 5.0):
        self.path, self.timeout = Path(path), timeout

    def __repr__(self) -> str:
        return f"RunLog({str(self.path)!r})"

    @contextmanager
    def _database(self, action: str, create: bool = False) -> Iterator[sqlite3.Connection]:
        """Yield a connection for one read or write, committed on success; SQLite and disk errors become ours."""
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(sqlite3.connect(self.path, timeout=self.timeout)) as db, db:
                for statement in _SCHEMA:
                    db.execute(statement)
                yield db
        except (sqlite3.Error, OSError) as error:
            raise RunsDatabaseError(
                f"The runs database {self.path} could not be {action} ({error}). Free disk space or close the "
                "process that holds it, then try again."
            ) from error

    def save(self, run: dict, outcomes: list[list[dict]], report: str | None = None) -> int:
        """Return the id of the run, kept with its question outcomes (one list per row) and HTML report."""
        with self._database("written", create=True) as db:
            cursor = db.execute("INSERT INTO runs (kind, created_at, schema, data) VALUES (?, ?, ?, ?)",
                                (run["kind"], run["created_at"], run["schema"], json.dumps(run, ensure_ascii=False)))
            run_id = int(cursor.lastrowid)
            db.executemany("INSERT INTO outcomes VALUES (?, ?, ?)",
                           [(run_id, i, json.dumps(o, ensure_ascii=False)) for i, o in enumerate(outcomes)])
            if report is not None:
                db.execute("INSERT INTO reports VALUES (?, ?)", (run_id, zlib.compress(report.encode("utf-8"))))
        return run_id

    def save_quietly(self, run: dict, outcomes: list[list[dict]], report: str | None = None
                     ) -> tuple[int | None, str | None]:
        """Return (id, None) once kept, or (None, a one-line warning) when it could not be: the result stays."""
        try:
            return self.save(run, outcomes, report), None
        except RunsDatabaseError as error:
            return None, f"this run was not kept: {error}"

    def runs(self) -> list[dict]:
        """Return every kept run in today's shape (rag.runs.records.upgrade) with its "id", newest first; a damaged
        one is left out."""
        if not self.path.exists():
            return []
        with self._database("read") as db:
            rows = db.execute("SELECT id, data, id IN (SELECT run_id FROM reports) FROM runs ORDER BY id DESC")
            parsed = [(run_id, _parse(data), report) for run_id, data, report in rows.fetchall()]
        return [upgrade(run) | {"id": run_id, "has_report": bool(report)} for run_id, run, report in parsed if run]

    def run(self, run_id: int) -> dict:
        """Return one kept run; RunNotFoundError when there is none with that id."""
        self._check_id(run_id)
        found = self._select("SELECT data FROM runs WHERE id = ?", run_id)
        run = _parse(found[0][0]) if found else None
        if run is None:
            raise self._missing(run_id)
        return upgrade(run) | {"id": run_id}

    def outcomes(self, run_id: int, row: int) -> list[dict]:
        """Return the question outcomes of one row of a run ([] when they were not kept)."""
        self._check_id(run_id)
        found = self._select("SELECT data FROM outcomes WHERE run_id = ? AND row = ?", run_id, row)
        return [upgrade_outcome(o) for o in json.loads(found[0][0])] if found else []

    def report(self, run_id: int) -> str | None:
        """Return the run's HTML report, or None when none was kept with it."""
        if not 0 < run_id <= LARGEST_ID:
            return None
        found = self._select("SELECT html FROM reports WHERE run_id = ?", run_id)
        return zlib.decompress(found[0][0]).decode("utf-8") if found else None

    def delete(self, run_id: int) -> None:
        """Delete a run with its outcomes and report; RunNotFoundError when there is none with that id."""
        self._check_id(run_id)
        if not self.path.exists():
            raise self._missing(run_id)
        with self._database("written") as db:
            if not db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount:
                raise self._missing(run_id)
            db.execute("DELETE FROM outcomes WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM reports WHERE run_id = ?", (run_id,))

    def _select(self, sql: str, *params) -> list[tuple]:
        if not self.path.exists():
            return []
        with self._database("read") as db:
            return db.execute(sql, params).fetchall()

    def _check_id(self, run_id: int) -> None:
        """Raise RunNotFoundError for an id no SQLite row can have (0, negative, or past LARGEST_ID)."""
        if not 0 < run_id <= LARGEST_ID:
            raise self._missing(run_id)

    def _missing(self, run_id: int) -> RunNotFoundError:
        """Return the error for a run that is not there (or not readable: a row another program damaged)."""
        return RunNotFoundError(f"There is no run {run_id} in {self.path}. List the kept runs with `rag runs`.")


def _parse(data: str) -> dict | None:
    """Return a kept run's JSON, or None when it is damaged (edited by hand, cut by a crash): it is left out."""
    try:
        run = json.loads(data)
    except (json.JSONDecodeError, TypeError):
        return None
    return run if isinstance(run, dict) else None
