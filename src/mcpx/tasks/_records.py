"""Detached calls' outcomes on disk: a result is not lost to a daemon restart.

A ``/v1/call`` that returned on a question (exit 75 in the CLI) leaves its caller with a
task id to come back with, minutes later, perhaps after ``mcpx restart``. Its row is
written when it starts and again when it ends, so the caller then gets the result, or
the truth about it: a call the old daemon was still running when it died has no result,
and says so, rather than being an unknown id.

Invariants:

- One row per detached task, in ``<state>/tasks.db`` (0600: results may carry secrets).
- A row without ``finished`` belongs to the running daemon; the next one to open the
  file marks every such row failed, since the process that ran the call is gone.
- Rows are forgotten ``keep`` seconds after they finished, as in memory.
- 2026-07-28 rounds are not written: their ``requestState`` dies with the process that
  signed it, so nobody could come back for them.
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
# JSON-RPC's internal error: the call did not end, so there is nothing else to say.
_ENDED_UNFINISHED: Final = {
    "code": -32603,
    "message": "mcpx stopped before the call finished (the daemon was killed or crashed); "
    "the call's result was never received",
}


class TaskRecords:
    """The rows of detached tasks, by id."""

    def __init__(self, path: Path, keep: float) -> None:
        self._keep = keep
        self._db = open_state_db(path)
        self._db.execute(_SCHEMA)
        now = time.time()
        self._db.execute(
            "UPDATE tasks SET status = 'failed', finished = ?, error = ? WHERE finished IS NULL",
            (now, json.dumps(_ENDED_UNFINISHED)),
        )
        self.prune(now)

    def close(self) -> None:
        self._db.close()

    def started(self, task_id: str, server: str, what: str, created: float) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO tasks (id, server, what, created, status) "
            "VALUES (?, ?, ?, ?, 'working')",
            (task_id, server, what, created),
        )

    def finished(self, task: JSON) -> None:
        """``task`` as ``Task.as_json`` shows it, once it ended.

        On a full disk the outcome stays in memory only (the log says the disk is full):
        the row stays unfinished, and the next daemon says the call's result was lost.
        """
        with suppress(StateDiskFull):
            self._finish(task)

    def _finish(self, task: JSON) -> None:
        self._db.execute(
            "UPDATE tasks SET status = ?, finished = ?, result = ?, error = ?, questions = ? "
            "WHERE id = ?",
            (
                task["status"],
                task["finished"],
                _text(task.get("result")),
                _text(task.get("error")),
                json.dumps(task.get("questions") or []),
                task["id"],
            ),
        )

    def load(self, task_id: str) -> JSON | None:
        """The row as ``Task.as_json`` would show it; None if unknown or forgotten."""
        self.prune(time.time())
        row = self._db.execute(
            "SELECT server, what, created, status, finished, result, error, questions "
            "FROM tasks WHERE id = ?",
            (task_id,),
        ).fetchone()
        if row is None:
            return None
        server, what, created, status, finished, result, error, questions = row
        out: JSON = {
            "id": task_id,
            "server": server,
            "what": what,
            "status": status,
            "created": created,
            "finished": finished,
            "questions": json.loads(questions),
        }
        if result is not None:
            out["result"] = json.loads(result)
        if error is not None:
            out["error"] = json.loads(error)
        return out

    def prune(self, now: float) -> None:
        self._db.execute(
            "DELETE FROM tasks WHERE finished IS NOT NULL AND finished < ?", (now - self._keep,)
        )


def _text(value: object) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))
