"""The events handler: ``/v1/events`` as server-sent events, optionally watching a resource.

Invariants: the subscription is made before the response starts, so nothing published
meanwhile is lost; a stream naming a URI holds that resource's upstream subscription for
its lifetime and releases it when it closes; an unknown server is a 404 before anything
is watched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from mcpx.events import EventFilter, sse_stream

from ._errors import OpError, unknown_server
from ._resource_owner import upstream_resource

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = ["events"]


async def events(ctx: OpContext, args: dict[str, Any]) -> Any:
    if ctx.events is None:
        raise OpError(503, "unavailable", "this daemon has no event stream")
    most = int(ctx.settings["events.maxSubscribers"])
    if ctx.events.subscribers >= most:
        # Refused, not evicting an older stream: its reader would lose events unawares.
        raise OpError(
            503,
            "too_many_streams",
            f"{most} event streams are open (events.maxSubscribers); close one and retry",
            {"setting": "events.maxSubscribers", "limit": most},
        )
    # A reconnecting EventSource sends its last id; it is newer than the URL's since.
    since = args.get("Last-Event-ID", args.get("since"))
    if "Last-Event-ID" not in args and since is not None and since > ctx.events.last_seq:
        # The URL's since asks for what came after it: nothing yet, so live events only.
        # (A Last-Event-ID beyond the last came from an earlier daemon: the bus replays.)
        since = None
    if args.get("server") is not None and not ctx.visible(args["server"]):
        raise unknown_server(args["server"], ctx.server_names())
    keepalive = float(ctx.settings["transport.sseKeepAlive"])
    named = args.get("uri")
    if not named:
        wanted = EventFilter.of(args.get("kind"), args.get("server"), None)
        # Subscribed now, before the response starts: nothing published meanwhile is lost.
        return sse_stream(ctx.events.subscribe(wanted, since=since), keepalive)
    # A stream naming a URI watches it for its lifetime: resource.watching says first
    # whether updates will come (and why not), and closing the stream releases it.
    target = await _watch_target(ctx, args.get("server"), named)
    if isinstance(target, str):
        server, uri, reason = args.get("server"), named, target
    else:
        (server, uri), reason = target, None
    # Events carry the upstream's own names: filtered by those.
    sub = ctx.events.subscribe(EventFilter.of(args.get("kind"), server, uri), since=since)
    if not isinstance(target, str):
        reason = await ctx.pool.watches.watch(*target)
    data = {"uri": named, "subscribed": reason is None, "reason": reason}
    ctx.events.publish("resource.watching", data, server=server, uri=uri)
    stream = sse_stream(sub, keepalive)
    if isinstance(target, str) or reason is not None:
        return stream
    return _released(stream, lambda: ctx.pool.watches.unwatch(*target))


async def _watch_target(ctx: OpContext, server: str | None, uri: str) -> tuple[str, str] | str:
    """(server, upstream URI) an events stream watches, or why there is none."""
    if uri.startswith("mcpx://"):
        found = await upstream_resource(ctx, uri)
        return found or f"no resource at {uri[:200]!r}; mcpx serves mcpx://<server>/<uri>"
    if server is None:
        return "name its server (server=…) or use its mcpx:// URI"
    return server, uri


async def _released(
    stream: AsyncIterator[bytes], release: Callable[[], None]
) -> AsyncIterator[bytes]:
    try:
        async for chunk in stream:
            yield chunk
    finally:
        release()
