"""The index build's child process: it ends with its parent, and a lock says its work folder is still in use.

A kill -9 of `rag index` (or of the app) runs no cleanup: without help, the niced child would go on building in its
`.index-*` copy for minutes, and the next open of the store would remove that folder under it. So:

- the parent takes an flock on LOCK_FILE in the work folder and hands that same open file to the child (pass_fds):
  the lock is held while the parent or the child lives, and the kernel drops it when both are gone. An open of the
  store removes a leftover `.index-*` folder only when it can take that lock (in_use);
- the child's first lines (BOOT, before any import of rag) ask the kernel to kill it when its parent dies
  (PR_SET_PDEATHSIG through prctl on Linux: it works even while the engine holds the GIL for the whole build), then
  check that its parent is still the one that started it (else the parent died before the prctl); as a portable
  fallback a thread waits for the end of stdin, a pipe whose other end only the parent holds (watch_parent).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from typing import IO

LOCK_FILE = "build.lock"
PR_SET_PDEATHSIG = 1  # linux/prctl.h
ORPHANED = 3  # the child's exit code when its parent is gone


# The child's first lines, before any import of rag (rag.store alone takes seconds to import on a busy machine, and
# a parent killed meanwhile must take the child along): ask for PR_SET_PDEATHSIG, check the parent, run the module.
BOOT = f"""import ctypes, os, signal, sys
parent, module = int(sys.argv[1]), sys.argv[2]
if sys.platform.startswith("linux"):
    try:
        ctypes.CDLL(None, use_errno=True).prctl({PR_SET_PDEATHSIG}, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
if os.getppid() != parent:
    os._exit({ORPHANED})
import runpy
sys.argv = [module, *sys.argv[3:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def start(module: str, args: list[str], work: str, stdout: IO, stderr: IO, env: dict[str, str]) -> subprocess.Popen:
    """Return the started child `python -m module *args` (through BOOT: it ends with this process), holding work's
    lock with this process (see module); its stdin is a pipe the caller closes once the child has ended."""
    argv = [sys.executable, "-c", BOOT, str(os.getpid()), module, *args]
    with open(os.path.join(work, LOCK_FILE), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=stdout, stderr=stderr, env=env,  # noqa: S603 - our module, our folder
                                pass_fds=(lock.fileno(),))  # the child's copy keeps the lock after this close


def in_use(folder: str) -> bool:
    """Return whether a build child (or its parent) still holds folder's lock: the folder must not be removed."""
    path = os.path.join(folder, LOCK_FILE)
    if not os.path.isfile(path):
        return False
    try:
        with open(path) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released by the close
    except BlockingIOError:
        return True
    except OSError:  # gone meanwhile, or unreadable: nobody builds there
        return False
    return False


def watch_parent() -> None:
    """In the child: end this process (exit code ORPHANED) once its parent's pipe on stdin closes (the portable
    fallback of BOOT's PR_SET_PDEATHSIG; it runs whenever the engine lets go of the GIL)."""
    threading.Thread(target=_watch_stdin, name="parent-watchdog", daemon=True).start()


def _watch_stdin() -> None:
    """Wait for the end of stdin (the parent's pipe: it ends when the parent does), then end the process."""
    try:
        while os.read(0, 4096):  # the raw descriptor: a daemon thread inside sys.stdin's buffer would stop the
            pass  # interpreter's shutdown (a fatal error) when the build ends normally
    except OSError:
        pass
    os._exit(ORPHANED)
