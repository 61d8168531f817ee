"""The call log: ``<state>/calls.db``, one row per upstream call from any door.

Theory of operation: a call hands its ``CallRecord`` to ``CallLog.record``, which puts
it on a bounded memory channel and returns: the call never waits for the disk. One task
(``run``) drains the channel and writes what it finds in one transaction, in a worker
thread, so neither the event loop nor a call waits for SQLite. It gathers for up to
``_GATHER`` seconds after a record arrives (less when ``_BATCH`` are waiting or a reader
wants them): one thread hop and one transaction per call cost a third of a pass-through
call's CPU, one per batch next to nothing. Reads (/v1/log,
/v1/stats) run in a worker thread too; one lock orders them with the writes (one
connection).

Invariants:
- The file is made by ``open_state_db``: 0600, WAL.
- Bounded: rows older than ``log.keep`` days, and beyond the newest ``log.keepRows``,
  are deleted at start and then every ``_PRUNE_EVERY`` rows or ``_PRUNE_AFTER`` seconds,
  never per call.
- A record the channel has no room for, or the disk has no room for, is dropped; each
  kind of loss is said once in the log (the disk's by ``StateDiskFull``, once a minute).
  A call never fails for the log.
- A record is on disk about ``_GATHER`` seconds after of its call's end (a ``kill -9`` loses
  at most those); a reader (``wait_written``) has it written at once.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import anyio
from anyio import TASK_STATUS_IGNORED
from anyio.abc import TaskStatus

from mcpx.config import Settings, StateDiskFull, open_state_db

from ._call_record import CallRecord

__all__ = ["CallLog", "open_call_log"]

log = logging.getLogger("mcpx.calls")

_BUFFER: Final = 4096  # records waiting for the writer; past it they are dropped
_BATCH: Final = 512  # records per transaction at most
_GATHER: Final = 0.25  # seconds a batch waits for more records (a reader cuts it short)
_PRUNE_EVERY: Final = 1000
_PRUNE_AFTER: Final = 60.0
_CLOSE_WAIT: Final = 5.0

_COLUMNS: Final = CallRecord._fields
_JSON_COLUMNS: Final = ("arguments", "result")
_JSON_AT: Final = tuple(_COLUMNS.index(name) for name in _JSON_COLUMNS)
_SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    {", ".join(_COLUMNS)},
    ms REAL
);
CREATE INDEX IF NOT EXISTS calls_ts ON calls (ts);
"""
_INSERT: Final = (
    f"INSERT INTO calls ({', '.join(_COLUMNS)}, ms) VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})"
)


