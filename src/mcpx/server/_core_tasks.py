"""2025-11-25 core tasks, served to legacy hosts (client-directed; accepted from any).

A ``tools/call`` carrying ``task`` answers ``CreateTaskResult`` at once and runs as a task
of the daemon's store; ``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel``
serve the host's own tasks.

Invariants:

- The tool's ``execution.taskSupport`` decides, as listed to the host: mcpx's own
  ``mcpx_call`` says ``"optional"``, a pass-through or ``full``-surface tool says what its
  upstream said; a tool that says nothing (or ``"forbidden"``) is -32601 (S-TASK-3).
- A task belongs to the host that created it (``Conn.identity``): another host's task is
  the same -32602 as an unknown one, and is never listed to it (no existence leak).
- The call runs in the daemon's group, under the request's scope when that scope is the
  host's own, else under a scope of its own released when the call ends.
- A question the call asks is parked on the task (``Task.ask``), so the task shows
  ``input_required`` while it is out; it goes to the host with related-task ``_meta``, on
  the stream of a ``tasks/result`` waiting for the task (where 2025-11-25 delivers it),
  or on a stdio host's pipe, which is always there. Its progress keeps the request's
  ``progressToken`` (S-PROG-8), on the pipe or the session's own stream.
- ``tasks/result`` answers exactly what the call would have: its result (with the
  related-task ``_meta``) or its JSON-RPC error; a stored result is copied, never edited.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

import anyio

from mcpx import wire
from mcpx.questions import HostAsker
from mcpx.shapes import downgrade_notification
from mcpx.spec import RELATED_TASK
from mcpx.wire import InvalidParams, McpError, MethodNotFound

from . import _modes as modes
from . import _passthrough as passthrough
from ._conn import Conn
from ._host_questions import for_task
from ._identity import identity_for
from ._task_views import after_cursor, cursor_of, push_status, task_object

if TYPE_CHECKING:
    from mcpx.ops import OpContext
    from mcpx.tasks import Task, Tasks

__all__ = ["call_as_task", "handle"]

JSON = dict[str, Any]

_SUPPORTING: Final = frozenset({"optional", "required"})


async def call_as_task(
    ctx: OpContext,
    view: Conn,
    params: Mapping[str, Any],
    run: Callable[[OpContext], Awaitable[JSON]],
) -> JSON:
    """``tools/call`` with ``task``: the call ``run`` as a task; its CreateTaskResult.

    Raises:
        MethodNotFound: the tool declares no ``execution.taskSupport`` (S-TASK-3).
        InvalidParams: ``task`` is not a ``TaskMetadata`` object.
        Throttled: ``proto.maxTasks`` calls are running as tasks.
    """
    tasks = ctx.tasks
    if tasks is None:  # no store: no tasks declared, so the field is ignored (S-TASK-2)
        return await run(ctx)
    name = params.get("name")
    found = await _tool(ctx, name)
    support = (found[1].get("execution") or {}).get("taskSupport") if found else None
    if support not in _SUPPORTING:
        raise MethodNotFound(
            f"Method not found: tool {name!r} declares no execution.taskSupport, so it "
            "cannot be called as a task; call it without task",
            {"method": "tools/call", "tool": name},
        )
    ttl = _ttl(params.get("task"), tasks.keep)
    meta = params.get("_meta")
    # The request's scope is its own (a sessionless POST): it ends with the request,
    # which the call outlives; the call gets one of its own instead.
    own = identity_for(meta if isinstance(meta, Mapping) else None, view, process="-") is None

    async def running(task: Task) -> JSON:
        scope = f"task:{task.id}" if own else ctx.identity
        try:
            asker = _asker(ctx, view, task)
            return await run(replace(ctx, identity=scope, asker=asker, notify=_notifier(ctx, view)))
        finally:
            if own and scope is not None and ctx.pool.holds(scope):
                with anyio.CancelScope(shield=True):
                    await ctx.pool.release(scope)

    server = _server_of(found[0] if found else "", params)
    task = tasks.start(server, f"tools/call {name}", running, owner=view.identity, ttl=ttl)
    push_status(ctx, tasks, view, task)
    return {"task": task_object(task)}


async def handle(method: str, ctx: OpContext, view: Conn, params: Mapping[str, Any]) -> JSON:
    """A ``tasks/*`` request from a legacy host.

    Raises:
        MethodNotFound: not a core tasks method, or this daemon keeps no tasks.
        InvalidParams: no such task of this host's, a bad cursor, or cancelling a task
            that already ended.
        McpError: ``tasks/result`` of a call that failed or was cancelled, as it ended.
    """
    served = _METHODS.get(method)
    if served is None or ctx.tasks is None:
        raise MethodNotFound(f"Method not found: {method}", {"method": method})
    return await served(ctx, ctx.tasks, view, params)


async def _get(ctx: OpContext, tasks: Tasks, view: Conn, params: Mapping[str, Any]) -> JSON:
    return task_object(_own(tasks, view, params))


async def _result(ctx: OpContext, tasks: Tasks, view: Conn, params: Mapping[str, Any]) -> JSON:
    task = _own(tasks, view, params)
    if not task.done:
        with _CARRIERS.carrying(task.id, ctx.asker):
            while not task.done:
                await task.changed()
    result = task.outcome()
    meta = result.get("_meta")
    related = {RELATED_TASK: {"taskId": task.id}}
    return {**result, "_meta": {**meta, **related} if isinstance(meta, Mapping) else related}


async def _list(ctx: OpContext, tasks: Tasks, view: Conn, params: Mapping[str, Any]) -> JSON:
    size = int(ctx.settings["mcp.pageSize"])
    mine = after_cursor(tasks.list(view.identity), params.get("cursor"))
    out: JSON = {"tasks": [task_object(t) for t in mine[:size]]}
    if len(mine) > size:
        out["nextCursor"] = cursor_of(mine[size - 1])
    return out


async def _cancel(ctx: OpContext, tasks: Tasks, view: Conn, params: Mapping[str, Any]) -> JSON:
    task = _own(tasks, view, params)
    if not task.cancel():
        status = task_object(task)["status"]
        raise InvalidParams(
            f"Invalid params: task {task.id} has already ended ({status}); only a running "
            "task can be cancelled",
            {"taskId": task.id, "status": status},
        )
    return task_object(task)


_METHODS: Final[
    dict[str, Callable[[OpContext, Tasks, Conn, Mapping[str, Any]], Awaitable[JSON]]]
] = {"tasks/get": _get, "tasks/result": _result, "tasks/list": _list, "tasks/cancel": _cancel}


def _own(tasks: Tasks, view: Conn, params: Mapping[str, Any]) -> Task:
    task_id = params.get("taskId")
    if not isinstance(task_id, str):
        raise InvalidParams("Invalid params: taskId must be a string")
    task = tasks.get(task_id, view.identity)
    if task is None:  # unknown, forgotten, or another host's: one answer for all three
        raise InvalidParams(
            f"Invalid params: no task {task_id!r} (unknown, expired, or not this client's)",
            {"taskId": task_id},
        )
    return task


def _ttl(metadata: object, keep: float) -> float:
    """Seconds the task is kept: the ttl asked for (ms), at most the daemon's keep."""
    if not isinstance(metadata, Mapping):
        raise InvalidParams("Invalid params: task must be an object (TaskMetadata)")
    asked = metadata.get("ttl")
    if asked is None:
        return keep
    if isinstance(asked, bool) or not isinstance(asked, int | float) or asked < 0:
        raise InvalidParams("Invalid params: task.ttl must be a number of milliseconds")
    return min(asked / 1000, keep)


async def _tool(ctx: OpContext, name: object) -> tuple[str, JSON] | None:
    """(server, listed Tool) a ``tools/call`` of ``name`` reaches, as ``call_tool`` finds
    it: a pass-through server's, mcpx's own (server ""), a ``full`` surface's prefixed."""
    if not isinstance(name, str):
        return None
    if passthrough.servers(ctx):
        for server, item in await passthrough.merged(ctx, "tools"):
            if item.get("name") == name:
                return server, item
    surface = modes.mode(ctx)
    for item in modes.own_tools(surface):
        if item["name"] == name:
            return "", item
    split = modes.split_name(name, ctx) if surface == "full" else None
    if split is None:
        return None
    entry = await ctx.catalogue.entry(split[0])
    for item in entry.get("tools") or []:
        if item.get("name") == split[1]:
            return split[0], item
    return None


def _notifier(ctx: OpContext, view: Conn) -> Callable[[str, JSON], None] | None:
    """Where the call's progress and log lines go once the request is answered (with its
    original ``progressToken``: S-PROG-8): a stdio host's pipe as before; a legacy
    session's own stream otherwise (the request's is closed by then)."""
    push, rev = view.push, view.revision
    if view.transport == "stdio" or push is None or rev is None:
        return ctx.notify

    def notify(method: str, params: JSON) -> None:
        frame = wire.notification(method, downgrade_notification(method, params, rev))
        push(frame)
        if ctx.trace is not None:
            ctx.trace(rev, frame, None)

    return notify


def _server_of(server: str, params: Mapping[str, Any]) -> str:
    arguments = params.get("arguments")
    if not server and isinstance(arguments, Mapping) and isinstance(arguments.get("server"), str):
        return str(arguments["server"])  # mcpx_call's
    if not server and params.get("name") == "mcpx_exec":
        return "mcpx"  # a script's run is mcpx's own
    return server


# -- questions the call asks --------------------------------------------------


class _Carriers:
    """The askers of the ``tasks/result`` requests waiting on each task: where its
    questions can reach the host now."""

    def __init__(self) -> None:
        self._by_task: dict[str, list[HostAsker]] = {}
        self._changed = anyio.Event()

    def carrying(self, task_id: str, asker: HostAsker | None) -> _Carrying:
        return _Carrying(self, task_id, asker)

    def add(self, task_id: str, asker: HostAsker) -> None:
        self._by_task.setdefault(task_id, []).append(asker)
        self._changed.set()
        self._changed = anyio.Event()

    def remove(self, task_id: str, asker: HostAsker) -> None:
        waiting = self._by_task.get(task_id, [])
        waiting.remove(asker)
        if not waiting:
            self._by_task.pop(task_id, None)

    async def wait(self, task_id: str) -> HostAsker:
        """The newest waiting request's asker, once there is one."""
        while not self._by_task.get(task_id):
            await self._changed.wait()
        return self._by_task[task_id][-1]


class _Carrying:
    def __init__(self, carriers: _Carriers, task_id: str, asker: HostAsker | None) -> None:
        self._carriers, self._task_id, self._asker = carriers, task_id, asker

    def __enter__(self) -> None:
        if self._asker is not None:
            self._carriers.add(self._task_id, self._asker)

    def __exit__(self, *exc: object) -> None:
        if self._asker is not None:
            self._carriers.remove(self._task_id, self._asker)


_CARRIERS: Final = _Carriers()


def _asker(ctx: OpContext, view: Conn, task: Task) -> HostAsker | None:
    """How the task's call asks its host (None: it cannot be; the broker is asked)."""
    first = ctx.asker
    if first is None:
        return None
    timeout = float(ctx.settings["proto.askTimeout"])

    async def carrier() -> HostAsker:
        if view.transport == "stdio":
            return first  # the pipe is always there
        return await _CARRIERS.wait(task.id)

    async def deliver(method: str, params: JSON, failed: list[McpError]) -> None:
        while not (key := _key_of(task, params)):
            await task.changed()
        try:
            answer = await for_task(await carrier(), task.id).ask(method, params)
        except McpError as exc:
            failed.append(exc)
            answer = {}
        task.give({key: answer}, hold=False)

    async def ask(method: str, params: JSON) -> JSON:
        failed: list[McpError] = []
        async with anyio.create_task_group() as group:
            group.start_soon(deliver, method, params, failed)
            answer = await task.ask(method, params, timeout)  # input_required meanwhile
            group.cancel_scope.cancel()
        if failed:
            raise failed[0]
        return answer

    return HostAsker(can=first.can, ask=ask, brokered=first.brokered)


def _key_of(task: Task, params: JSON) -> str | None:
    for key, request in task.open_requests().items():
        if request.get("params") is params:
            return key
    return None
