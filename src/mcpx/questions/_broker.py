"""The broker: every question no present host can answer, kept until someone does.

Invariants:

- Durable: one SQLite file in the state dir (mode 0600, created so), one row per
  question: who it is for (identity), the server and method that asked, the question
  itself, its deadline, the routing decision, and the outcome. A daemon restart loses
  nothing; a question whose deadline passed while it was down is expired on open.
- An outcome is final: answered (accept, with content), declined, cancelled or expired.
  Expiry answers cancel, never decline: dismissed without choosing is not refusing.
- An answer is made into the result its question needs and checked before it is
  taken (``_answers``: an elicitation's against its ``requestedSchema``, a url one
  takes no content, sampling a ``CreateMessageResult``, roots a list of roots); a
  wrong one is an error naming the member, and the question stays open.
- Waiters are woken in-process (an event per question); the row is the truth.
- Finished rows are pruned ``keep`` seconds after they finished.
- Every change is told to ``on_change`` (``question.asked`` with the question,
  ``question.closed`` with its outcome): the daemon publishes them as events, which
  is how ``mcpx elicit watch`` sees questions arrive.
- Across a restart: a question still pending from an earlier daemon process has lost
  its asker (the upstream call ended with that process). It stays listed, says so, and
  can still be answered; when the same server asks the very same question again (same
  method and params) while it is live, the new ask takes it over (pending) or takes its
  outcome at once (answered or declined; a cancel chose nothing, so it is asked anew),
  once. So a ``mcpx call`` that exited 75, answered
  after a restart and run again, goes through without asking twice.
- A question whose asker gave up (the call was cancelled, or the upstream withdrew it
  with ``notifications/cancelled``) is ``withdrawn``: nobody is left to answer.
- A full disk (``StateDiskFull``) fails the writes that must happen (a new question, an
  answer), never expiry: a question past its deadline is expired as far as anyone can
  tell (its waiter gets the cancel, it is not listed as pending nor answerable), and its
  row says so at the first ``expire`` once there is room. Withdrawing is best effort too.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import anyio

from mcpx.config import StateDiskFull, open_state_db
from mcpx.wire import InvalidParams

from ._answers import broker_result

__all__ = ["Broker", "Question", "QuestionClosed"]

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS questions (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    deadline REAL NOT NULL,
    identity TEXT,
    server TEXT NOT NULL,
    method TEXT NOT NULL,
    params TEXT NOT NULL,
    routing TEXT NOT NULL,
    state TEXT NOT NULL,
    result TEXT,
    finished REAL,
    process TEXT,
    taken INTEGER NOT NULL DEFAULT 0,
    asks TEXT
)
"""
# Columns added after the first release of the table, for files made before them.
_ADDED: Final = {"process": "TEXT", "taken": "INTEGER NOT NULL DEFAULT 0", "asks": "TEXT"}
_ORPHANED: Final = (
    "asked before the daemon restarted (its call ended): answer it, and the answer is "
    "given when the server asks the same again"
)
_PENDING: Final = "pending"
_EXPIRED: Final = {"action": "cancel"}  # what expiry answers: dismissed, not refused
ELICIT_TTL: Final = 120.0  # elicit.ttl: a built-in, not a user setting
_KEEP: Final = 3600.0


class QuestionClosed(InvalidParams):
    """The question has an outcome already (or never existed)."""


@dataclass(frozen=True)
class Question:
    id: str
    created: float
    deadline: float
    identity: str | None
    server: str
    method: str
    params: dict[str, Any]
    routing: str
    state: str
    result: dict[str, Any] | None

    def time_left(self, now: float | None = None) -> float:
        return max(0.0, self.deadline - (time.time() if now is None else now))

    def as_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items()}
        out["timeLeft"] = round(self.time_left(), 3)
        return out


