"""A ``tools/call`` sent as an upstream task and followed to its end.

What the caller gets is exactly what a plain ``tools/call`` would have given it: the
CallToolResult, or the same JSON-RPC error raised. Two flavours, by the upstream's era:

- Legacy (2025-11-25 core tasks): ``params.task = {"ttl": ms}``; the answer is a
  ``CreateTaskResult`` (``{"task": {...}}``). ``tasks/get`` is polled until the task is
  terminal or ``input_required``; then ``tasks/result`` (which blocks until the end)
  gives the result or the error. While the task waits for input, the upstream asks its
  questions as ordinary server-to-client requests on the open ``tasks/result`` (the
  task-message queue of the SDKs drains there), answered by mcpx's question path.
- Modern (2026-07-28, extension ``io.modelcontextprotocol/tasks``): the extension is
  declared in this call's ``_meta`` client capabilities (and on each ``tasks/*``); an
  answer with ``resultType: "task"`` is polled with ``tasks/get`` until terminal, the
  result inlined (``result``) or the error (``error``) raised. ``input_required`` with
  ``inputRequests`` is answered through the question handler, as a plain call's
  ``input_required`` is, and the answers sent with ``tasks/update``.

A modern call is made a task when asked (``as_task``) or after a plain call's -32021
names the extension (2026-07-28's Tool has no ``execution`` to say so beforehand).

Polls follow the server's ``pollInterval``/``pollIntervalMs``, bounded to
[``MIN_POLL``, ``MAX_POLL``]; a status notification for the task (``TaskWakes``) wakes the
poll at once. ``timeout`` bounds the whole call (each exchange also ``pool.callTimeout``);
the time spent answering the upstream's questions is not counted.

Invariants: a caller cancelled (or out of time) sends ``tasks/cancel`` upstream before
the error goes up, shielded and bounded (``CANCEL_BOUND``); a legacy upstream that did
not declare ``tasks.cancel`` is not sent it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import anyio

from mcpx import spec, wire
from mcpx.shapes import unrelated

from ._errors import UpstreamError, UpstreamTimeout

if TYPE_CHECKING:
    from ._handshake import Handshake

__all__ = [
    "CANCEL_BOUND",
    "MAX_POLL",
    "MIN_POLL",
    "TaskWakes",
    "call_as_task",
    "offers_tasks",
    "wants_task_extension",
]

log = logging.getLogger("mcpx.client")

MIN_POLL: Final = 0.05
MAX_POLL: Final = 5.0
# How long telling the upstream of a cancellation may take.
CANCEL_BOUND: Final = 5.0
# A legacy task outlives the call's budget by this much: its result is still collectable.
_TTL_MARGIN_MS: Final = 60_000
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
_EXTENSION: Final[dict[str, Any]] = {spec.TASKS_EXTENSION: {}}
_WITH_TASK: Final = frozenset({"complete", "input_required", "task"})
_STATUS_NOTIFICATIONS: Final = frozenset({"notifications/tasks/status", "notifications/tasks"})

T = TypeVar("T")


class Requester(Protocol):
    """What a task call needs of ``_requests.Requester`` (named here, not imported:
    that module imports this one)."""

    handshake: Handshake
    name: str
    ask_rounds: int
    call_timeout: float | None
    task_wakes: TaskWakes

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]: ...

    async def send_modern(
        self,
        method: str,
        body: dict[str, Any],
        timeout: float | None,
        log_level: str | None = None,
        host_capabilities: dict[str, Any] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> dict[str, Any]: ...

    def result_type(self, method: str, result: dict[str, Any], known: frozenset[str]) -> str: ...

    async def next_round(
        self, original: dict[str, Any], result: dict[str, Any], asked_by: str | int | None
    ) -> dict[str, Any]: ...

    async def answers(
        self, questions: dict[str, Any], asked_by: str | int | None
    ) -> dict[str, Any]: ...


def offers_tasks(modern: bool, capabilities: Mapping[str, Any]) -> bool:
    """Whether an upstream with these server ``capabilities`` takes a ``tools/call`` as
    a task in a flavour mcpx speaks: core tasks (legacy), the extension (modern)."""
    if modern:
        extensions = capabilities.get("extensions")
        return isinstance(extensions, dict) and spec.TASKS_EXTENSION in extensions
    node: Any = capabilities
    for key in ("tasks", "requests", "tools", "call"):
        node = node.get(key) if isinstance(node, dict) else None
    return isinstance(node, dict)


def wants_task_extension(handshake: Handshake, exc: wire.McpError) -> bool:
    """Whether a modern upstream's -32021 asks for the tasks extension, and the upstream
    offers it: the call can then be made as a task."""
    data = exc.data if isinstance(exc.data, dict) else {}
    required = data.get("requiredCapabilities")
    extensions = required.get("extensions") if isinstance(required, dict) else None
    negotiated = handshake.negotiated
    return (
        isinstance(extensions, dict)
        and spec.TASKS_EXTENSION in extensions
        and negotiated is not None
        and offers_tasks(True, negotiated.capabilities)
    )


class TaskWakes:
    """The upstream tasks being followed now, each woken by its status notification."""

    def __init__(self) -> None:
        self._events: dict[str, anyio.Event] = {}

    def route(self, method: str, params: Mapping[str, Any]) -> bool:
        """Wake the poll of the task a status notification is about; whether it was one
        being followed (then the notification is used up here)."""
        if method not in _STATUS_NOTIFICATIONS:
            return False
        event = self._events.get(params.get("taskId"))  # type: ignore[arg-type]
        if event is None:
            return False
        event.set()
        return True

    @contextmanager
    def watching(self, task_id: str) -> Iterator[None]:
        self._events[task_id] = anyio.Event()
        try:
            yield
        finally:
            self._events.pop(task_id, None)

    async def pause(self, task_id: str, seconds: float) -> None:
        """Up to ``seconds``, less if the task's status notification comes (or came since
        the last pause)."""
        event = self._events[task_id]
        with anyio.move_on_after(seconds):
            await event.wait()
        if event.is_set():
            self._events[task_id] = anyio.Event()


def _interval(task: Mapping[str, Any], key: str) -> float:
    value = task.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        return MIN_POLL * 4
    return max(MIN_POLL, min(MAX_POLL, value / 1000))


async def call_as_task(
    req: Requester,
    params: dict[str, Any],
    timeout: float | None,
    log_level: str | None,
    asked_by: str | int | None,
    host_capabilities: dict[str, Any] | None,
) -> dict[str, Any]:
    """``tools/call`` with ``params``, as an upstream task, to its end (module docstring).

    Raises:
        McpError: the upstream answered (or its task ended) with a JSON-RPC error.
        UpstreamTimeout: the task did not end within ``timeout`` (it is cancelled).
        UpstreamError: the upstream offers no task support mcpx speaks, or the call failed.
    """
    handshake = req.handshake
    negotiated = handshake.negotiated
    caps = negotiated.capabilities if negotiated is not None else {}
    if not offers_tasks(handshake.modern, caps):
        wanted = (
            f"the {spec.TASKS_EXTENSION} extension"
            if handshake.modern
            else "tasks.requests.tools.call"
        )
        raise UpstreamError(
            f"{req.name}'s tool {params.get('name')!r} must run as a task, but {req.name} "
            f"(revision {handshake.revision}) does not declare {wanted}"
        )
    follower = _Follower(req, params, timeout, log_level, asked_by, host_capabilities)
    return await (follower.modern() if handshake.modern else follower.legacy())


class _Follower:
    """One task-augmented call: created, polled, answered, collected or cancelled."""

    def __init__(
        self,
        req: Requester,
        params: dict[str, Any],
        timeout: float | None,
        log_level: str | None,
        asked_by: str | int | None,
        host_capabilities: dict[str, Any] | None,
    ) -> None:
        self.req = req
        self.params = params
        self.tool = params.get("name")
        self.timeout = timeout
        self.deadline = math.inf if timeout is None else anyio.current_time() + timeout
        self.log_level = log_level
        self.asked_by = asked_by
        self.host = host_capabilities

    # -- budget ---------------------------------------------------------------------

    def _left(self, task_id: str | None) -> float:
        """Seconds left of the call's budget.

        Raises:
            UpstreamTimeout: none.
        """
        left = self.deadline - anyio.current_time()
        if left <= 0:
            what = f"task {task_id}" if task_id else "the task"
            raise UpstreamTimeout(
                f"{self.req.name} did not finish {what} (tools/call {self.tool}) "
                f"within {self.timeout:g}s"
            )
        return left

    def _bound(self, task_id: str | None) -> float:
        """One exchange's bound: what is left, and no more than ``pool.callTimeout``."""
        per_call = self.req.call_timeout
        return min(self._left(task_id), per_call if per_call is not None else math.inf)

    async def _answering(self, answered: Awaitable[T]) -> T:
        """``answered``, its time given back to the budget (someone was being asked)."""
        started = anyio.current_time()
        try:
            return await answered
        finally:
            self.deadline += anyio.current_time() - started

    # -- the two flavours -------------------------------------------------------------

    async def legacy(self) -> dict[str, Any]:
        task_meta: dict[str, Any] = {}
        if self.timeout is not None:
            task_meta["ttl"] = int(self.timeout * 1000) + _TTL_MARGIN_MS
        sent = {**self.params, "task": task_meta}
        created = await self.req.request("tools/call", sent, timeout=self._bound(None))
        task = created.get("task")
        if task is None:
            return created  # the server ran it plainly: that is the call's result
        task_id = self._task_id(task)
        with self.req.task_wakes.watching(task_id):
            async with self._cancelling(task_id):
                while task.get("status") not in TERMINAL | {"input_required"}:
                    await self._pause(task_id, _interval(task, "pollInterval"))
                    task = await self.req.request(
                        "tasks/get", {"taskId": task_id}, timeout=self._bound(task_id)
                    )
                # Blocks until the end; the task's questions arrive meanwhile (and pause
                # this budget while they are pending, as for any call).
                result = await self.req.request(
                    "tasks/result", {"taskId": task_id}, timeout=self._left(task_id)
                )
        return unrelated(result)

    async def modern(self) -> dict[str, Any]:
        body = dict(self.params)
        for _round in range(self.req.ask_rounds + 1):
            result = await self._send("tools/call", body, None)
            kind = self.req.result_type("tools/call", result, _WITH_TASK)
            if kind == "complete":
                return result
            if kind == "task":
                break
            # Asked before any task exists: a plain call's input_required rounds.
            body = await self._answering(self.req.next_round(self.params, result, self.asked_by))
        else:
            raise UpstreamError(
                f"{self.req.name} was still asking for input after {self.req.ask_rounds} rounds"
            )
        task_id = self._task_id(result)
        with self.req.task_wakes.watching(task_id):
            async with self._cancelling(task_id):
                return await self._follow_modern(task_id, result)

    async def _follow_modern(self, task_id: str, task: dict[str, Any]) -> dict[str, Any]:
        answered: set[str] = set()
        while True:
            status = task.get("status")
            if status == "completed" and isinstance(task.get("result"), dict):
                result: dict[str, Any] = task["result"]
                return result
            if status == "failed" and "error" in task:
                raise _upstream_error(self.req.name, task["error"])
            if status == "cancelled":
                raise UpstreamError(
                    f"{self.req.name} cancelled its task {task_id} (tools/call {self.tool})"
                    + (f": {task['statusMessage']}" if task.get("statusMessage") else "")
                )
            if status == "input_required":
                await self._update(task_id, task.get("inputRequests") or {}, answered)
            await self._pause(task_id, _interval(task, "pollIntervalMs"))
            task = await self._send("tasks/get", {"taskId": task_id}, task_id)

    async def _update(self, task_id: str, questions: Any, answered: set[str]) -> None:
        """Answer the questions not answered yet, with one ``tasks/update``: a key is
        answered once over the task's life (the spec makes keys unique)."""
        if not isinstance(questions, dict):
            raise UpstreamError(f"{self.req.name}: task {task_id} has malformed inputRequests")
        fresh = {k: v for k, v in questions.items() if k not in answered}
        if not fresh:
            return
        responses = await self._answering(self.req.answers(fresh, self.asked_by))
        answered.update(responses)
        update = {"taskId": task_id, "inputResponses": responses}
        await self._send("tasks/update", update, task_id)

    # -- helpers ------------------------------------------------------------------------

    async def _send(self, method: str, body: dict[str, Any], task_id: str | None) -> dict[str, Any]:
        """A modern request declaring the tasks extension."""
        host = self.host if method == "tools/call" else None
        return await self.req.send_modern(
            method, body, self._bound(task_id), self.log_level, host, _EXTENSION
        )

    def _task_id(self, task: Any) -> str:
        task_id = task.get("taskId") if isinstance(task, dict) else None
        if not isinstance(task_id, str):
            raise UpstreamError(
                f"{self.req.name} answered tools/call {self.tool} with a task without a "
                "taskId: an invalid response"
            )
        return task_id

    async def _pause(self, task_id: str, seconds: float) -> None:
        await self.req.task_wakes.pause(task_id, min(seconds, self._left(task_id)))

    @asynccontextmanager
    async def _cancelling(self, task_id: str) -> AsyncIterator[None]:
        """Cancel the upstream task when the caller is cancelled or out of time, before
        the error goes up."""
        try:
            yield
        except (anyio.get_cancelled_exc_class(), UpstreamTimeout):
            await self._cancel(task_id)
            raise

    async def _cancel(self, task_id: str) -> None:
        """``tasks/cancel``, shielded and bounded; a failure to send it is logged."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_BOUND):
            try:
                if self.req.handshake.modern:
                    await self.req.send_modern(
                        "tasks/cancel", {"taskId": task_id}, CANCEL_BOUND, extensions=_EXTENSION
                    )
                elif _declares_cancel(self.req):
                    await self.req.request(
                        "tasks/cancel", {"taskId": task_id}, timeout=CANCEL_BOUND
                    )
            except (UpstreamError, wire.McpError) as exc:
                log.info("%s: tasks/cancel %s failed: %s", self.req.name, task_id, exc)


def _declares_cancel(req: Requester) -> bool:
    negotiated = req.handshake.negotiated
    tasks = negotiated.capabilities.get("tasks") if negotiated is not None else None
    return isinstance(tasks, dict) and isinstance(tasks.get("cancel"), dict)


def _upstream_error(server: str, error: Any) -> Exception:
    """A failed modern task's ``error`` as the JSON-RPC error a plain call raises."""
    try:
        return wire.McpError.from_error(error)
    except wire.McpError as exc:
        return UpstreamError(f"{server}: a failed task carried a malformed error: {exc.message}")
