"""One call that outlives the request that started it: its state and the questions it asks.

Invariants:

- ``status`` moves ``working`` ⇄ ``input_required`` while the call runs, then once to
  ``completed``, ``failed`` or ``cancelled``; ``finished`` is set then, and never again.
  Every status change sets ``updated`` and is told to the store (``_told``), which
  writes the row, publishes the event and calls its watchers.
- ``cancel`` ends the task at once (status ``cancelled``, the cancellation as its
  error), then stops the call: a reader never sees a cancelled task still ``working``.
- Questions asked in-band (a 2026-07-28 host's ``inputRequests``) get keys by kind
  and order (``elicitation-1``, ``sampling-1``, ``roots-1``), so a host that sends
  ``inputResponses`` up front can name them; responses sent before the question was
  asked are held until it is. A question nobody answers within its ``ttl`` is
  dismissed: ``cancel`` for an elicitation, an error for the others.
- Waiters are woken by one event per change, replaced each time (no polling).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio

from mcpx.wire import InternalError, McpError

__all__ = ["CANCELLED", "Task"]

JSON = dict[str, Any]

_KINDS: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
# No request-cancelled error in mcpx.wire: the code JSON-RPC peers use for it (LSP's).
CANCELLED: Final = -32800
_ENDINGS: Final = frozenset({"completed", "failed", "cancelled"})


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
    owner: str | None = None
    created: float = field(default_factory=time.time)
    updated: float = 0.0  # the creation time unless given
    status: str = "working"
    status_message: str | None = None
    ttl: float | None = None
    poll_interval: float = 1.0
    result: JSON | None = None
    error: JSON | None = None
    finished: float | None = None
    # Where the call's progress and log lines go now: the request currently waiting
    # on it (None between requests: dropped).
    notify: Callable[[str, JSON], None] | None = None
    brokered: list[Any] = field(default_factory=list)
    # The store's: told (task, "status" | "finished") at each status change and the end.
    _told: Callable[[Task, str], None] | None = None
    _open: dict[str, _InBand] = field(default_factory=dict)
    _held: dict[str, JSON] = field(default_factory=dict)
    _asked: dict[str, itertools.count[int]] = field(default_factory=dict)
    _changed: anyio.Event = field(default_factory=anyio.Event)
    _scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def __post_init__(self) -> None:
        self.updated = self.updated or self.created

    @classmethod
    def recorded(cls, row: JSON) -> Task:
        """A task from its record (``TaskRecords.load``); it runs in no daemon."""
        task = cls(row["id"], row["server"], row["what"], row.get("owner"), row["created"])
        task.updated = row.get("updated") or row["created"]
        task.status, task.status_message = row["status"], row.get("status_message")
        task.ttl, task.finished = row.get("ttl"), row.get("finished")
        task.poll_interval = row.get("poll_interval") or task.poll_interval
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
            McpError: the call failed (as it failed), or was cancelled (code -32800).
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
        self._set_status("input_required", f"waiting for the answer to {key} ({method})")
        try:
            with anyio.move_on_after(ttl):
                await question.done.wait()
        finally:
            del self._open[key]
            if not self.done and not self.open_requests():
                self._set_status("working", None)
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

    def cancel(self) -> bool:
        """End a running task as cancelled, and stop its call; False if it had ended."""
        if self.done:
            return False
        cancelled = McpError("the call was cancelled", code=CANCELLED)
        self._finish("cancelled", None, cancelled.to_error())
        self._scope.cancel()
        return True

    def as_json(self) -> JSON:
        """/v1's view: the result or the error once it ended, the brokered questions' ids."""
        out = self.summary()
        if self.done:
            out["result" if self.error is None else "error"] = self.result or self.error
        if self.brokered:
            out["questions"] = [getattr(q, "id", q) for q in self.brokered]
        return out

    def summary(self) -> JSON:
        """``as_json`` without the result, the error or the questions (for events, lists)."""
        return {
            "id": self.id,
            "server": self.server,
            "what": self.what,
            "status": self.status,
            "statusMessage": self.status_message,
            "created": self.created,
            "updated": self.updated,
            "ttl": self.ttl,
            "pollInterval": self.poll_interval,
            "finished": self.finished,
        }

    def row(self) -> JSON:
        """The task as ``TaskRecords`` keeps it."""
        return {
            "id": self.id,
            "server": self.server,
            "what": self.what,
            "owner": self.owner,
            "created": self.created,
            "updated": self.updated,
            "status": self.status,
            "status_message": self.status_message,
            "ttl": self.ttl,
            "poll_interval": self.poll_interval,
            "finished": self.finished,
            "result": self.result,
            "error": self.error,
            "questions": [getattr(q, "id", q) for q in self.brokered],
        }

    def _change(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def _set_status(self, status: str, message: str | None) -> None:
        if (status, message) == (self.status, self.status_message):
            return
        self.status, self.status_message = status, message
        self.updated = time.time()
        if self._told is not None:
            self._told(self, "status")
        self._change()

    def _finish(self, status: str, result: JSON | None, error: JSON | None) -> None:
        """The task's end; a task that already ended keeps its first."""
        if self.done:
            return
        assert status in _ENDINGS
        self.status, self.result, self.error = status, result, error
        self.status_message = None if error is None else str(error.get("message"))
        self.finished = self.updated = time.time()
        self.notify = None
        for question in self._open.values():
            question.done.set()  # nobody is left to take their answers
        if self._told is not None:
            self._told(self, "finished")
        self._change()
