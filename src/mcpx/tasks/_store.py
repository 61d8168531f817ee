"""Calls that outlive the request that started them: the daemon's task store.

A call becomes a task when its caller may stop waiting before it ends: a 2026-07-28
host that is answered ``input_required`` and comes back with its answers, or a CLI
call that returns at once with a question nobody present can answer (exit 75).

Invariants:

- A task runs in the daemon's own task group, never in the request's: the request
  that started it may end (answered, disconnected) and the call goes on.
- Its outcome (a result, or an error as ``{code, message, data}``) is kept ``keep``
  seconds after it finished (``proto.askTTL``), for ``/v1/tasks/{id}`` and
  ``mcpx task result``; then it is forgotten. Finished tasks are kept in the order they
  finished, so forgetting the expired ones looks only at those (amortised O(1) per
  request, not a walk of every task).
- Bounded (``limit``, ``proto.maxTasks``): tasks have no client identity (a /v1 caller,
  a stateless 2026-07-28 host), so the bound is the daemon's. At ``limit`` running, a
  new one is refused (``Throttled``, naming the setting): stopping a running call
  would lose work someone waits for. Beyond ``limit`` finished, the oldest is forgotten
  early (a durable one's outcome stays on disk).
- Questions asked in-band (a 2026-07-28 host's ``inputRequests``) get keys by kind
  and order (``elicitation-1``, ``sampling-1``, ``roots-1``), so a host that sends
  ``inputResponses`` up front can name them; responses sent before the question was
  asked are held until it is. A question nobody answers within ``keep`` seconds is
  dismissed: ``cancel`` for an elicitation, an error for the others.
- Questions held by the broker for the task's server are noted on the task, so a
  caller that cannot be asked in-band (the CLI) can be told at once.
- Waiters are woken by one event per change, replaced each time (no polling).
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

from mcpx.wire import InternalError, McpError, Throttled

from ._records import TaskRecords

__all__ = ["Task", "Tasks"]

JSON = dict[str, Any]

_KINDS: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


@dataclass
class _InBand:
    """One question put to the task's host inside an ``input_required`` answer."""

    request: JSON
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: JSON | None = None


