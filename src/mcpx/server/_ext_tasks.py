"""The 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``), server-directed.

A host that declared the extension on its request gets a ``CreateTaskResult`` for a call
mcpx decides to run as a task; ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` serve
it, and ``subscriptions/listen`` may follow it (``_listen``).

Invariants:

- The ``task`` field is ignored: the tool decides. A call of a tool whose
  ``execution.taskSupport`` is ``optional`` or ``required`` (``mcpx_call`` counts as
  ``optional``) is a task once it has run ``TASK_AFTER`` (250 ms), one that declared
  nothing once it has run ``protoMessages.taskAfter``, a ``forbidden`` one never. A call
  that ends sooner is answered with its own result (or error).
- A ``required`` tool called without the extension declared is -32021 with
  ``data.requiredCapabilities`` before it runs; so is every extension method
  (``tasks/get``, ``tasks/update``, ``tasks/cancel``). ``tasks/result`` and ``tasks/list``
  are not the extension's: -32601.
- A task is the store's (``mcpx.tasks``), owned by the caller identity the request named
  (``dev.mcpx/session``), else by nobody: whoever holds its id reads it. Another owner's
  task is answered as an unknown one (-32602): no existence leak.
- ``CreateTaskResult`` is sent only once the task is in the store (``tasks/get`` resolves
  it at once); it and every ``DetailedTask`` carry no ``requestState``, integer ``ttlMs``
  (when the store forgets it) and ``pollIntervalMs``. ``tasks/get`` inlines the result
  of a completed task (a tool's ``isError`` result too), the JSON-RPC error of a failed
  one, the open questions of one in ``input_required``; no related-task ``_meta``.
- A call ``_rounds`` serves (a host that can be asked) is its task already: inside it
  (``directing``) ``maybe_task`` only runs the call, and ``_rounds`` decides when it is
  answered with ``CreateTaskResult`` (``delay``, ``created``).
"""

from __future__ import annotations

import contextlib
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import anyio

from mcpx import spec
from mcpx.shapes import downgrade, unrelated
from mcpx.wire import InvalidParams, McpError, MethodNotFound, MissingRequiredClientCapability

from . import _modes as modes
from . import _passthrough as passthrough
from ._conn import Conn
from ._identity import identity_for

if TYPE_CHECKING:
    from mcpx.ops import OpContext
    from mcpx.tasks import Task, Tasks

__all__ = [
    "TASK_AFTER",
    "created",
    "declared",
    "delay",
    "detailed",
    "directing",
    "handle",
    "maybe_task",
    "missing",
    "owner_of",
    "task_support",
]

JSON = dict[str, Any]

# How long a task-supporting call runs before it is answered with CreateTaskResult.
TASK_AFTER: Final = 0.25
_REMOVED: Final = frozenset({"tasks/result", "tasks/list"})
# Set while a call runs as a task _rounds started: it directs the call, not maybe_task.
_DIRECTED: ContextVar[bool] = ContextVar("mcpx_ext_task_directed", default=False)


def declared(view: Conn) -> bool:
    """Whether the request's host declared the extension."""
    extensions = view.capabilities.get("extensions")
    return isinstance(extensions, Mapping) and spec.TASKS_EXTENSION in extensions


def missing(what: str) -> MissingRequiredClientCapability:
    """-32021 naming the extension: ``what`` needs it declared on the request."""
    return MissingRequiredClientCapability.for_capabilities(
        {"extensions": {spec.TASKS_EXTENSION: {}}},
        f"Missing required client capability: {what} needs the {spec.TASKS_EXTENSION} "
        "extension declared in the request's clientCapabilities",
    )


def owner_of(view: Conn, params: Mapping[str, Any]) -> str | None:
    """The caller identity a request named (its tasks' owner), or None."""
    meta = params.get("_meta")
    return identity_for(meta if isinstance(meta, Mapping) else None, view, process="")


