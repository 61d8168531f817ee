"""Calls that outlive the request that started them: the daemon's one task store.

A call becomes a task when its caller may stop waiting before it ends, whichever door it
came in by: a 2026-07-28 host answered ``input_required``, an MCP host's task, a
``/v1/call`` that returned 202, a ``mcpx call`` that exited 75.

Invariants:

- A task runs in the daemon's own task group, never in the request's: the request
  that started it may end (answered, disconnected) and the call goes on.
- Every task is on disk (``TaskRecords``): its row is written when it starts, at each
  status change and when it ends, so ``mcpx restart`` keeps it listed and its outcome
  collectable. A task asked to be ``durable`` is not started when its row cannot be
  written; the others run on in memory only.
- A finished task is forgotten at ``created + ttl``, or ``keep`` seconds after it
  finished (``proto.askTTL``) when it has no ``ttl``; ``get`` then answers None.
  Expiries are kept in a heap, so forgetting looks only at the expired ones.
- Visible to its owner only: a task with an ``owner`` is listed to, and got by, that
  owner alone (or the operator, ``ANY``); one without is got by whoever holds its id
  (unguessable) and listed to the operator only.
- Bounded (``limit``, ``proto.maxTasks``): at ``limit`` running, a new one is refused
  (``Throttled``, naming the setting): stopping a running call would lose work someone
  waits for. Beyond ``limit`` finished in memory, the one that finished first leaves
  memory early (its row stays on disk).
- Watchers are called synchronously, and ``task.*`` events published, at each task's
  creation, status change and end; an event never carries the result or the error. A
  watcher that raises is logged, and the task goes on.
"""

from __future__ import annotations

import heapq
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any, Final

from anyio.abc import TaskGroup

from mcpx.events import EventBus
from mcpx.wire import InternalError, McpError, Throttled

from ._records import TaskRecords
from ._task import Task

__all__ = ["ANY", "Tasks"]

log = logging.getLogger("mcpx.tasks")

JSON = dict[str, Any]


class _Anyone(Enum):
    """The type of ``ANY``: an enum member, so ``is`` checks narrow under mypy."""

    ANY = "ANY"

    def __repr__(self) -> str:
        return "ANY"


# Whoever asks, sees every task: the operator's /v1 and the CLI.
ANY: Final = _Anyone.ANY
_EVENTS: Final = {"created": "task.created", "status": "task.status", "finished": "task.finished"}


