"""The daemon's SQLite files in the state directory (questions, tasks).

Invariants: a file is created 0600 before SQLite opens it, and kept 0600, since what it
holds (questions, results) may carry secrets; the journal is WAL, so a reader never waits
for a writer; autocommit (``isolation_level=None``): transactions are explicit.

A write the disk has no room for (SQLite's ``SQLITE_FULL``, or ``SQLITE_IOERR_SHMSIZE``
for the WAL index) raises ``StateDiskFull``, naming the state dir, and says so in the
log: once a minute per state dir, not once per write. SQLite leaves the file as it was
before the failed transaction; reads go on.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Final

__all__ = ["StateDiskFull", "open_state_db"]

log = logging.getLogger("mcpx.state")

_WARN_EVERY: Final = 60.0
# SQLite's ways of saying there is no room: a page that cannot be written, and the WAL
# index (``-shm``, which a connection must grow before its first read) that cannot grow.
_NO_ROOM: Final = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR_SHMSIZE})
_warned: dict[Path, float] = {}


class StateDiskFull(Exception):
    """A state file could not be written: the state dir's disk is full."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"the state dir's disk is full ({path.parent}): {path.name} cannot be written "
            "until there is room there"
        )
        self.path = path


class _StateDb(sqlite3.Connection):
    path: Path

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode not in _NO_ROOM:
                raise
            _warn(self.path)
            raise StateDiskFull(self.path) from exc


def _warn(path: Path) -> None:
    now = time.monotonic()
    if now - _warned.get(path.parent, -_WARN_EVERY) >= _WARN_EVERY:
        _warned[path.parent] = now
        log.warning(
            "the state dir's disk is full (%s): writes to %s fail, and calls that must "
            "store a question or a task are refused (507) until there is room",
            path.parent,
            path.name,
        )


def open_state_db(path: Path) -> sqlite3.Connection:
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    os.chmod(path, 0o600)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, factory=_StateDb)
    db.path = path
    db.execute("PRAGMA journal_mode=WAL")
    return db
