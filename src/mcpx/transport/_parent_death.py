"""Upstreams die with the daemon: ``PR_SET_PDEATHSIG``, set in the child between fork and exec.

The daemon ends an upstream's whole process group when it stops (``_stdio``). Killed
(``kill -9``, the OOM killer), it runs nothing more: a hung upstream that reads nothing, so
never sees its stdin close, would live on, re-parented to pid 1, and no later daemon knows
of it. On Linux the kernel sends a process a chosen signal when its parent dies; only the
process itself can ask for that (``prctl``), so it is asked for in the child, after fork,
before exec: it holds even when the daemon dies by SIGKILL, with nothing to clean up.

Choices:

- SIGKILL, not SIGTERM: once the daemon is gone nobody is left to follow a SIGTERM with a
  SIGKILL, and a server hung badly enough to need this may well not act on SIGTERM either.
  The graceful end comes at the same moment anyway: the upstream's stdin reaches EOF.
- ``preexec_fn`` rather than a wrapper command (``python -c 'prctl(…); os.execvp(…)'``),
  which would cost a Python start per upstream. ``preexec_fn`` is unsafe in general in a
  process with threads (the daemon has some: asyncio's child watcher, the resolver's,
  anyio's workers): the child is a copy holding only the forking thread, and a lock
  another thread held at the fork stays held for good. The callable here takes none: it
  calls ``prctl`` through a ctypes function resolved at import, in the parent, then
  ``os.getppid`` and perhaps ``os._exit``; it imports, logs and allocates nothing worth
  a lock (CPython documents the general risk; this is the narrow case it allows).
- The race: if the parent dies between the fork and ``prctl``, no signal will ever come.
  So after ``prctl`` the child checks that its parent is still the process that forked
  it, and exits if not.
- The signal fires when the *thread* that forked dies, not the process. ``open_stdio``
  spawns from the event loop's thread (asyncio's and uvloop's ``subprocess_exec`` fork
  right there, synchronously), which lasts as long as the daemon. Spawning from a worker
  thread (anyio's end when idle) would kill the upstream with that thread.
- Only the direct child: the setting is not inherited across fork, so a grandchild
  (``npx`` → ``node``) is not covered. It is in the child's process group, which is on
  record in the state dir (``_groups``): the next daemon ends it at start.
- It survives exec, except of a set-user-ID or set-group-ID program (the kernel clears it).
- Off Linux there is no such call: ``die_with_parent`` gives None (no ``preexec_fn``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable
from typing import Final

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG: Final = 1  # <linux/prctl.h>
_SIGNAL: Final = int(signal.SIGKILL)
_ORPHANED: Final = 1  # the exit status of a child whose parent died before the tie


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # a libc without prctl: nothing to tie with
        return None
    ulong = ctypes.c_ulong
    prctl.argtypes = (ctypes.c_int, ulong, ulong, ulong, ulong)
    prctl.restype = ctypes.c_int
    return prctl


_PRCTL: Final = _load_prctl()


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child killed when this process dies; None off Linux.

    Call it in the thread that spawns, just before spawning (see the module docstring).
    In the child it raises ``OSError`` if ``prctl`` fails (the spawn then fails with
    ``subprocess.SubprocessError``), and exits at once if this process is already gone.
    """
    prctl = _PRCTL
    if prctl is None:
        return None
    parent = os.getpid()

    def tie() -> None:  # in the child, between fork and exec: no locks, no imports
        if prctl(_PR_SET_PDEATHSIG, _SIGNAL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:
            os._exit(_ORPHANED)  # the parent died before the tie: nothing would end us

    return tie
