"""The handlers of /v1/tasks: the operator's view of the daemon's one task store.

The operator sees every task, whoever owns it (``ANY``): /v1 is the operator's door,
behind the daemon's token. A caller the daemon authenticated by OAuth (``oauth:<sub>``,
``OpContext.identity``) is one user among many, not the operator: it sees its own tasks
(and those nobody owns, got by id) only (``owner_seen``). A task's outcome is on its
own (``/v1/tasks/{id}`` and ``/result``), never in a list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import anyio

from mcpx.tasks import ANY, CANCELLED, Task, Tasks
from mcpx.wire import McpError

from ._errors import OpError
from ._table import Status

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = ["owner_seen", "task_store", "tasks_cancel", "tasks_list", "tasks_result", "tasks_show"]

JSON = dict[str, Any]

# Seconds /v1/tasks/{id}/result waits for the end unless told.
_WAIT: Final = 60.0


def task_store(ctx: OpContext) -> Tasks:
    """The daemon's tasks.

    Raises:
        OpError: 503, this daemon runs none.
    """
    if ctx.tasks is None:
        raise OpError(503, "unavailable", "this daemon runs no tasks")
    tasks: Tasks = ctx.tasks
    return tasks


def owner_seen(ctx: OpContext) -> str | None:
    """Whose tasks and questions a /v1 caller sees: an OAuth user its own (its identity),
    the operator (the unix socket, a daemon token) every one (None)."""
    identity = ctx.identity
    return identity if identity is not None and identity.startswith("oauth:") else None


async def tasks_list(ctx: OpContext, args: JSON) -> Any:
    status = args.get("status")
    owner = owner_seen(ctx)
    listed = [
        _listed(task)
        for task in task_store(ctx).list(ANY if owner is None else owner)
        if status is None or task.status == status
    ]
    return {"tasks": listed}


async def tasks_show(ctx: OpContext, args: JSON) -> Any:
    return _task(ctx, args["id"]).as_json()


async def tasks_cancel(ctx: OpContext, args: JSON) -> Any:
    task = _task(ctx, args["id"])
    task.cancel()  # one that had ended stays as it was
    return task.as_json()


async def tasks_result(ctx: OpContext, args: JSON) -> Any:
    """The task's result once it ended; 202 with the task if not within ``wait``."""
    task = _task(ctx, args["id"])
    wait = float(args.get("wait", _WAIT))
    with anyio.move_on_after(wait):
        while not task.done:
            await task.changed()
    if not task.done:
        return Status(202, task.as_json())
    try:
        return task.outcome()
    except McpError as exc:  # the call's error, as /v1/call would give it
        raise _failed(task, exc) from exc


def _failed(task: Task, exc: McpError) -> OpError:
    details = {"server": task.server, "jsonrpc": exc.to_error()}
    if exc.code == CANCELLED:
        return OpError(409, "task_cancelled", f"task {task.id} was cancelled", details)
    return OpError(502, "upstream_error", f"{task.server} call failed: {exc.message}", details)


def _listed(task: Task) -> JSON:
    shown = task.as_json()
    shown.pop("result", None)
    shown.pop("error", None)
    return shown


def _task(ctx: OpContext, task_id: str) -> Task:
    owner = owner_seen(ctx)
    found = task_store(ctx).get(task_id, ANY if owner is None else owner)
    if found is None:
        raise OpError(
            404, "unknown_task", f"no task {task_id!r} (unknown, or finished and forgotten)"
        )
    return found
