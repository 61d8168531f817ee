"""Ending a script's whole process tree, and keeping its output within bounds.

Invariants:
- ``kill_tree(pid)`` leaves no process the script started alive that can still be found:
  its process group, and every descendant found through ``/proc`` (one that left the
  group with ``setsid`` too). They are stopped first, so none can fork while the tree is
  walked, then killed. Under bubblewrap the pid namespace makes this total: its init dies,
  and the kernel kills everything inside.
- ``CappedOutput`` keeps at most ``cap`` bytes; the rest is read and dropped, only counted,
  so a script printing a gigabyte costs the daemon ``cap`` bytes of memory.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from typing import Final

_SWEEPS: Final = 100


def _parents() -> dict[int, int]:
    """Every live process's parent, from ``/proc``."""
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                text = stat.read()
        except OSError:
            continue  # ended meanwhile
        # The command name (in parentheses) may hold spaces: the fields follow its last ")".
        fields = text[text.rindex(b")") + 2 :].split()
        found[int(entry)] = int(fields[1])
    return found


def descendants(root: int) -> set[int]:
    """Every process below ``root`` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    out: set[int] = set()
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo.extend(children.get(pid, []))
    return out


def _signal(pid: int, sig: int) -> None:
    # Already gone: nothing to do.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Signal process group ``pgid``, if anybody is left in it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_tree(root: int) -> None:
    """SIGKILL ``root`` (a child of this process, not yet reaped), its process group and
    every descendant."""
    _signal(root, signal.SIGSTOP)
    kill_group(root, signal.SIGSTOP)
    stopped: set[int] = set()
    for _ in range(_SWEEPS):  # until a walk finds nobody new: all are stopped, none forks
        fresh = descendants(root) - stopped
        if not fresh:
            break
        for pid in fresh:
            _signal(pid, signal.SIGSTOP)
        stopped |= fresh
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    kill_group(root)
    _signal(root, signal.SIGKILL)


class CappedOutput:
    """One stream's output: the first ``cap`` bytes kept, the rest counted and dropped;
    ``overflow()`` is called once ``drain_limit`` bytes have been dropped."""

    def __init__(self, cap: int, drain_limit: int, overflow: Callable[[], None]) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.dropped = 0
        self._drain_limit = drain_limit
        self._overflow = overflow

    def add(self, data: bytes) -> None:
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += data[:room]
        before = self.dropped
        self.dropped += max(0, len(data) - max(room, 0))
        if before <= self._drain_limit < self.dropped:
            self._overflow()

    def text(self, stream: str) -> str:
        out = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            if out and not out.endswith("\n"):
                out += "\n"
            out += (
                f"[mcpx: {stream} cut at {self.cap} bytes (exec.maxOutput); "
                f"{self.dropped} more bytes dropped]\n"
            )
        return out
