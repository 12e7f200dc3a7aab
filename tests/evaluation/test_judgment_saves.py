"""Saving judgments: concurrent writers (threads and processes) lose nothing and never share a version number; a
killed writer leaves a whole file with its version entry and no leftovers after the next save; hostile input is
one line; a query set keeps its permission bits and its symlink."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rag.errors import QuerySetError
from rag.evaluation.judges.judging import judgment_of, read_query_file, save_judgments, start_query_set
from rag.evaluation.querysets.queries import Query, load_query_set
from rag.evaluation.querysets.squad import import_squad
from rag.evaluation.querysets.versions import log_path, read_log, record_version, version_of
from tests.evaluation.test_judgments import hit

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ("Wo?", "Wann?", "Wer?")


def save_many(path: Path, writer: int, saves: int, barrier: threading.Barrier | None = None) -> None:
    """Save `saves` judgments, each of its own span (writer and number make it unique), on three questions."""
    if barrier is not None:
        barrier.wait()
    for number in range(saves):
        start = (writer * 1000 + number) * 10
        save_judgments(path, QUESTIONS[number % 3], [judgment_of(hit(start, start + 5), number % 3)])


def assert_nothing_lost(path: Path, judgments: int) -> None:
    _, queries = read_query_file(path)
    spans = {(j.start, j.end) for q in queries for j in q.judgments}
    assert len(spans) == sum(len(q.judgments) for q in queries) == judgments
    versions = read_log(path)
    numbers = [v["version"] for v in versions]
    assert len(numbers) == len(set(numbers)) == judgments  # every save a new version, none shared
    assert version_of(queries, path)["version"] == max(numbers)


def test_threads_saving_at_once_lose_nothing(tmp_path):
    """Two tabs of the app are two threads of one process: each save reads, changes and writes the file."""
    path, writers, saves = tmp_path / "q.jsonl", 4, 12
    barrier = threading.Barrier(writers)
    threads = [threading.Thread(target=save_many, args=(path, w, saves, barrier)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert_nothing_lost(path, writers * saves)


WRITER = """
import sys, threading, time
from pathlib import Path
from tests.evaluation.test_judgment_saves import save_many
path, process, threads, saves, folder = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), \
    Path(sys.argv[5])
(folder / f"ready-{process}").touch()
while not (folder / "go").exists():  # every process starts saving at once
    time.sleep(0.005)
