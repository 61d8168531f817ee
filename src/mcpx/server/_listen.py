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
- The stream lasts until the host ends it (closing the HTTP response, or
  ``notifications/cancelled`` on stdio), or the daemon stops: then it ends gracefully,
  with the listen request's result. The listening view leaves the audience either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from mcpx.wire import InvalidParams

from . import _passthrough as passthrough
from ._conn import Conn, Subscriptions
from ._subscriptions import release_all, subscribe

if TYPE_CHECKING:
    from mcpx.ops import OpContext

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
    """
    asked = params.get("notifications")
    if not isinstance(asked, Mapping):
        raise InvalidParams("subscriptions/listen needs a notifications filter (an object)")
    if notify is None or audience is None:
        raise InvalidParams("subscriptions/listen needs a transport that can stream")
    honoured = agreed(asked, ctx)
    tag = {SUBSCRIPTION_ID: request_id}

    def push(frame: JSON) -> None:
        params = dict(frame.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), **tag}
        notify(str(frame["method"]), params)

    kinds = {kind for flag, kind in _FLAGS.items() if honoured.get(flag)}
    listening = dataclasses.replace(
        view, push=push, subscriptions=Subscriptions(set(), kinds), watching={}
    )
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
        audience.join(listening)
        await audience.closing.wait()
    finally:
        audience.leave(listening)
        release_all(ctx, listening)
    return {"_meta": tag}  # a graceful end: the daemon is stopping