@contextlib.contextmanager
def directing() -> Iterator[None]:
    """While open, this call runs as a task already: ``maybe_task`` only runs it."""
    token = _DIRECTED.set(True)
    try:
        yield
    finally:
        _DIRECTED.reset(token)


async def task_support(ctx: OpContext, params: Mapping[str, Any]) -> str | None:
    """The called tool's ``execution.taskSupport`` (None: it declared none).

    ``mcpx_call`` is ``optional``; a pass-through or ``full`` tool has the upstream's, as
    catalogued. A listing that fails is left for the call itself to report.
    """
    name = params.get("name")
    if not isinstance(name, str):
        return None
    surface = modes.mode(ctx)
    own = modes.own_ops(surface)
    if passthrough.servers(ctx):
        try:
            listed = await passthrough.merged(ctx, "tools")
        except McpError:
            listed = []
        for _, item in listed:
            if item.get("name") == name:
                return _support(item)
    if name in own:
        return "optional" if own[name].name in ("call", "exec") else None
    split = modes.split_name(name, ctx) if surface == "full" else None
    if split is not None:
        server, tool = split
        for item in ctx.catalogue.known(server).get("tools") or []:
            if isinstance(item, Mapping) and item.get("name") == tool:
                return _support(item)
    return None


def _support(tool: Mapping[str, Any]) -> str | None:
    execution = tool.get("execution")
    found = execution.get("taskSupport") if isinstance(execution, Mapping) else None
    return found if isinstance(found, str) else None


def delay(support: str | None, ctx: OpContext) -> float | None:
    """How long a call of a tool with ``support`` runs before it is a task (None: never)."""
    if support == "forbidden":
        return None
    if support in ("optional", "required"):
        return TASK_AFTER
    return float(ctx.settings["protoMessages.taskAfter"])


async def maybe_task(
    ctx: OpContext,
    view: Conn,
    params: Mapping[str, Any],
    run: Callable[[OpContext], Awaitable[JSON]],
) -> JSON:
    """``tools/call`` from a 2026-07-28 host: the call's result, or a ``CreateTaskResult``
    when it runs past its tool's ``delay`` and the host declared the extension.

    Raises:
        MissingRequiredClientCapability: a ``required`` tool, the extension not declared.
    """
    if _DIRECTED.get():  # _rounds runs it as a task and answers for it
        return await run(ctx)
    support = await task_support(ctx, params)
    if not declared(view):
        if support == "required":
            raise missing(f"tool {params.get('name')!r} runs only as a task: it")
        return await run(ctx)
    after = delay(support, ctx)
    if after is None or ctx.tasks is None:
        return await run(ctx)
    owner = owner_of(view, params)
    # Unnamed, the request's own scope ends with the request: the task gets one of its own.
    scope = ctx.identity if owner is not None else f"task:{secrets.token_hex(8)}"

    async def running(task: Task) -> JSON:
        def notify(method: str, note: JSON) -> None:
            if task.notify is not None:
                task.notify(method, note)

        try:
            with directing():
                return await run(replace(ctx, identity=scope, notify=notify))
        finally:
            if owner is None and ctx.pool.holds(str(scope)):
                with anyio.CancelScope(shield=True):
                    await ctx.pool.release(str(scope))

    name = params.get("name")
    task = ctx.tasks.start(_server_of(params), f"tools/call {name}", running, owner=owner)
    task.notify = ctx.notify  # progress reaches the request while it waits
    try:
        with anyio.move_on_after(after):
            while not task.done:
                await task.changed()
    finally:
        task.notify = None  # a task's progress goes nowhere once it is answered
    if task.done:
        return task.outcome()
    return created(task, ctx.tasks)


def _server_of(params: Mapping[str, Any]) -> str:
    arguments = params.get("arguments")
    server = arguments.get("server") if isinstance(arguments, Mapping) else None
    return server if isinstance(server, str) else ""


