"""Upstreams' process groups, recorded in the state dir so that a later daemon ends them.

A stdio upstream leads its own process group (``_stdio``), and a daemon that stops ends
each group. A daemon killed outright (``kill -9``, the OOM killer) ends nothing: the
kernel kills each group's leader (``_parent_death``), but what the leader started (``sh
-c``'s command, ``npx``'s node, a server's workers) lives on, re-parented to pid 1. So
while ``recording_groups`` is in force each upstream's group is written down when it is
spawned and struck off once it has been ended, and ``reap_groups``, called by the next
daemon at start before it spawns anything, ends every group still on record.

Invariants:

- Only a group proven to be the one recorded is signalled: its number may have been
  taken by someone else's group since. A record holds the group id (the leader's pid),
  the leader's start time (``/proc/<pid>/stat`` field 22) and the boot it ran in, and a
  random mark the spawn put in the leader's environment (``MCPX_UPSTREAM_GROUP``), which
  its descendants inherit (Jenkins' ProcessTreeKiller finds strays the same way). The
  group is the recorded one if its leader lives with that start time; or, the leader
  gone (as the parent-death signal leaves it), if a member carries the mark. A group id
  cannot be reused while any member lives, so those members are all the group's.
- A group gets SIGTERM, then SIGKILL once ``_TERM_GRACE`` has passed with members left.
  One log line per group ended. Records are removed once read, ended or not.
- Recording never fails a spawn: a record that cannot be written (a full disk) is
  logged, and that upstream has only the parent-death signal to end it.
- Off Linux (no ``/proc``) nothing is recorded and nothing is reaped.

One small file per group, not a table in the state dir's SQLite: each is written once at
a spawn and removed once at an end, with nothing to query and no transaction to share;
a file needs no connection opened below the daemon, a crash mid-write spoils at most the
one record it was writing (unreadable: dropped), and the state dir's databases stay the
questions' and the tasks'.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import signal
import sys
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["GroupRecord", "next_record", "reap_groups", "recording_groups"]

log = logging.getLogger("mcpx.transport")

MARK: Final = "MCPX_UPSTREAM_GROUP"
_TERM_GRACE: Final = 2.0  # after SIGTERM: time before SIGKILL
_KILL_GRACE: Final = 2.0  # after SIGKILL: time for the kernel to finish them
_POLL: Final = 0.02
_PROC: Final = Path("/proc")
_BOOT_ID: Final = _PROC / "sys/kernel/random/boot_id"

_directory: ContextVar[Path | None] = ContextVar("mcpx_upstream_groups", default=None)


@contextlib.contextmanager
def recording_groups(directory: Path) -> Iterator[None]:
    """Record each stdio upstream spawned in this context (and the tasks and event loops
    started from it) in ``directory``, made 0700 if missing."""
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:  # a full disk: the parent-death signal is all there is
        log.warning("cannot record upstream process groups in %s: %s", directory, exc)
    usable = _PROC.is_dir() and directory.is_dir()
    token = _directory.set(directory if usable else None)
    try:
        yield
    finally:
        _directory.reset(token)


@dataclass
class GroupRecord:
    """One upstream's record: ``env`` goes into its environment, ``started`` writes the
    record once the process exists, ``ended`` removes it once its group is ended."""

    directory: Path
    mark: str
    path: Path | None = None

    @property
    def env(self) -> dict[str, str]:
        return {MARK: self.mark}

    def started(self, pid: int) -> None:
        stat = _stat(pid)
        doc = {"pgid": pid, "start": stat[1] if stat else None, "boot": _boot(), "mark": self.mark}
        path = self.directory / str(pid)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, json.dumps(doc).encode())
            finally:
                os.close(fd)
        except OSError as exc:
            path.unlink(missing_ok=True)
            log.warning("cannot record upstream process group %d in %s: %s", pid, path, exc)
            return
        self.path = path

    def ended(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self.path = None


def next_record() -> GroupRecord | None:
    """A record for the upstream about to be spawned; None unless ``recording_groups``."""
    directory = _directory.get()
    return None if directory is None else GroupRecord(directory, secrets.token_hex(16))


def reap_groups(directory: Path) -> int:
    """End every process group recorded in ``directory`` that is still the recorded one
    (see the module docstring) and clear the records; how many groups were ended.

    Blocks for at most ``_TERM_GRACE + _KILL_GRACE`` seconds, and only when there are
    groups to end. Call it holding the state dir's lock, before spawning any upstream.
    """
    if not sys.platform.startswith("linux") or not directory.is_dir():
        return 0
    found: dict[int, list[int]] = {}
    for path in sorted(directory.iterdir()):
        record = _read(path)
        with contextlib.suppress(OSError):
            path.unlink()
        if record is not None:
            members = _members(record)
            if members:
                found[record.pgid] = members
    for pgid, members in found.items():
        names = sorted({_name(pid) for pid in members})
        log.warning(
            "ending upstream process group %d, left running by a daemon that did not "
            "stop: %d process(es) (%s)",
            pgid,
            len(members),
            ", ".join(names),
        )
    _end(list(found))
    return len(found)


@dataclass(frozen=True)
class _Record:
    pgid: int
    start: int | None
    boot: str
    mark: str


def _read(path: Path) -> _Record | None:
    try:
        doc = json.loads(path.read_bytes())
        record = _Record(int(doc["pgid"]), doc["start"], str(doc["boot"]), str(doc["mark"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # half written when its daemon died: nothing it names can be trusted
    if record.pgid <= 1 or record.boot != _boot() or not record.mark:
        return None  # the machine rebooted since: the group went with it
    return record


def _members(record: _Record) -> list[int]:
    """The live members of the recorded group, or [] if it is gone or not the one."""
    members = [pid for pid, (pgrp, _) in _processes().items() if pgrp == record.pgid]
    leader = _stat(record.pgid)
    if leader is not None and leader[0] == record.pgid:
        return members if record.start is not None and leader[1] == record.start else []
    marked = f"{MARK}={record.mark}".encode()
    return members if any(marked in _environ(pid) for pid in members) else []


def _end(groups: list[int]) -> None:
    for signum, grace in ((signal.SIGTERM, _TERM_GRACE), (signal.SIGKILL, _KILL_GRACE)):
        groups = [g for g in groups if _alive(g)]
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signum)
        deadline = time.monotonic() + grace
        while groups and time.monotonic() < deadline:
            time.sleep(_POLL)  # plain processes, not ours to wait on: polled, bounded
            groups = [g for g in groups if _alive(g)]


def _alive(pgid: int) -> bool:
    # A zombie is over: it waits only for pid 1 to reap it.
    return any(pgrp == pgid for pgrp, _ in _processes().values())


def _processes() -> dict[int, tuple[int, int]]:
    """Every live (not zombie) process: pid -> (process group, start time)."""
    out: dict[int, tuple[int, int]] = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                out[int(entry.name)] = stat
    return out


def _stat(pid: int) -> tuple[int, int] | None:
    """(process group, start time) of a live process; None if gone or a zombie."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The name (field 2) may hold spaces and parentheses: split after its last ")".
    fields = text.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[2]), int(fields[19])  # fields 5 and 22


def _environ(pid: int) -> list[bytes]:
    try:
        return (_PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return []


def _name(pid: int) -> str:
    try:
        return (_PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return "?"


def _boot() -> str:
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return ""