workers = [threading.Thread(target=save_many, args=(path, process * threads + t, saves)) for t in range(threads)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
"""


@pytest.mark.slow
def test_two_processes_of_several_threads_lose_nothing(tmp_path):
    """The app beside `rag judge --llm`, or two CLI runs: processes of threads, all saving into one query set."""
    path, processes, threads, saves = tmp_path / "q.jsonl", 2, 3, 12
    children = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(p), str(threads), str(saves),
                                  str(tmp_path)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
                for p in range(processes)]
    while not all((tmp_path / f"ready-{p}").exists() for p in range(processes)):
        assert all(child.poll() is None for child in children), [c.stderr.read() for c in children]
        threading.Event().wait(0.005)
    (tmp_path / "go").touch()
    for child in children:
        assert child.wait(timeout=300) == 0, child.stderr.read()
    assert_nothing_lost(path, processes * threads * saves)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_dead_writers_temporary_file_is_removed_by_the_next_save(tmp_path):
    path = tmp_path / "q.jsonl"
    save_judgments(path, "Wo?", [judgment_of(hit(0, 100), 2)])
    (tmp_path / ".q.jsonl.dead1234.tmp").write_text("half", encoding="utf-8")  # a writer killed mid-write
    (tmp_path / ".q.jsonl.x.alive567.tmp").write_text("", encoding="utf-8")  # another query set's (q.jsonl.x)
    save_judgments(path, "Wo?", [judgment_of(hit(100, 200), 1)])
    assert leftovers(tmp_path) == [".q.jsonl.x.alive567.tmp"]


def test_a_half_written_version_line_does_not_swallow_the_next(tmp_path):
    path = tmp_path / "q.jsonl"
    save_judgments(path, "Wo?", [judgment_of(hit(0, 100), 2)])
    with open(log_path(path), "a", encoding="utf-8") as log:
        log.write('{"version": 2, "hash": "ab')  # a writer killed in the middle of its entry
    saved = save_judgments(path, "Wo?", [judgment_of(hit(100, 200), 1)])
    assert [v["version"] for v in read_log(path)] == [1, 2] and saved.version["version"] == 2
    assert version_of(read_query_file(path)[1], path)["version"] == 2


def test_version_numbers_never_repeat_after_lines_are_lost(tmp_path):
    path = tmp_path / "q.jsonl"
    for start in (0, 100, 200):
        save_judgments(path, "Wo?", [judgment_of(hit(start, start + 100), 2)])
    lines = log_path(path).read_text(encoding="utf-8").splitlines()
    log_path(path).write_text("\n".join([lines[0], lines[2]]) + "\n", encoding="utf-8")  # version 2 is gone
    saved = save_judgments(path, "Wo?", [judgment_of(hit(300, 400), 2)])
    assert saved.version["version"] == 4 and [v["version"] for v in read_log(path)] == [1, 3, 4]


def test_a_question_of_undecodable_bytes_is_one_line_and_nothing_is_written(tmp_path):
    """A shell hands `rag judge $'Wo\\xff?'` to Python as a lone surrogate, which UTF-8 cannot encode."""
    path = tmp_path / "q.jsonl"
    with pytest.raises(QuerySetError, match=r"not UTF-8 text \(character 3\)"):
        save_judgments(path, "Wo\udcff?", [judgment_of(hit(0, 100), 2)])
    assert list(tmp_path.iterdir()) in ([], [tmp_path / ".q.jsonl.lock"])


def test_a_user_name_of_undecodable_bytes_is_kept_in_the_version_log(tmp_path):
    path = tmp_path / "q.jsonl"
    entry = record_version(path, [Query("Wo?", ("a.md",))], by="J\udcfcrgen")
    assert read_log(path) == [entry] and entry["by"] == "J\udcfcrgen"


def test_a_deeply_nested_query_set_is_one_line(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    for text in ('{"query": "Wo?", "document": ' + deep + "}", "[" * 100_000):
        with pytest.raises(QuerySetError, match="q.jsonl line 1: nested too deeply"):
            load_query_set(text, "q.jsonl")
    with pytest.raises(QuerySetError, match="nested too deeply"):
        import_squad("[" * 100_000, "squad.json")
    path = tmp_path / "q.jsonl"
    save_judgments(path, "Wo?", [judgment_of(hit(0, 100), 2)])
    with open(log_path(path), "a", encoding="utf-8") as log:
        log.write("[" * 100_000 + "\n")
    assert [v["version"] for v in read_log(path)] == [1]


def test_a_judged_query_set_keeps_its_mode_and_its_symlink(tmp_path):
    target, link = tmp_path / "sets" / "real.jsonl", tmp_path / "q.jsonl"
    target.parent.mkdir()
    target.write_text('{"query": "Wo?", "document": "doc.md"}\n', encoding="utf-8")
    target.chmod(0o644)
    link.symlink_to(target)
    saved = save_judgments(link, "Wo?", [judgment_of(hit(0, 100), 2)])
    assert link.is_symlink() and stat.S_IMODE(target.stat().st_mode) == 0o644
    _, queries = read_query_file(target)
    assert len(queries[0].judgments) == 1 and version_of(queries, link)["version"] == saved.version["version"]
    target.chmod(0o640)
    save_judgments(link, "Wo?", [judgment_of(hit(100, 200), 1)])
    assert stat.S_IMODE(target.stat().st_mode) == 0o640 and leftovers(target.parent) == []


def test_a_new_query_set_gets_the_umask_mode(tmp_path):
    mask = os.umask(0o022)
    try:
        save_judgments(tmp_path / "q.jsonl", "Wo?", [judgment_of(hit(0, 100), 2)])
        start_query_set(tmp_path / "s.jsonl", [Query("Wo?", ("doc.md",))])
    finally:
        os.umask(mask)
    assert [stat.S_IMODE((tmp_path / n).stat().st_mode) for n in ("q.jsonl", "s.jsonl")] == [0o644, 0o644]


# ---- killed writers ---------------------------------------------------------------------------------------------

KILLED_AT = """
import os, signal, sys
from pathlib import Path
from tests.evaluation.test_judgment_saves import save_many
replace = os.replace
def replaced_then_killed(source, destination):  # the new file is in place: die before anything else
    replace(source, destination)
    if str(destination).endswith("q.jsonl"):
        os.kill(os.getpid(), signal.SIGKILL)
os.replace = replaced_then_killed
save_many(Path(sys.argv[1]), 1, 1)
"""


@pytest.mark.crash
def test_a_writer_killed_right_after_the_file_was_replaced_left_its_version(tmp_path):
    path = tmp_path / "q.jsonl"
    save_many(path, 0, 3)
    done = subprocess.run([sys.executable, "-c", KILLED_AT, str(path)], cwd=ROOT, timeout=120)
    assert done.returncode == -signal.SIGKILL
    _, queries = read_query_file(path)
    assert sum(len(q.judgments) for q in queries) == 4
    assert version_of(queries, path)["version"] == 4


SAVING = """
import sys
from pathlib import Path
from tests.evaluation.test_judgment_saves import save_many
path, writer = Path(sys.argv[1]), int(sys.argv[2])
print("saving", flush=True)
save_many(path, writer, 10_000)
"""


@pytest.mark.crash
def test_writers_killed_at_random_points_leave_whole_files_with_versions(tmp_path):
    """Kill a saving process (SIGKILL) at random moments: the file is always whole and has its version entry, and
    the next save leaves no temporary file behind."""
    path, draw = tmp_path / "q.jsonl", random.Random(39)
    save_judgments(path, "Wo?", [judgment_of(hit(10**6, 10**6 + 5), 2)])
    for kill in range(1, 9):
        child = subprocess.Popen([sys.executable, "-c", SAVING, str(path), str(kill)], cwd=ROOT,
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "saving\n"
        threading.Event().wait(draw.uniform(0.05, 0.4))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        _, queries = read_query_file(path)  # whole: every line reads
        version = version_of(queries, path)
        assert version["version"] is not None, f"kill {kill}: the file has no version entry"
        assert path.read_bytes().endswith(b"\n")
        save_judgments(path, "Wo?", [judgment_of(hit(10**6 + 10 * kill, 10**6 + 10 * kill + 5), 1)])
        assert leftovers(tmp_path) == [], f"kill {kill}"
    numbers = [v["version"] for v in read_log(path)]
    assert len(numbers) == len(set(numbers))