class Tasks:
    """The daemon's running and recently finished tasks, also on disk."""

    def __init__(
        self,
        group: TaskGroup,
        keep: float,
        records: TaskRecords | None = None,
        limit: int = 1024,
        *,
        events: EventBus | None = None,
        poll_interval: float = 1.0,
    ) -> None:
        self._group = group
        self._keep = keep
        self._records = records
        self._limit = limit
        self._events = events
        self._poll_interval = poll_interval
        self._tasks: dict[str, Task] = {}
        self._running = 0
        self._ended: dict[str, None] = {}  # finished and in memory, in the order they finished
        self._expiries: list[tuple[float, str]] = []  # (forgotten at, id), a heap
        self._watchers: dict[int, Callable[[Task], None]] = {}
        self._next_watcher = 0

    @property
    def keep(self) -> float:
        return self._keep

    def start(
        self,
        server: str,
        what: str,
        run: Callable[[Task], Awaitable[JSON]],
        *,
        durable: bool = False,
        owner: str | None = None,
        ttl: float | None = None,
    ) -> Task:
        """Run ``run(task)`` in the daemon's task group; the task, at once.

        Raises:
            Throttled: ``limit`` tasks are running (``proto.maxTasks``).
            StateDiskFull: a ``durable`` task's row cannot be written (not started).
        """
        self._prune()
        if self._running >= self._limit:
            raise Throttled(
                f"{self._running} calls are running as tasks (proto.maxTasks); "
                "retry once one has finished"
            )
        task = Task(secrets.token_hex(8), server, what, owner, ttl=ttl)
        task.poll_interval = self._poll_interval
        if self._records is not None:  # first: a task that must be kept and cannot is not run
            if durable:
                self._records.started(task.row())
            else:
                self._records.changed(task.row())
        task._told = self._told
        self._tasks[task.id] = task
        self._running += 1
        self._group.start_soon(self._run, task, run, name=f"mcpx task {task.id}")
        self._tell(task, "created")
        return task

    def get(self, task_id: str, owner: str | _Anyone | None = ANY) -> Task | None:
        """A task of this daemon's, or one's record from an earlier daemon; None if it is
        unknown, forgotten, or not ``owner``'s to see (the same answer: no leak)."""
        self._prune()
        found = self._tasks.get(task_id)
        if found is None and self._records is not None:
            row = self._records.load(task_id)
            found = None if row is None else Task.recorded(row)
        if found is None or not _readable(found, owner):
            return None
        return found

    def list(self, owner: str | _Anyone | None = ANY) -> list[Task]:
        """The tasks ``owner`` may see, newest first (``ANY``: every task)."""
        self._prune()
        found = dict(self._tasks)
        if self._records is not None:
            for row in self._records.rows():
                if row["id"] not in found:
                    found[row["id"]] = Task.recorded(row)
        mine = [
            t for t in found.values() if owner is ANY or (owner is not None and t.owner == owner)
        ]
        return sorted(mine, key=lambda t: t.created, reverse=True)

    def watch(self, listener: Callable[[Task], None]) -> Callable[[], None]:
        """Call ``listener(task)`` at every task's creation, status change and end
        (synchronously: it must not block); the function that stops it."""
        key = self._next_watcher
        self._next_watcher += 1
        self._watchers[key] = listener

        def unsubscribe() -> None:
            self._watchers.pop(key, None)

        return unsubscribe

    async def _run(self, task: Task, run: Callable[[Task], Awaitable[JSON]]) -> None:
        try:
            with task._scope:
                try:
                    result = await run(task)
                except McpError as exc:
                    task._finish("failed", None, exc.to_error())
                    return
                except Exception as exc:  # the boundary: a task's failure is its outcome
                    failed = InternalError(f"the call failed: {exc}")
                    task._finish("failed", None, failed.to_error())
                    return
                task._finish("completed", result, None)
        finally:
            # Unfinished here means the daemon's own group was cancelled: it is stopping.
            stopped = InternalError("mcpx stopped before the call finished")
            task._finish("failed", None, stopped.to_error())  # no-op when it had ended
            self._running -= 1

    def _told(self, task: Task, change: str) -> None:
        if change == "finished":
            self._ended[task.id] = None
            heapq.heappush(self._expiries, (self._forgotten_at(task), task.id))
            while len(self._ended) > self._limit:
                self._forget(next(iter(self._ended)))
        if self._records is not None:
            self._records.changed(task.row())
        if change == "finished":
            self._publish(task, "status")  # the end is a status change too
        self._tell(task, change)

    def _tell(self, task: Task, change: str) -> None:
        self._publish(task, change)
        for listener in list(self._watchers.values()):
            try:
                listener(task)
            except Exception:  # a watcher's bug must not end the task, nor the daemon
                log.exception("a task watcher failed on task %s", task.id)

    def _publish(self, task: Task, change: str) -> None:
        if self._events is not None:
            self._events.publish(_EVENTS[change], task.summary(), server=task.server or None)

    def _forgotten_at(self, task: Task) -> float:
        if task.ttl is not None:
            return task.created + task.ttl
        return (task.finished or task.updated) + self._keep

    def _forget(self, task_id: str) -> None:
        self._ended.pop(task_id, None)
        self._tasks.pop(task_id, None)

    def _prune(self) -> None:
        now = time.time()
        while self._expiries and self._expiries[0][0] <= now:
            self._forget(heapq.heappop(self._expiries)[1])


def _readable(task: Task, owner: str | _Anyone | None) -> bool:
    return owner is ANY or task.owner is None or task.owner == owner