class Broker:
    """The durable question store of one daemon."""

    def __init__(
        self,
        path: Path,
        *,
        keep: float = _KEEP,
        clock: Callable[[], float] = time.time,
        on_change: Callable[[str, Question], None] | None = None,
    ) -> None:
        self.path = path
        self.on_change = on_change
        self._keep = keep
        self._clock = clock
        self._events: dict[str, anyio.Event] = {}
        self._db = open_state_db(path)  # 0600: questions may carry secrets
        self._db.execute(_SCHEMA)
        have = {row[1] for row in self._db.execute("PRAGMA table_info(questions)")}
        for column, kind in _ADDED.items():
            if column not in have:
                self._db.execute(f"ALTER TABLE questions ADD COLUMN {column} {kind}")
        # This process's mark: questions pending under another one lost their asker.
        self._process = secrets.token_hex(6)
        self._db.execute(
            "UPDATE questions SET routing = ? "
            "WHERE state = ? AND (process IS NULL OR process != ?)",
            (_ORPHANED, _PENDING, self._process),
        )
        self.expire()

    def close(self) -> None:
        self._db.close()

    # -- asking ------------------------------------------------------------------

    def ask(
        self,
        server: str,
        method: str,
        params: dict[str, Any],
        *,
        identity: str | None,
        routing: str,
        ttl: float = ELICIT_TTL,
    ) -> Question:
        """Store a new question; it is pending until answered, declined, cancelled or due.

        The same question left by an earlier daemon process is taken over instead.
        """
        now = self._clock()
        self.expire()
        earlier = self._left_behind(server, method, params)
        if earlier is not None:
            return earlier
        qid = secrets.token_hex(6)
        with self._tx() as db:
            db.execute(
                "INSERT INTO questions VALUES (?,?,?,?,?,?,?,?,?,NULL,NULL,?,0,?)",
                (
                    qid,
                    now,
                    now + ttl,
                    identity,
                    server,
                    method,
                    json.dumps(params),  # as asked: its fields keep the server's order
                    routing,
                    _PENDING,
                    self._process,
                    _asks(server, method, params),
                ),
            )
        self._events[qid] = anyio.Event()
        found = self.get(qid)
        assert found is not None
        self._changed("question.asked", found)
        return found

    def _left_behind(self, server: str, method: str, params: dict[str, Any]) -> Question | None:
        """The same question from an earlier process, taken over (once), if any."""
        with self._tx() as db:
            row = db.execute(
                "SELECT id, state FROM questions WHERE asks = ? "
                "AND (process IS NULL OR process != ?) AND taken = 0 "
                "AND state IN ('pending', 'answered', 'declined') ORDER BY created LIMIT 1",
                (_asks(server, method, params), self._process),
            ).fetchone()
            if row is None:
                return None
            qid, state = row
            db.execute(
                "UPDATE questions SET taken = 1, process = ?, routing = ? WHERE id = ?",
                (self._process, "asked again after a daemon restart", qid),
            )
        if state == _PENDING:
            self._events[qid] = anyio.Event()
        return self.get(qid)

    async def wait(self, qid: str) -> dict[str, Any]:
        """The outcome of ``qid`` as the asking server gets it, once there is one."""
        while True:
            found = self.get(qid)
            if found is None:
                raise QuestionClosed(f"no question {qid!r}")
            if found.state != _PENDING and found.result is not None:
                return found.result
            if found.deadline <= self._clock():
                return dict(_EXPIRED)  # due, its row not written yet (a full disk)
            event = self._events.setdefault(qid, anyio.Event())
            with anyio.move_on_after(max(0.0, found.deadline - self._clock()) + 0.01):
                await event.wait()
            self.expire()

    # -- reading -----------------------------------------------------------------

    def get(self, qid: str) -> Question | None:
        row = self._db.execute("SELECT * FROM questions WHERE id = ?", (qid,)).fetchone()
        return None if row is None else _question(row)

    def pending(self, identity: str | None = None) -> list[Question]:
        self.expire()
        rows = self._db.execute(
            "SELECT * FROM questions WHERE state = ? ORDER BY created", (_PENDING,)
        ).fetchall()
        found = [_question(r) for r in rows]
        now = self._clock()  # a due one still pending could not be expired (a full disk)
        return [
            q
            for q in found
            if q.deadline > now and (identity is None or q.identity in (None, identity))
        ]

    # -- outcomes ----------------------------------------------------------------

    def answer(self, qid: str, content: dict[str, Any]) -> Question:
        """Accept with ``content``, made into the result the question needs.

        Raises:
            QuestionClosed: no such pending question.
            InvalidParams: ``content`` cannot answer it: not what an elicitation's
                schema asks, content for a url elicitation, not a CreateMessageResult
                or a list of roots (the question stays open).
        """
        question = self._open(qid)
        result = broker_result(question.method, question.params, content)
        return self._finish(qid, "answered", result)

    def decline(self, qid: str) -> Question:
        self._open(qid)
        return self._finish(qid, "declined", {"action": "decline"})

    def cancel(self, qid: str) -> Question:
        self._open(qid)
        return self._finish(qid, "cancelled", {"action": "cancel"})

    def withdraw(self, qid: str) -> None:
        """The asker gave up: close ``qid`` if it is still pending (no error if not)."""
        with suppress(QuestionClosed, StateDiskFull):  # left pending, it expires in time
            self._finish(qid, "withdrawn", {"action": "cancel"})

    def expire(self) -> int:
        """Close every question past its deadline (with cancel) and prune old ones; on a
        full disk none (logged by the state db), and the next call does it."""
        now = self._clock()
        try:
            due = self._expire(now)
        except StateDiskFull:
            return 0
        for qid in due:
            self._wake(qid)
            found = self.get(qid)
            if found is not None:
                self._changed("question.closed", found)
        return len(due)

    def _expire(self, now: float) -> list[str]:
        with self._tx() as db:
            due = [
                r[0]
                for r in db.execute(
                    "SELECT id FROM questions WHERE state = ? AND deadline <= ?", (_PENDING, now)
                )
            ]
            db.execute(
                "UPDATE questions SET state = 'expired', result = ?, finished = ? "
                "WHERE state = ? AND deadline <= ?",
                (json.dumps(_EXPIRED), now, _PENDING, now),
            )
            db.execute(
                "DELETE FROM questions WHERE state != ? AND finished <= ?",
                (_PENDING, now - self._keep),
            )
        return due

    def _open(self, qid: str) -> Question:
        self.expire()
        found = self.get(qid)
        if found is not None and found.state == _PENDING and found.deadline <= self._clock():
            found = replace(found, state="expired")  # its row could not say so yet
        if found is None or found.state != _PENDING:
            state = "no such question" if found is None else f"it is {found.state}"
            raise QuestionClosed(f"question {qid!r} cannot be answered: {state}")
        return found

    def _finish(self, qid: str, state: str, result: dict[str, Any]) -> Question:
        with self._tx() as db:
            done = db.execute(
                "UPDATE questions SET state = ?, result = ?, finished = ? "
                "WHERE id = ? AND state = ?",
                (state, json.dumps(result), self._clock(), qid, _PENDING),
            ).rowcount
        if not done:
            raise QuestionClosed(f"question {qid!r} was closed meanwhile")
        self._wake(qid)
        found = self.get(qid)
        assert found is not None
        self._changed("question.closed", found)
        return found

    def _changed(self, kind: str, question: Question) -> None:
        if self.on_change is not None:
            self.on_change(kind, question)

    def _wake(self, qid: str) -> None:
        event = self._events.pop(qid, None)
        if event is not None:
            event.set()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            if self._db.in_transaction:  # SQLite may have rolled back already (disk full)
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


def _asks(server: str, method: str, params: dict[str, Any]) -> str:
    """What a question asks, whatever the order of its members: how the same question
    asked again after a restart is recognised."""
    canonical = json.dumps([server, method, params], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _question(row: tuple[Any, ...]) -> Question:
    qid, created, deadline, identity, server, method, params, routing, state, result = row[:10]
    return Question(
        qid,
        created,
        deadline,
        identity,
        server,
        method,
        json.loads(params),
        routing,
        state,
        None if result is None else json.loads(result),
    )
