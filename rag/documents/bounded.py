"""A PDF is read in a child process with a memory limit and a timeout, so no file can take the app or the CLI down.

The checks of rag.documents.expansion stop the bombs they can see (a page whose content holds more text than
RAG_MAX_CHARS allows) before pdfium reads that page; this is the guard for every other kind. The reading process
forks (a fork costs milliseconds; a fresh interpreter would import pdfium, pypdf and rag for about a second), and
the child
- is ended by the kernel when its parent dies (PR_SET_PDEATHSIG), keeps no descriptor of its parent's but the
  pipe it answers through, and takes the default action on SIGINT and SIGTERM (not its parent's handlers);
- may map `memory` bytes beyond what it has at the fork (RLIMIT_AS): past that an allocation fails, Python raises
  MemoryError and pdfium aborts, so the read ends instead of the machine's memory;
- sends its progress and then its result (or its error) through the pipe.
The parent relays the progress (what the callback raises, e.g. a Cancel, ends the child), waits at most
SILENT_SECONDS for each message, and turns a child that died or stayed silent into one DocumentError. It forks
holding `lock` (pdfium's), so no thread of this process is inside pdfium while it forks.

Where fork or RLIMIT_AS is missing (Windows, macOS), the read runs in this process with the character checks only.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import signal
import sys
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from rag.errors import CorruptDocumentError, DocumentTooLargeError

try:  # imported here, not in a child: a fork while another thread imports a module leaves that import locked there
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

T = TypeVar("T")
Progress = Callable[[int, int], None]
ISOLATED = sys.platform.startswith("linux") and hasattr(os, "fork") and resource is not None
BASE_MEMORY = 1 << 30  # bytes a read may map beyond its parent's: pdfium, pypdf, pages of ordinary size
SILENT_SECONDS = 120.0  # a read that sends nothing for this long (no 10 pages done) is stopped
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def memory_limit(size: int, max_chars: int) -> int:
    """Return the bytes a read of a file of size bytes may map: BASE_MEMORY, four copies of the file (pdfium's and
    pypdf's parse of it) and 16 bytes for each character the document may hold (its text, cleaned, and sent)."""
    return BASE_MEMORY + 4 * size + 16 * max_chars


def run(read: Callable[[Progress], T], name: str, memory: int, lock: AbstractContextManager,
        progress: Progress | None = None, modules: tuple[str, ...] = ()) -> T:
    """Return read(progress) run in a child process that may map `memory` more bytes and must report every
    SILENT_SECONDS; raise what read raises, or DocumentTooLargeError / CorruptDocumentError when the child ran out
    of memory, stayed silent or crashed. progress(done, pages) is called here, and what it raises stops the child.
    modules (those that can be) are imported here first, so that no child spends its time importing them."""
    if not ISOLATED:
        return read(progress or _ignore)
    for module in modules:
        with contextlib.suppress(ImportError):  # e.g. no pypdfium2 wheel: the read does without it
            importlib.import_module(module)
    receiver_fd, sender_fd = os.pipe()
    with lock:
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _child(sender_fd, read, memory)
        os.close(sender_fd)  # inside the lock: a child forked later by another thread cannot hold the pipe open
    receiver = Connection(receiver_fd, writable=False)
    died = None
    try:
        return _receive(receiver, name, progress)
    except (EOFError, MemoryError):  # died without a word (pdfium aborts when an allocation fails), or said so
        died = _reap(pid)
        raise _died(name, memory, died) from None
    finally:
        receiver.close()
        if died is None:
            _reap(pid)


def _receive(receiver: Connection, name: str, progress: Progress | None) -> Any:
    """Return the child's result; raise its error (MemoryError when it ran out), EOFError when it died, and
    DocumentTooLargeError when it stayed silent."""
    while True:
        if not receiver.poll(SILENT_SECONDS):
            raise DocumentTooLargeError(
                f"Reading '{name}' was stopped after {SILENT_SECONDS:g} s without progress: it expands to far more "
                "than its size suggests, or it is damaged. Split it into smaller files or export it again.",
                name,
            )
        kind, *rest = receiver.recv()
        if kind == "progress":
            if progress is not None:
                progress(*rest)
        elif kind == "done":
            return rest[0]
        else:
            error, where = rest
            if not isinstance(error, DocumentTooLargeError | CorruptDocumentError | MemoryError) and where:
                error.add_note(f"in the child process that read '{name}':\n{where}")
            raise error


def _died(name: str, memory: int, number: int) -> Exception:
    """Return the error for a child that ran out of memory (MemoryError, pdfium's abort) or crashed otherwise."""
    if number in (0, signal.SIGABRT, signal.SIGKILL):  # 0: MemoryError before the child could say more
        return DocumentTooLargeError(
            f"'{name}' needs more than {memory / 1024 ** 3:.1f} GB of memory to read: it expands to far more than "
            "its size suggests. Split it into smaller files or export it again (raising RAG_MAX_CHARS also raises "
            "the memory a read may use).",
            name,
        )
    return CorruptDocumentError(
        f"The PDF reader crashed on '{name}' (signal {number}): the file is damaged. "
        "Download or export it again and upload the new file.",
        name,
    )


def _child(sender_fd: int, read: Callable[[Progress], Any], memory: int) -> None:
    """Run read in this forked child within its limits, send what came of it, and exit; never returns."""
    code = 1
    try:
        sender = Connection(sender_fd, readable=False)
        try:
            _prepare(sender_fd, memory)
            message: tuple = ("done", read(lambda done, pages: sender.send(("progress", done, pages))))
        except MemoryError:  # its traceback could not be formatted: the parent knows what it means
            message = ("error", MemoryError(), "")
        except BaseException as error:  # noqa: BLE001 - every error goes to the parent, which raises it
            message = ("error", error, traceback.format_exc())
        try:
            sender.send(message)
        except MemoryError:
            sender.send(("error", MemoryError(), ""))
        except Exception:  # an error that cannot be pickled: its text still reaches the parent
            sender.send(("error", RuntimeError(repr(message[1])), message[-1]))
        code = 0
    finally:
        os._exit(code)


def _prepare(keep_fd: int, memory: int) -> None:
    """Tie this child to its parent's life, drop the parent's descriptors and signal handlers, limit its memory."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):  # no prctl: the child ends at the latest with its read
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the prctl
        os._exit(1)
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)
    os.closerange(3, keep_fd)  # nothing when keep_fd < 3 (a parent without stdin): 0-2 stay anyway
    os.closerange(max(3, keep_fd + 1), _max_fd())
    with open("/proc/self/statm") as statm:  # pages of address space now (the parent's, shared until written)
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mapped + memory if hard == resource.RLIM_INFINITY else min(mapped + memory, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _max_fd() -> int:
    try:
        return max(int(fd) for fd in os.listdir("/proc/self/fd")) + 1
    except (OSError, ValueError):
        return os.sysconf("SC_OPEN_MAX")


def _reap(pid: int) -> int:
    """Return the signal that ended child pid (0 when it exited), after killing it if it still runs."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)  # done or not: it has nothing more to say
    _, status = os.waitpid(pid, 0)
    return os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0


def _ignore(done: int, pages: int) -> None:
    return None
