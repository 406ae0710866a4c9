"""Keep the platform's memory to itself: every platform process is made non-dumpable.

A process's environment (`SECRET_KEY`, `DATABASE_URL`, …) can be read by any other process of
the same user through /proc/<pid>/environ, and its memory through /proc/<pid>/mem. stdio MCP
servers are children of the platform; where the platform cannot run them as another user
(it does when it runs as root, see tools/mcp/stdio.py), they share its user. A non-dumpable
process (prctl PR_SET_DUMPABLE 0) is readable that way only with CAP_SYS_PTRACE, and leaves
no core dump with secrets in it. The setting survives fork (Celery and gunicorn children) and
is reset by exec (stdio children run their own program, dumpable as usual)."""

import ctypes
import sys

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4


def _prctl(option, value=0):
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(option, value, 0, 0, 0)


def make_non_dumpable() -> bool:
    """Make this process non-dumpable; False where that is not possible (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    return _prctl(PR_SET_DUMPABLE, 0) == 0


def is_dumpable() -> bool:
    if not sys.platform.startswith("linux"):
        return True
    return _prctl(PR_GET_DUMPABLE) != 0
