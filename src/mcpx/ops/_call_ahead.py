"""A ``tools/call`` written upstream ahead of its caller, and the route it goes by.

A stdio host's plain ``tools/call`` is written to its upstream as soon as its line is
read (``server._send_ahead``), before the task that serves it runs: ``send_ahead``
writes it, and the caller's own ``request_for_caller`` then takes what was sent
(``client.SENT_AHEAD``); or nobody does, and it is answered and recorded here
(``CallAhead.answered``).

Invariants:

- Only what ``request_for_caller`` would send unchanged and nothing would refuse: no
  ``_meta`` of the caller's (no trace context, no progress token), no ``task``, no
  OpenTelemetry span to open first, not run as an upstream task, an instance ready to
  take it at once. Anything else is sent by the caller, as ever.
- A ``Route`` is what one tool's calls are judged by whatever their arguments (the
  caller's context, the server's config, the catalogued tool); each call is still judged
  for its own arguments (depth, size) and sent to the instance ready now. Whoever keeps a
  route keeps it only while what it was judged from is the same (``server._send_ahead``).
- The call is registered as the caller's from its sending (``CallsInFlight``: the
  upstream may ask at once), and that registration, like the instance's count of it,
  hangs on what was sent (``SentAhead.held``): let go of once, whichever way it ends.
"""

from __future__ import annotations

import logging
import time
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from mcpx import wire
from mcpx.client import SentAhead
from mcpx.config import ServerConfig
from mcpx.pool import UnknownServer

from ._call_timing import CallTiming, answered_ahead, timing_ahead
from ._errors import OpError
from ._later import later
from ._upstream_call import (
    TRACE_KEYS,
    arguments_refusal,
    call_finished,
    registration_key,
    runs_as_task,
    server_refusal_or_config,
    upstream_log_level,
)

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = ["CallAhead", "HostSide", "Route", "route_ahead", "send_ahead"]

log = logging.getLogger("mcpx.ops")


class CallAhead:
    """A ``tools/call`` written ahead of its caller (``send_ahead``): ``sent``, for the
    caller's ``request_for_caller`` to take; or, when the caller never runs, answered
    here (``answered``), with what that call would have recorded."""

    __slots__ = ("ctx", "params", "sent", "server", "started", "timing")

    def __init__(
        self,
        ctx: OpContext,
        server: str,
        params: dict[str, Any],
        sent: SentAhead,
        timing: CallTiming | None,
    ) -> None:
        self.ctx, self.server, self.params, self.sent = ctx, server, params, sent
        self.started = time.monotonic()
        self.timing = timing

    def answered(
        self,
        result: dict[str, Any],
        request: dict[str, Any],
        reply: dict[str, Any],
        host: HostSide,
    ) -> None:
        """Its upstream answered ``result``, a plain one (checked, without nulls), and
        the host's ``request`` was answered ``reply`` without ``request_for_caller``
        nor ``dispatch``: everything held for it is let go now, and what those would
        have recorded (the call's record and metrics, ``call.finished``, the request's
        metrics as ``host`` tells them) is made just after the answer has gone."""
        self.sent.finish()
        later(self._recorded, result, request, reply, host, time.monotonic())

    def _recorded(
        self,
        result: dict[str, Any],
        request: dict[str, Any],
        reply: dict[str, Any],
        host: HostSide,
        ended: float,
    ) -> None:
        ctx, server, params = self.ctx, self.server, self.params
        if self.timing is not None:
            answered_ahead(ctx, server, "tools/call", params, self.timing, result, ended)
        took = ended - self.started
        call_finished(ctx, server, params, took, {"isError": bool(result.get("isError"))})
        if ctx.telemetry is not None:
            rev, session = host.revision, host.session
            ctx.telemetry.served_plain(request, host.transport, reply, rev, session, took)


class HostSide(NamedTuple):
    """The host's side of a call answered ahead: how it came and in which session."""

    transport: str | None
    revision: str | None
    session: str | None


class Route:
    """How the plain calls of one tool of ``server`` go ahead of their callers under
    ``ctx``: judged once (``route_ahead``) for all that does not depend on a call's
    arguments."""

    __slots__ = ("config", "ctx", "level", "scope", "server")

    def __init__(self, ctx: OpContext, server: str, config: ServerConfig) -> None:
        self.ctx, self.server, self.config = ctx, server, config
        self.scope = ctx.pool.scope_key(config, ctx.identity)
        self.level = upstream_log_level(ctx)

    def send(self, params: dict[str, Any]) -> CallAhead | None:
        """The call with ``params`` (``name`` and ``arguments`` only: the route's tool)
        written now (``send_ahead``); None when nothing was."""
        ctx, server = self.ctx, self.server
        if ctx.telemetry is not None and ctx.telemetry.tracing:
            return None
        try:
            arguments_refusal(ctx, "tools/call", params)
        except (OpError, wire.McpError):  # refused: the caller's request says why
            return None
        inst = ctx.pool.ready(server, ctx.identity)
        sent = (
            inst.send_ahead(
                "tools/call",
                params,
                log_level=self.level,
                host_capabilities=ctx.host_capabilities,
            )
            if inst is not None
            else None
        )
        if sent is None or inst is None:
            return None
        log.debug("%s: tools/call %r sent ahead as request %r", server, params["name"], sent.rid)
        registration = ctx.calls.call(
            server, ctx.notify, None, ctx.log_level, ctx.asker, self.scope, ctx.run
        )
        registration.__enter__()
        sent.held[registration_key(server)] = partial(registration.__exit__, None, None, None)
        return CallAhead(ctx, server, params, sent, timing_ahead(ctx, inst))


def route_ahead(ctx: OpContext, server: str, name: object) -> Route | None:
    """How ``request_for_caller(ctx, server, "tools/call", …)`` of the tool ``name``
    can go ahead of its caller; None: it cannot (see the invariants), whatever its
    arguments."""
    if ctx.caller_meta and any(k in ctx.caller_meta for k in TRACE_KEYS):
        return None
    if ctx.telemetry is not None and ctx.telemetry.tracing:
        return None  # the CLIENT span's trace context goes in the request's _meta
    try:
        config = server_refusal_or_config(ctx, server, "tools/call", name)
    except (OpError, UnknownServer):  # refused: the caller's request says why
        return None
    if runs_as_task(ctx, server, {"name": name}, None):
        return None
    return Route(ctx, server, config)


def send_ahead(ctx: OpContext, server: str, params: dict[str, Any]) -> CallAhead | None:
    """The ``tools/call`` that ``request_for_caller(ctx, server, "tools/call", params)``
    is about to send, written now, before the caller's task runs (``CallAhead``); None
    when nothing was (see the invariants). The caller's own request then takes it
    (``SENT_AHEAD``)."""
    if "_meta" in params or "task" in params:
        return None
    route = route_ahead(ctx, server, params.get("name"))
    return None if route is None else route.send(params)
