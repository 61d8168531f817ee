"""How a 2025-11-25 host sees a task of the daemon's store: its ``Task`` object, its list
cursor, and the ``notifications/tasks/status`` it is pushed.

Invariants:

- Pure views: nothing here changes a task. Times are ISO 8601 (UTC), durations whole
  milliseconds; ``ttl`` is the one the task is kept for (null: none was set).
- A tool result with ``isError`` is shown ``failed`` (2025-11-25 asks it: S-TASK-16),
  though the store keeps it ``completed`` (the 2026-07-28 extension's word for it);
  ``tasks/result`` still hands out the result itself.
- A cursor is opaque to the host and names the last task of the page by (created, id),
  so a page is not shifted by tasks created or forgotten since; one mcpx did not hand
  out is refused.
- Status notifications go only to the task's own host, only where its revision has
  them and it can be pushed to, and only for changes after the task was created
  (the ``CreateTaskResult`` says that much); none carries related-task ``_meta``.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from mcpx import spec, wire
from mcpx.wire import InvalidParams

from ._conn import Conn

if TYPE_CHECKING:
    from mcpx.ops import OpContext
    from mcpx.tasks import Task, Tasks

__all__ = ["after_cursor", "cursor_of", "push_status", "task_object"]

log = logging.getLogger("mcpx.server")

JSON = dict[str, Any]

_STATUS: Final = "notifications/tasks/status"
_TOOL_ERROR: Final = "the tool reported an error (isError)"


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def task_object(task: Task) -> JSON:
    """The 2025-11-25 ``Task`` for ``task``."""
    status, message = task.status, task.status_message
    if status == "completed" and isinstance(task.result, dict) and task.result.get("isError"):
        status, message = "failed", _TOOL_ERROR
    out: JSON = {
        "taskId": task.id,
        "status": status,
        "createdAt": _iso(task.created),
        "lastUpdatedAt": _iso(task.updated),
        "ttl": None if task.ttl is None else _ms(task.ttl),
        "pollInterval": _ms(task.poll_interval),
    }
    if message:
        out["statusMessage"] = message
    return out


def _order(task: Task) -> tuple[float, str]:
    return (task.created, task.id)


def cursor_of(task: Task) -> str:
    """The cursor of the page after the one ``task`` ends."""
    raw = f"{task.created!r}:{task.id}".encode()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def after_cursor(tasks: list[Task], cursor: object) -> list[Task]:
    """``tasks`` (newest first) after the one ``cursor`` names (None: all of them).

    Raises:
        InvalidParams: a cursor mcpx did not hand out.
    """
    ordered = sorted(tasks, key=_order, reverse=True)
    if cursor is None:
        return ordered
    try:
        created, task_id = base64.urlsafe_b64decode(str(cursor)).decode().split(":", 1)
        last = (float(created), task_id)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidParams("Invalid params: a tasks/list cursor mcpx did not hand out") from None
    return [t for t in ordered if _order(t) < last]


def push_status(ctx: OpContext, tasks: Tasks, view: Conn, task: Task) -> None:
    """Push ``notifications/tasks/status`` to ``view``'s host at each change of ``task``,
    until it ends (nothing when the host cannot take them)."""
    rev = view.revision
    push = view.push
    if push is None or rev is None or not spec.defined("notification", _STATUS, rev, "server"):
        return

    def changed(changed_task: Task) -> None:
        if changed_task is not task:
            return
        frame = wire.notification(_STATUS, task_object(task))
        if task.done:
            stop()
        try:
            push(frame)
        except Exception:  # a host gone away: the task goes on without it
            log.exception("notifications/tasks/status to %s failed", view.identity)
            stop()
            return
        if ctx.trace is not None:
            ctx.trace(rev, frame, None)

    stop: Callable[[], None] = tasks.watch(changed)
