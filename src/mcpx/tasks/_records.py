"""Tasks on disk: a task outlives the daemon that ran it.

A caller comes back for a task by its id minutes later, perhaps after ``mcpx
restart``, and ``mcpx task list`` shows what ran before it. Every task's row is written
when it starts, at each status change and when it ends, so the caller then gets the
result, or the truth about it: a call the old daemon was still running when it died has
no result, and says so, rather than being an unknown id.

Invariants:

- One row per task, in ``<state>/tasks.db`` (0600: results may carry secrets).
- A row without ``finished`` belongs to the running daemon; the next one to open the
  file marks every such row failed, since the process that ran the call is gone.
- A finished row is forgotten at ``created + ttl``, or ``keep`` seconds after it
  finished when it has no ``ttl``, as in memory.
- A file from an older mcpx opens: the columns it lacks are added (``ALTER TABLE``),
  empty, and read as their defaults.
"""

from __future__ import annotations

import json
import time
from contextlib import suppress
from pathlib import Path
from typing import Any, Final

from mcpx.config import StateDiskFull, open_state_db

__all__ = ["TaskRecords"]

JSON = dict[str, Any]

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    server TEXT NOT NULL,
    what TEXT NOT NULL,
    created REAL NOT NULL,
    status TEXT NOT NULL,
    finished REAL,
    result TEXT,
    error TEXT,
    questions TEXT NOT NULL DEFAULT '[]'
)
"""
# Added after the first schema: an older file gets them, NULL in its rows.
_LATER_COLUMNS: Final = {
    "owner": "TEXT",
    "ttl": "REAL",
    "poll_interval": "REAL",
    "status_message": "TEXT",
    "updated": "REAL",
}
# Every column, in the order rows are written and read.
_COLUMNS: Final = (
    "id",
    "server",
    "what",
    "owner",
    "created",
    "updated",
    "status",
    "status_message",
    "ttl",
    "poll_interval",
    "finished",
    "result",
    "error",
    "questions",
)
_STOPPED: Final = "mcpx stopped before the call finished"
# JSON-RPC's internal error: the call did not end, so there is nothing else to say.
_ENDED_UNFINISHED: Final = {
    "code": -32603,
    "message": f"{_STOPPED} (the daemon was killed or crashed); "
    "the call's result was never received",
}
_FORGOTTEN: Final = (
    "finished IS NOT NULL AND ("
    "(ttl IS NULL AND finished <= :now - :keep) OR (ttl IS NOT NULL AND created + ttl <= :now))"
)


class TaskRecords:
    """The rows of tasks, by id; a row is a dict of ``_COLUMNS`` (``Task.row``)."""

    def __init__(self, path: Path, keep: float) -> None:
        self._keep = keep
        self._db = open_state_db(path)
        self._db.execute(_SCHEMA)
        have = {row[1] for row in self._db.execute("PRAGMA table_info(tasks)")}
        for name, kind in _LATER_COLUMNS.items():
            if name not in have:
                self._db.execute(f"ALTER TABLE tasks ADD COLUMN {name} {kind}")
        now = time.time()
        self._db.execute(
            "UPDATE tasks SET status = 'failed', finished = ?, updated = ?, error = ?, "
            "status_message = ? WHERE finished IS NULL",
            (now, now, json.dumps(_ENDED_UNFINISHED), _STOPPED),
        )
        self.prune(now)

    def close(self) -> None:
        self._db.close()

    def started(self, row: JSON) -> None:
        """A new task's row.

        Raises:
            StateDiskFull: the state dir has no room (the task is then not started).
        """
        self._write(row)

    def changed(self, row: JSON) -> None:
        """A task's row after a status change or its end.

        On a full disk the change stays in memory only (the log says the disk is full):
        an unfinished row stays so, and the next daemon says the call's result was lost.
        """
        with suppress(StateDiskFull):
            self._write(row)

    def load(self, task_id: str) -> JSON | None:
        """The task's row; None if unknown or forgotten."""
        self.prune(time.time())
        found = self._db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM tasks WHERE id = ?", (task_id,)
        ).fetchone()
        return None if found is None else _row(found)

    def rows(self) -> list[JSON]:
        """Every task's row that is not forgotten, newest first."""
        self.prune(time.time())
        found = self._db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM tasks ORDER BY created DESC"
        ).fetchall()
        return [_row(values) for values in found]

    def prune(self, now: float) -> None:
        self._db.execute(f"DELETE FROM tasks WHERE {_FORGOTTEN}", {"now": now, "keep": self._keep})

    def _write(self, row: JSON) -> None:
        values = [row.get(name) for name in _COLUMNS]
        for i in (_COLUMNS.index("result"), _COLUMNS.index("error")):
            values[i] = _text(values[i])
        values[_COLUMNS.index("questions")] = json.dumps(row.get("questions") or [])
        marks = ", ".join("?" for _ in _COLUMNS)
        self._db.execute(
            f"INSERT OR REPLACE INTO tasks ({', '.join(_COLUMNS)}) VALUES ({marks})", values
        )


def _row(values: tuple[Any, ...]) -> JSON:
    row = dict(zip(_COLUMNS, values, strict=True))
    for name in ("result", "error"):
        row[name] = None if row[name] is None else json.loads(row[name])
    row["questions"] = json.loads(row["questions"] or "[]")
    if row["updated"] is None:  # a row from an older mcpx
        row["updated"] = row["finished"] or row["created"]
    return row


def _text(value: object) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))