@dataclass
class Task:
    id: str
    server: str
    what: str
    created: float = field(default_factory=time.time)
    status: str = "working"
    result: JSON | None = None
    error: JSON | None = None
    finished: float | None = None
    # Where the call's progress and log lines go now: the request currently waiting
    # on it (None between requests: dropped).
    notify: Callable[[str, JSON], None] | None = None
    brokered: list[Any] = field(default_factory=list)
    _open: dict[str, _InBand] = field(default_factory=dict)
    _held: dict[str, JSON] = field(default_factory=dict)
    _asked: dict[str, itertools.count[int]] = field(default_factory=dict)
    _changed: anyio.Event = field(default_factory=anyio.Event)
    _scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    @classmethod
    def recorded(cls, row: JSON) -> Task:
        """A finished task from its record (``TaskRecords.load``)."""
        task = cls(row["id"], row["server"], row["what"], created=row["created"])
        task.status, task.finished = row["status"], row["finished"]
        task.result, task.error = row.get("result"), row.get("error")
        task.brokered = list(row.get("questions") or [])
        return task

    @property
    def done(self) -> bool:
        return self.finished is not None

    def open_requests(self) -> dict[str, JSON]:
        """The in-band questions still waiting for an answer, by key."""
        return {key: q.request for key, q in self._open.items() if q.answer is None}

    def outcome(self) -> JSON:
        """The call's result.

        Raises:
            McpError: the call failed (as it failed).
        """
        if self.error is not None:
            raise McpError.from_error(self.error)
        assert self.result is not None
        return self.result

    def give(self, responses: object, *, hold: bool) -> None:
        """Answers from the host: to the open questions whose keys match; with ``hold``
        (sent up front), the rest wait for the question they name. Others are ignored."""
        if not isinstance(responses, Mapping):
            return
        for key, answer in responses.items():
            if not isinstance(answer, Mapping):
                continue
            waiting = self._open.get(key)
            if waiting is not None and waiting.answer is None:
                waiting.answer = dict(answer)
                waiting.done.set()
            elif hold:
                self._held[str(key)] = dict(answer)
        self._change()

    async def ask(self, method: str, params: JSON, ttl: float) -> JSON:
        """Put one question to the host in-band; its answer (or a dismissal)."""
        kind = _KINDS.get(method, "input")
        key = f"{kind}-{next(self._asked.setdefault(kind, itertools.count(1)))}"
        held = self._held.pop(key, None)
        if held is not None:
            return held
        question = self._open[key] = _InBand({"method": method, "params": params})
        self.status = "input_required"
        self._change()
        try:
            with anyio.move_on_after(ttl):
                await question.done.wait()
        finally:
            del self._open[key]
            self.status = "working" if not self.done else self.status
            self._change()
        if question.answer is not None:
            return question.answer
        if method == "elicitation/create":
            return {"action": "cancel"}  # dismissed without choosing
        raise InternalError(f"nobody answered {method} within {ttl:g} s")

    def note_brokered(self, question: Any) -> None:
        self.brokered.append(question)
        self._change()

    async def changed(self, timeout: float | None = None) -> None:
        """Until the task changes (a question, an answer, its end), or ``timeout``."""
        event = self._changed
        with anyio.move_on_after(timeout):
            await event.wait()

    def cancel(self) -> None:
        self._scope.cancel()

    def as_json(self) -> JSON:
        out: JSON = {
            "id": self.id,
            "server": self.server,
            "what": self.what,
            "status": self.status,
            "created": self.created,
        }
        if self.done:
            out["finished"] = self.finished
            out["result" if self.error is None else "error"] = self.result or self.error
        if self.brokered:
            out["questions"] = [getattr(q, "id", q) for q in self.brokered]
        return out

    def _change(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def _finish(self, status: str, result: JSON | None, error: JSON | None) -> None:
        self.status, self.result, self.error = status, result, error
        self.finished = time.time()
        self.notify = None
        for question in self._open.values():
            question.done.set()  # nobody is left to take their answers
        self._change()


class Tasks:
    """The daemon's running and recently finished tasks; the durable ones also on disk."""

    def __init__(
        self,
        group: TaskGroup,
        keep: float,
        records: TaskRecords | None = None,
        limit: int = 1024,
    ) -> None:
        self._group = group
        self._keep = keep
        self._records = records
        self._limit = limit
        self._tasks: dict[str, Task] = {}
        self._running = 0
        self._finished: deque[Task] = deque()  # in the order they finished

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
    ) -> Task:
        """Run ``run(task)`` in the daemon's task group; the task, at once. A ``durable``
        task's outcome outlives the daemon (for callers that come back by its id).

        Raises:
            Throttled: ``limit`` tasks are running (``proto.maxTasks``).
        """
        self._prune()
        if self._running >= self._limit:
            raise Throttled(
                f"{self._running} calls are running as tasks (proto.maxTasks); "
                "retry once one has finished"
            )
        task = Task(secrets.token_hex(8), server, what)
        records = self._records if durable else None
        if records is not None:  # first: a task that cannot be recorded is not started
            records.started(task.id, server, what, task.created)
        self._tasks[task.id] = task
        self._running += 1
        self._group.start_soon(self._run, task, run, records, name=f"mcpx task {task.id}")
        return task

    def get(self, task_id: str) -> Task | None:
        """A task of this daemon's, or a durable one's record from an earlier daemon."""
        self._prune()
        found = self._tasks.get(task_id)
        if found is None and self._records is not None:
            row = self._records.load(task_id)
            found = None if row is None else Task.recorded(row)
        return found

    async def _run(
        self, task: Task, run: Callable[[Task], Awaitable[JSON]], records: TaskRecords | None
    ) -> None:
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
            if not task.done:
                cancelled = InternalError("the call was cancelled")
                task._finish("cancelled", None, cancelled.to_error())
        finally:
            # Unfinished here means the daemon's own group was cancelled: it is stopping.
            if not task.done:
                stopped = InternalError("mcpx stopped before the call finished")
                task._finish("failed", None, stopped.to_error())
            self._running -= 1
            self._finished.append(task)
            while len(self._finished) > self._limit:
                self._tasks.pop(self._finished.popleft().id, None)
            if records is not None:
                records.finished(task.as_json())

    def _prune(self) -> None:
        # Finished in order: the first that is still fresh has only fresher ones behind.
        cutoff = time.time() - self._keep
        while self._finished and (self._finished[0].finished or 0.0) < cutoff:
            self._tasks.pop(self._finished.popleft().id, None)
