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
  legacy upstream that takes the line at once; and nothing that would refuse it there
  (``ops.send_ahead``, ``ops.call_ahead``). Anything else is sent by the request's task,
  as ever.
- The context a call sent ahead is served under is ``dispatch``'s for a plain request
  of the session (its profile, identity, notify, asker, caller), made again whenever
  what it is made of changes (``_served_under``).
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
from mcpx.ops import CallAhead, Caller, call_ahead, input_problem
from mcpx.ops import send_ahead as ops_send_ahead
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

__all__ = ["Contexts", "ServedUnder", "Shape", "reply_ahead", "send_ahead"]

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
    contexts: Contexts | None = None,
) -> tuple[CallAhead, Shape] | None:
    """The ``tools/call`` ``frame`` written upstream now, for the task that serves it on
    ``conn`` to take (or for nobody, when it is answered ahead), with what the surface
    makes of its result; None when nothing was (see the invariants). ``notify`` and
    ``ask`` reach the host as ``dispatch`` is given them: the call is registered with
    them from now (the upstream may ask at once). ``contexts``: the session's own, to
    keep what its calls are served under from one call to the next."""
    if frame.get("method") != "tools/call" or conn.revision not in LEGACY:
        return None  # (without _meta, dispatch judges a legacy session's frame its own)
    params = frame.get("params")
    if not isinstance(params, dict) or not params.keys() <= _PLAIN or not conn.initialized:
        return None
    name = params.get("name")
    if not isinstance(name, str):
        return None
    here = _served_under(ctx, conn, notify, ask, Contexts() if contexts is None else contexts)
    owners = passthrough.owners_now(here.gateway, "tools", here.passthrough())
    if owners is None:
        return None
    server = owners.get(name)
    if server is not None:  # a pass-through tool: its result as the upstream sent it
        ahead = ops_send_ahead(here.forwarded, server, params)
        return None if ahead is None else (ahead, _as_sent)
    op = modes.own_ops(modes.mode(here.gateway)).get(name) if name == _GATEWAY_CALL else None
    args = params.get("arguments")
    if op is None or not isinstance(args, dict) or input_problem(op, args, headers=False):
        return None
    ahead = call_ahead(here.gateway, args)
    return None if ahead is None else (ahead, partial(readable_uris, str(args["server"])))


class ServedUnder:
    """What a session's calls sent ahead are served under: as ``dispatch`` makes it for
    a request of that session, for the gateway's own tools and for a forwarded one; and
    the pass-through servers it sees, while the servers configured are the same."""

    __slots__ = ("_names", "forwarded", "gateway")

    def __init__(self, gateway: OpContext, forwarded: OpContext) -> None:
        self.gateway, self.forwarded = gateway, forwarded
        self._names: tuple[object, tuple[str, ...]] | None = None

    def passthrough(self) -> tuple[str, ...]:
        """``passthrough.servers`` for these requests (the servers configured are
        replaced whole when they change)."""
        configured = self.gateway.pool.servers
        if self._names is None or self._names[0] is not configured:
            self._names = (configured, passthrough.servers(self.gateway))
        return self._names[1]


class Contexts:
    """A session's ``ServedUnder``, kept from one call to the next (``_served_under``)."""

    __slots__ = ("kept",)

    def __init__(self) -> None:
        # (ctx, its settings, the host's clientInfo: by identity; the rest by value)
        self.kept: tuple[OpContext, object, object, tuple[object, ...], ServedUnder] | None = None


def _served_under(
    ctx: OpContext,
    conn: Conn,
    notify: Callable[[JSON], None] | None,
    ask: Callable[[str, JSON], Awaitable[JSON]] | None,
    contexts: Contexts,
) -> ServedUnder:
    """``dispatch``'s context for a plain request of ``conn``, made again only when
    something it is made of changed (a reload's settings, the session's log level)."""
    settings = ctx.settings
    key = (
        conn.revision,
        conn.log_level,
        conn.passthrough,
        conn.profile,
        conn.identity,
        conn.principal,
        conn.transport,
        notify,
        ask,
    )
    kept = contexts.kept
    info = conn.client_info
    if (
        kept is not None
        and kept[0] is ctx
        and kept[1] is settings
        and kept[2] is info
        and kept[3] == key
    ):
        return kept[4]
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
    served = ServedUnder(gateway, forwarded)
    contexts.kept = (ctx, settings, info, key, served)
    return served


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
