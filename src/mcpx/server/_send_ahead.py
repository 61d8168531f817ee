"""Sending a stdio host's ``tools/call`` upstream as soon as its line is read.

A ``tools/call`` (of a pass-through tool, or of ``mcpx_call``) is most of what a host
sends, and the upstream is the slow part of it: so the request is written to the
upstream in the event loop's read callback, before any task serves it. The upstream's
answer, when it is a plain result, is written to the host as it arrives
(``reply_ahead``); a call so answered needs no task at all (``HostSession.send_ahead``
lets go of it and records it). Any other ending is served by the request's task, going
through ``dispatch`` as every request does: it finds the request written
(``client.SENT_AHEAD``) and takes over what was held for it.

Invariants:

- Only what ``dispatch`` would send unchanged: a legacy session's ``tools/call``
  carrying only ``name`` and ``arguments`` (no ``_meta``: no progress token, no trace
  context, no revision of its own; no ``task``), of a tool a pass-through server
  lists or of ``mcpx_call`` asking for nothing but the call, to a ready instance of a
  stdio upstream that takes the line at once (spelled for its era as the call's first
  exchange would be: a 2026-07-28 upstream's request restates ``_meta``); and nothing
  that would refuse it there (``ops.Route``, ``ops.call_ahead``). Anything else is sent
  by the request's task, as ever.
- The context a call sent ahead is served under is ``dispatch``'s for a plain request
  of the session (its profile, identity, notify, asker, caller), and a pass-through
  tool's route is judged as ``request_for_caller`` judges it (``ops.route_ahead``): both
  kept while nothing they are made of has changed, and made again when it has (``Lane``).
- The task's request takes what was sent ahead only when it is the same request on the
  same connection; one nobody took (the host withdrew its request before it ran) is
  cancelled upstream, and its answer dropped.
- An answer written ahead is the one ``dispatch`` makes (``HostSession.serve`` logs an
  error if they ever differ, when a task runs beside it; tests hold ``reply_ahead``
  equal to ``dispatch``'s spelling) and is the only one sent; none is written for a
  request the host withdrew.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from mcpx import wire
from mcpx.ops import CallAhead, Caller, Route, call_ahead, input_problem, route_ahead
from mcpx.shapes import call_result_problem, without_nulls
from mcpx.spec import LEGACY

from . import _modes as modes
from . import _passthrough as passthrough
from ._conn import Conn
from ._dispatch import host_named, spelled_notify, spelled_result
from ._host_questions import host_asker
from ._identity import identity_for, profile_for
from ._surface import readable_uris

if TYPE_CHECKING:
    from mcpx.ops import OpContext

__all__ = ["Lane", "ServedUnder", "Shape", "reply_ahead", "send_ahead"]

JSON = dict[str, Any]
# What the surface makes of the upstream's result before it is spelled for the host.
Shape = Callable[[JSON], JSON]

# The params of a call that goes upstream exactly as the host sent it.
_PLAIN: Final = frozenset({"name", "arguments"})
_GATEWAY_CALL: Final = "mcpx_call"


def _as_sent(result: JSON) -> JSON:
    return result


def send_ahead(
    ctx: OpContext,
    conn: Conn,
    frame: Mapping[str, Any],
    notify: Callable[[JSON], None] | None = None,
    ask: Callable[[str, JSON], Awaitable[JSON]] | None = None,
    lane: Lane | None = None,
) -> tuple[CallAhead, Shape] | None:
    """The ``tools/call`` ``frame`` written upstream now, for the task that serves it on
    ``conn`` to take (or for nobody, when it is answered ahead), with what the surface
    makes of its result; None when nothing was (see the invariants). ``notify`` and
    ``ask`` reach the host as ``dispatch`` is given them: the call is registered with
    them from now (the upstream may ask at once). ``lane``: the session's own, to keep
    what its calls are judged by from one call to the next."""
    if frame.get("method") != "tools/call" or conn.revision not in LEGACY:
        return None  # (without _meta, dispatch judges a legacy session's frame its own)
    params = frame.get("params")
    if not isinstance(params, dict) or not params.keys() <= _PLAIN or not conn.initialized:
        return None
    name = params.get("name")
    if not isinstance(name, str):
        return None
    if lane is None:
        lane = Lane()
    if not lane.holds(ctx, conn, notify, ask):
        lane.renew(ctx, conn, notify, ask)
    route = lane.routes.get(name, _UNJUDGED)
    if route is _UNJUDGED:
        route = lane.route(name)
    if isinstance(route, Route):  # a pass-through tool: its result as the upstream sent it
        ahead = route.send(params)
        return None if ahead is None else (ahead, _as_sent)
    here = lane.served
    op = modes.own_ops(modes.mode(here.gateway)).get(name) if name == _GATEWAY_CALL else None
    args = params.get("arguments")
    if op is None or not isinstance(args, dict) or input_problem(op, args, headers=False):
        return None
    ahead = call_ahead(here.gateway, args)
    return None if ahead is None else (ahead, partial(readable_uris, str(args["server"])))


class ServedUnder:
    """What a session's calls sent ahead are served under: as ``dispatch`` makes it for
    a request of that session, for the gateway's own tools and for a forwarded one; and
    the pass-through servers it sees."""

    __slots__ = ("forwarded", "gateway", "passthrough")

    def __init__(self, gateway: OpContext, forwarded: OpContext) -> None:
        self.gateway, self.forwarded = gateway, forwarded
        self.passthrough = passthrough.servers(gateway)


# Not judged yet under this lane (``Lane.routes``); None there: judged, and not sent ahead.
_UNJUDGED: Final = object()


class Lane:
    """A session's calls sent ahead: what they are served under (``served``) and each
    pass-through tool's ``Route`` (``routes``), kept from one call to the next while
    nothing they were judged from has changed (``holds``): the daemon's context and
    settings, the session (``Conn.changes``), its ways to the host, the servers
    configured (replaced whole when they change) and the catalogue
    (``Catalogue.version``)."""

    __slots__ = (
        "_ask",
        "_changes",
        "_ctx",
        "_listed",
        "_notify",
        "_servers",
        "_settings",
        "routes",
        "served",
    )

    def __init__(self) -> None:
        self._ctx: OpContext | None = None
        self._settings: object = None
        self._changes = -1
        self._servers: object = None
        self._listed = -1
        self._notify: object = None
        self._ask: object = None
        self.served: ServedUnder
        self.routes: dict[str, Route | None] = {}

    def holds(
        self,
        ctx: OpContext,
        conn: Conn,
        notify: Callable[[JSON], None] | None,
        ask: Callable[[str, JSON], Awaitable[JSON]] | None,
    ) -> bool:
        """Whether what is kept is what ``renew`` would make now."""
        return (
            self._ctx is ctx
            and self._changes == conn.changes
            and self._servers is ctx.pool.servers
            and self._listed == ctx.catalogue.version
            and self._settings is ctx.settings
            and self._notify == notify  # (a bound method is made anew each time)
            and self._ask == ask
        )

    def renew(
        self,
        ctx: OpContext,
        conn: Conn,
        notify: Callable[[JSON], None] | None,
        ask: Callable[[str, JSON], Awaitable[JSON]] | None,
    ) -> None:
        """``dispatch``'s context for a plain request of ``conn`` made again, and every
        route forgotten."""
        settings = ctx.settings
        rev = str(conn.revision)
        who = host_named(conn.client_info)
        gateway = ctx.evolve(
            passthrough=conn.passthrough,
            profile=profile_for(conn, settings),
            identity=identity_for(None, conn, process=conn.identity or "stdio"),
            notify=spelled_notify(notify, rev, ctx, settings),
            log_level=conn.log_level,
            asker=host_asker(conn, rev, ask) if ask is not None else None,
            caller=Caller("mcp", conn.transport, who, rev),
        )
        forwarded = gateway.evolve(caller=Caller("passthrough", conn.transport, who, rev))
        self.served = ServedUnder(gateway, forwarded)
        self.routes = {}
        self._ctx, self._settings, self._changes = ctx, settings, conn.changes
        self._notify, self._ask = notify, ask
        self._servers, self._listed = ctx.pool.servers, ctx.catalogue.version

    def route(self, name: str) -> Route | None:
        """How a call of the tool ``name`` goes ahead: the pass-through server that
        owns it, judged (kept); None when no pass-through server does, or which one
        cannot be told now (not kept: a listing under way)."""
        here = self.served
        owners = passthrough.owners_now(here.gateway, "tools", here.passthrough)
        server = owners.get(name) if owners is not None else None
        if server is None:
            return None
        route = self.routes[name] = route_ahead(here.forwarded, server, name)
        return route


def reply_ahead(
    ctx: OpContext,
    conn: Conn,
    request_id: wire.RequestId,
    outcome: JSON | Exception,
    shape: Shape,
) -> tuple[wire.Frame, JSON] | None:
    """The answer ``dispatch`` gives the call sent ahead, made as the upstream's answer
    arrives, when it is a plain result that passes its check (as ``request_for_caller``
    checks it), so that it can be written to the host at once, with the result as the
    call records it; None for anything else (an error, a malformed result), which only
    ``dispatch`` answers."""
    if not isinstance(outcome, dict) or outcome.get("resultType", "complete") != "complete":
        return None
    if call_result_problem(outcome) is not None:
        return None
    result = without_nulls(outcome)
    spelled = spelled_result("tools/call", shape(result), str(conn.revision), ctx, ctx.settings)
    return wire.result(request_id, spelled), result
