"""``subscriptions/listen``: a 2026-07-28 host's stream of notifications.

Invariants:

- The acknowledgement is the first message carrying the subscription's id, and it
  lists only what mcpx will deliver: ``toolsListChanged`` where the tool list can change
  (pass-through), ``resourcesListChanged`` (every server's resources are listed), never
  ``promptsListChanged`` (mcpx's prompt list follows configuration and its cache), and
  of ``resourceSubscriptions`` only the URIs whose updates will arrive; those are
  watched upstream for the stream's life and released when it ends.
- Everything sent on the stream carries ``io.modelcontextprotocol/subscriptionId`` (the
  listen request's id) in ``_meta``; progress and log lines never go on it.
- ``taskIds`` (the tasks extension, which the request must declare: else -32021) are
  acknowledged as far as the caller may see them (``_ext_tasks``: unknown and other
  owners' ids are left out); each then gets ``notifications/tasks`` at once and at every
  change of the task, each the ``DetailedTask`` ``tasks/get`` would answer then.
- The stream lasts until the host ends it (closing the HTTP response, or
  ``notifications/cancelled`` on stdio), or the daemon stops: then it ends gracefully,
  with the listen request's result. The listening view leaves the audience either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from mcpx.spec import NEWEST
from mcpx.wire import InvalidParams

from . import _ext_tasks as ext_tasks
from . import _passthrough as passthrough
from ._conn import Conn, Subscriptions
from ._subscriptions import release_all, subscribe

if TYPE_CHECKING:
    from mcpx.ops import OpContext
    from mcpx.tasks import Task

    from ._audience import Audience

__all__ = ["SUBSCRIPTION_ID", "agreed", "listen"]

SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
_FLAGS: Final = {
    "toolsListChanged": "tools",
    "promptsListChanged": "prompts",
    "resourcesListChanged": "resources",
}

JSON = dict[str, Any]


def agreed(asked: Mapping[str, Any], ctx: OpContext) -> JSON:
    """The list-change part of ``asked`` (a SubscriptionFilter) mcpx will honour."""
    out: JSON = {}
    if asked.get("toolsListChanged") is True and passthrough.servers(ctx):
        out["toolsListChanged"] = True
    if asked.get("resourcesListChanged") is True:
        out["resourcesListChanged"] = True
    return out


async def listen(
    request_id: object,
    params: Mapping[str, Any],
    view: Conn,
    ctx: OpContext,
    audience: Audience | None,
    notify: Callable[[str, JSON], None] | None,
) -> JSON:
    """Serve one listen stream until the host ends it.

    Raises:
        InvalidParams: no ``notifications`` filter, or nothing to stream on.
        MissingRequiredClientCapability: ``taskIds`` without the tasks extension.
    """
    asked = params.get("notifications")
    if not isinstance(asked, Mapping):
        raise InvalidParams("subscriptions/listen needs a notifications filter (an object)")
    if notify is None or audience is None:
        raise InvalidParams("subscriptions/listen needs a transport that can stream")
    honoured = agreed(asked, ctx)
    tasks = _followed(asked, params, view, ctx)
    if tasks is not None:
        honoured["taskIds"] = list(tasks)
    tag = {SUBSCRIPTION_ID: request_id}

    def push(frame: JSON) -> None:
        params = dict(frame.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), **tag}
        notify(str(frame["method"]), params)

    kinds = {kind for flag, kind in _FLAGS.items() if honoured.get(flag)}
    listening = dataclasses.replace(
        view, push=push, subscriptions=Subscriptions(set(), kinds), watching={}
    )
    unwatch: Callable[[], None] | None = None
    try:
        uris = asked.get("resourceSubscriptions")
        if isinstance(uris, list):
            # Only the URIs whose updates will arrive are acknowledged.
            named = [u for u in uris if isinstance(u, str)]
            kept = [u for u in named if await subscribe(ctx, listening, u) is None]
            honoured["resourceSubscriptions"] = kept
        notify(
            "notifications/subscriptions/acknowledged", {"notifications": honoured, "_meta": tag}
        )
        if tasks and ctx.tasks is not None:
            unwatch = _follow(tasks, view, ctx, push)
        audience.join(listening)
        await audience.closing.wait()
    finally:
        if unwatch is not None:
            unwatch()
        audience.leave(listening)
        release_all(ctx, listening)
    return {"_meta": tag}  # a graceful end: the daemon is stopping


def _followed(
    asked: Mapping[str, Any], params: Mapping[str, Any], view: Conn, ctx: OpContext
) -> dict[str, Task] | None:
    """The tasks of ``taskIds`` the caller may see, by id (None: none were asked for)."""
    ids = asked.get("taskIds")
    if ids is None:
        return None
    if not ext_tasks.declared(view):
        raise ext_tasks.missing("subscriptions/listen with taskIds")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InvalidParams("Invalid params: notifications.taskIds must be a list of strings")
    owner = ext_tasks.owner_of(view, params)
    found = {i: ctx.tasks.get(i, owner) if ctx.tasks is not None else None for i in ids}
    return {i: task for i, task in found.items() if task is not None}


def _follow(
    tasks: dict[str, Task], view: Conn, ctx: OpContext, push: Callable[[JSON], None]
) -> Callable[[], None]:
    """Send each task's state now and at each change; the function that stops it."""
    store = ctx.tasks
    assert store is not None
    rev = view.revision or NEWEST

    def send(task: Task) -> None:
        if task.id in tasks:
            push(
                {
                    "method": "notifications/tasks",
                    "params": ext_tasks.detailed(task, store, rev, ctx),
                }
            )

    for task in tasks.values():
        send(task)
    return store.watch(send)
