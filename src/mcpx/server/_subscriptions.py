"""A host's resource subscriptions, mapped to the upstream that owns each URI.

Invariants:

- A host names a URI as it was listed to it: ``mcpx://<server>/<uri>``, or a pass-through
  server's own URI. Either is resolved to (server, upstream URI) once, when subscribed,
  and the pool counts the watchers of that pair (``pool.watches``).
- Subscribing succeeds: a subscription is a standing interest, not a lookup. When
  no update can come (no server owns the URI, or its server did not declare
  ``resources.subscribe``) a warning says so, in the daemon log and on /v1/events.
  The one refusal: a connection (a session, a stdio host, a listen stream) holds at
  most ``proto.maxSubscriptions`` URIs; one more is -429 naming the setting (refused,
  not evicting an older one: the host would never learn that it stopped hearing).
- Every subscription a connection holds is released when it unsubscribes or ends.
- An update reaches each connection under the URI that connection subscribed with.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mcpx.ops import split_gateway, upstream_resource
from mcpx.wire import Throttled

from . import _passthrough as passthrough
from ._conn import Conn

if TYPE_CHECKING:
    from mcpx.ops import OpContext

__all__ = ["release_all", "same_uri", "subscribe", "unsubscribe"]

log = logging.getLogger("mcpx.server")


def same_uri(a: str, b: str) -> bool:
    # Absolute-path URIs are listed without their leading "/": compared without it.
    return a.lstrip("/") == b.lstrip("/")


async def _owner(ctx: OpContext, uri: str) -> tuple[str, str] | None:
    if split_gateway(uri) is not None:
        return await upstream_resource(ctx, uri)
    server = await passthrough.resource_owner(ctx, uri)
    return None if server is None else (server, uri)


async def subscribe(ctx: OpContext, conn: Conn, uri: str) -> str | None:
    """Subscribe ``conn`` to ``uri``; None when updates will come, else why not.

    Raises:
        Throttled: ``conn`` holds ``proto.maxSubscriptions`` URIs already.
    """
    most = int(ctx.settings["proto.maxSubscriptions"])
    if uri not in conn.subscriptions.uris and len(conn.subscriptions.uris) >= most:
        raise Throttled(
            f"this connection holds {most} resource subscriptions (proto.maxSubscriptions); "
            "unsubscribe from one first"
        )
    conn.subscriptions.uris.add(uri)
    if uri in conn.watching:
        return None
    target = await _owner(ctx, uri)
    reason: str | None = None
    if target is None:
        reason = "no configured server owns it"
    else:
        reason = await ctx.pool.watches.watch(*target)
        if reason is None:
            conn.watching[uri] = target
    if reason is not None:
        log.warning("no updates will be delivered for %s: %s", uri, reason)
        if ctx.events is not None:
            data = {
                "level": "warning",
                "message": f"no updates will be delivered for {uri}: {reason}",
            }
            ctx.events.publish("server.log", data, uri=uri)
    return reason


def unsubscribe(ctx: OpContext, conn: Conn, uri: str) -> None:
    conn.subscriptions.uris.discard(uri)
    target = conn.watching.pop(uri, None)
    if target is not None:
        ctx.pool.watches.unwatch(*target)


def release_all(ctx: OpContext, conn: Conn) -> None:
    """Release every subscription ``conn`` holds (it ended)."""
    for uri in list(conn.watching):
        unsubscribe(ctx, conn, uri)