async def handle(method: str, ctx: OpContext, view: Conn, params: Mapping[str, Any]) -> JSON:
    """A ``tasks/*`` request from a 2026-07-28 host.

    Raises:
        MethodNotFound: ``tasks/result`` or ``tasks/list`` (not the extension's).
        MissingRequiredClientCapability: the extension not declared on the request.
        InvalidParams: no such task (or another owner's), or malformed params.
    """
    if method in _REMOVED:
        raise MethodNotFound(f"Method not found: {method}", {"method": method})
    if not declared(view):
        raise missing(method)
    tasks = ctx.tasks
    if tasks is None:  # a daemon that keeps no tasks made none
        raise InvalidParams("Failed to retrieve task: Task not found (no tasks are kept here)")
    task = _find(tasks, view, params)
    if method == "tasks/get":
        return detailed(task, tasks, view.revision or spec.NEWEST, ctx)
    if method == "tasks/update":
        responses = params.get("inputResponses")
        if not isinstance(responses, Mapping) or not all(
            isinstance(answer, Mapping) for answer in responses.values()
        ):
            raise InvalidParams(
                "Invalid params: tasks/update needs inputResponses, an object of result "
                "objects by inputRequests key"
            )
        task.give(responses, hold=False)  # unknown or answered keys are ignored
        return {}
    task.cancel()  # tasks/cancel: a task that had ended keeps its end (no error)
    return {}


def _find(tasks: Tasks, view: Conn, params: Mapping[str, Any]) -> Task:
    task_id = params.get("taskId")
    if not isinstance(task_id, str):
        raise InvalidParams("Invalid params: taskId must be a string")
    found = tasks.get(task_id, owner_of(view, params))
    if found is None:
        # Unknown, forgotten (past its TTL) or another owner's: one answer.
        raise InvalidParams(
            f"Failed to retrieve task: Task not found ({task_id!r} is unknown, or expired "
            "and forgotten)",
            {"taskId": task_id},
        )
    return found


# -- shapes -------------------------------------------------------------------------


def created(task: Task, tasks: Tasks) -> JSON:
    """The ``CreateTaskResult`` answering the request that started ``task``."""
    return {"resultType": "task", **_task(task, tasks)}


def detailed(task: Task, tasks: Tasks, rev: str, ctx: OpContext) -> JSON:
    """The ``DetailedTask`` ``tasks/get`` answers and ``notifications/tasks`` carries."""
    out = _task(task, tasks)
    if task.status == "input_required":
        out["inputRequests"] = task.open_requests()
    elif task.status == "completed" and task.result is not None:
        out["result"] = _inlined(task.result, rev, ctx)
    elif task.status == "failed" and task.error is not None:
        out["error"] = dict(task.error)
    return out


def _task(task: Task, tasks: Tasks) -> JSON:
    out: JSON = {"taskId": task.id, "status": task.status}
    if task.status_message is not None:
        out["statusMessage"] = task.status_message
    out["createdAt"] = _iso(task.created)
    out["lastUpdatedAt"] = _iso(task.updated)
    out["ttlMs"] = max(1, math.ceil(_lifetime(task, tasks) * 1000))
    out["pollIntervalMs"] = max(1, round(task.poll_interval * 1000))
    return out


def _lifetime(task: Task, tasks: Tasks) -> float:
    """Seconds from its creation until the store forgets ``task``: its ttl, else ``keep``
    after it ends (while it runs, as if it ended now: the value grows, as it may)."""
    if task.ttl is not None:
        return task.ttl
    return (task.finished or time.time()) - task.created + tasks.keep


def _inlined(result: JSON, rev: str, ctx: OpContext) -> JSON:
    """The stored result as the call would have answered this revision, a copy."""
    out = dict(downgrade("tools/call", result, rev, policy=ctx.settings.policy()))
    out = unrelated(out)
    out.setdefault("resultType", "complete")
    return out


def _iso(when: float) -> str:
    stamp = datetime.fromtimestamp(when, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"