class CallLog:
    """The call log of one daemon (a ``CallRecorder``)."""

    def __init__(self, path: Path, settings: Settings) -> None:
        self.path = path
        self._payloads = bool(settings["log.payloads"])
        self._keep_days = int(settings["log.keep"])
        self._keep_rows = int(settings["log.keepRows"])
        self._send, self._receive = anyio.create_memory_object_stream[CallRecord](_BUFFER)
        self._lock = anyio.Lock()
        self._since_prune = 0
        self._queued = self._done = 0  # records handed over, and written or dropped
        self._progress = anyio.Event()  # set (and replaced) when a batch is done
        self._hurry = anyio.Event()  # set: write what is queued now (replaced per batch)
        self._pruned_at = time.monotonic()
        self.dropped = 0
        self._db: sqlite3.Connection | None = None
        try:
            db = open_state_db(path)
            db.executescript(_SCHEMA)
            self._db = db
            self._prune()
        except (StateDiskFull, sqlite3.Error, OSError) as exc:
            log.warning("the call log %s cannot be kept (calls are not logged): %s", path, exc)

    @property
    def payloads(self) -> bool:
        return self._payloads

    def record(self, call: CallRecord) -> None:
        """Queue ``call`` for the writer; dropped (said once) when the queue is full."""
        try:
            self._send.send_nowait(call)
            self._queued += 1
            if self._queued - self._done >= _BATCH:
                self._hurry.set()
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.dropped += 1
            if self.dropped == 1:
                log.warning("the call log falls behind: records are dropped (calls are not)")

    async def run(self, *, task_status: TaskStatus[None] = TASK_STATUS_IGNORED) -> None:
        """Write records until ``close``; the ones queued by then are written too."""
        task_status.started()
        async with self._receive:
            async for first in self._receive:
                with anyio.move_on_after(_GATHER):
                    await self._hurry.wait()
                self._hurry = anyio.Event()
                batch = [first]
                while len(batch) < _BATCH:
                    try:
                        batch.append(self._receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                async with self._lock:
                    await anyio.to_thread.run_sync(self._write, batch)
                self._done += len(batch)
                self._progress.set()
                self._progress = anyio.Event()

    def close(self) -> None:
        self._send.close()
        self._hurry.set()

    def _write(self, batch: Sequence[CallRecord]) -> None:
        if self._db is None:
            return
        rows = [_row(call) for call in batch]
        try:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(_INSERT, rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except StateDiskFull:
            self.dropped += len(rows)  # said by open_state_db, once a minute
            return
        except sqlite3.Error as exc:
            self.dropped += len(rows)
            log.warning("the call log could not be written: %s", exc)
            return
        self._since_prune += len(rows)
        if self._since_prune >= _PRUNE_EVERY or time.monotonic() - self._pruned_at >= _PRUNE_AFTER:
            self._prune()

    def _prune(self) -> None:
        assert self._db is not None
        self._since_prune, self._pruned_at = 0, time.monotonic()
        oldest = time.time() - self._keep_days * 86400
        try:
            self._db.execute("DELETE FROM calls WHERE ts < ?", (oldest,))
            self._db.execute(
                "DELETE FROM calls WHERE id <= "
                "(SELECT id FROM calls ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (self._keep_rows,),
            )
        except (StateDiskFull, sqlite3.Error) as exc:
            log.warning("the call log could not be pruned: %s", exc)

    async def select(self, where: str, params: Sequence[Any], tail: str) -> list[dict[str, Any]]:
        """Rows matching ``where`` (SQL over the log's columns, with ``params``), each a
        dict with its ``id``; ``tail``: ORDER BY and LIMIT."""
        if self._db is None:
            return []
        db = self._db
        sql = f"SELECT id, {', '.join(_COLUMNS)}, ms FROM calls WHERE {where} {tail}"

        def read() -> list[dict[str, Any]]:
            cursor = db.execute(sql, tuple(params))
            names = [d[0] for d in cursor.description]
            return [_from_row(dict(zip(names, row, strict=True))) for row in cursor]

        async with self._lock:
            return await anyio.to_thread.run_sync(read)

    async def wait_written(self) -> None:
        """Until every record queued before now is written (for tests and ``close``)."""
        target = self._queued
        while self._done < target:
            self._hurry.set()  # the writer's current batch goes now
            await self._progress.wait()


def _row(call: CallRecord) -> tuple[Any, ...]:
    values = list(call)  # a record is its columns, in order
    for i in _JSON_AT:
        if values[i] is not None:
            values[i] = json.dumps(values[i], ensure_ascii=False, default=str)
    return (*values, call.ms)


def _from_row(row: dict[str, Any]) -> dict[str, Any]:
    for name in _JSON_COLUMNS:
        if row.get(name) is not None:
            row[name] = json.loads(row[name])
    return row


@asynccontextmanager
async def open_call_log(path: Path, settings: Settings) -> AsyncIterator[CallLog]:
    """The call log at ``path``, written by a task of its own until the block ends;
    what was queued by then is written (bounded by ``_CLOSE_WAIT``)."""
    calls = CallLog(path, settings)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(calls.run)
            try:
                yield calls
            finally:
                calls.close()
                tg.cancel_scope.deadline = anyio.current_time() + _CLOSE_WAIT
    finally:
        if calls._db is not None:
            calls._db.close()
