"""``dispatch``: one JSON-RPC frame from an MCP host in, the response frame out.

Invariants:

- Every result is built in the newest shape and spelled for the client's revision once,
  at the end (``downgrade``); a 2026-07-28 result then gets its envelope (``resultType``,
  serverInfo, cache hints). Nothing before that point knows the client's revision except
  where a revision decides an error code or the handshake.
- The revision is judged per frame (``judge``), and a 2026-07-28 request is served under
  a view built from its own ``_meta`` alone (``Conn.for_request``).
- A method the revision removed, or one mcpx does not know, is -32601; malformed params
  are -32602. Every failure is an error frame: nothing raised escapes for a request.
- Notifications get no answer, whatever happens while handling them.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import anyio

from mcpx import wire
from mcpx.config import LOG_LEVELS
from mcpx.ops import Caller
from mcpx.shapes import downgrade, downgrade_notification, envelope, server_capabilities
from mcpx.spec import MODERN, NEWEST
from mcpx.wire import (
    MCP_PROTOCOL_VERSION,
    InternalError,
    InvalidParams,
    InvalidRequest,
    McpError,
    MethodNotFound,
    field_value,
)

from . import _core_tasks as core_tasks
from . import _ext_tasks as ext_tasks
from . import _modes as modes
from . import _passthrough as passthrough
from . import _rounds as rounds
from . import _subscriptions as subscriptions
from . import _surface as surface
from ._conn import Conn
from ._host_questions import host_asker
from ._identity import identity_for, profile_for
from ._listen import listen
from ._revision import check_removed, judge, negotiate_initialize, stateless
from ._stateless_checks import check_headers, check_meta

if TYPE_CHECKING:
    # Annotations only: the context brings in the pool, the client and anyio.
    from mcpx.config import Settings
    from mcpx.ops import OpContext

__all__ = ["INSTRUCTIONS", "dispatch", "host_named", "spelled_notify", "spelled_result"]

log = logging.getLogger("mcpx.server")

JSON = dict[str, Any]

# What a host is told at the handshake, in mcpx's default surface.
INSTRUCTIONS: Final = modes.instructions("gateway")


@dataclass(frozen=True)
class _Call:
    """One request being served: its params, the connection view, and the context."""

    method: str
    params: Mapping[str, Any]
    conn: Conn
    ctx: OpContext
    settings: Settings
    revision: str
    request_id: wire.RequestId

    @property
    def page_size(self) -> int:
        return int(self.settings["mcp.pageSize"])


async def dispatch(
    frame: Mapping[str, Any],
    conn: Conn,
    ctx: OpContext,
    *,
    settings: Settings,
    headers: Mapping[str, str] | None = None,
    notify: Callable[[JSON], None] | None = None,
    ask: Callable[[str, JSON], Awaitable[JSON]] | None = None,
) -> JSON | None:
    """The response to ``frame`` (None for a notification).

    ``headers`` are the HTTP request's (a case-insensitive mapping; None on stdio): its
    ``MCP-Protocol-Version`` judges the revision of a legacy message, and a 2026-07-28
    request's mirrored headers must agree with its body.
    ``notify`` sends a notification frame to the client at once, ahead of the response
    (on the request's own stream, or the stdio pipe); None: nothing can be.
    ``ask`` sends the client a request (method, params) and returns its result, for
    an upstream's question during this request; None: the client cannot be asked.
    A legacy ``initialize`` records the handshake on ``conn``.
    """
    if "id" not in frame:
        # cancelled is handled by the transport that runs the request, as only it can
        # stop it.
        if frame.get("method") == "notifications/initialized":
            conn.initialized = True
        return None
    request_id = frame["id"]
    judged: list[str] = []
    telemetry = ctx.telemetry
    # The SERVER span and the request's duration (mcpx.ops Telemetry); none without it.
    with (
        telemetry.serving(frame, conn.transport, request_id)
        if telemetry is not None
        else nullcontext()
    ) as served:
        try:
            result = await _answer(frame, conn, ctx, settings, headers, judged, notify, ask)
            reply = wire.result(request_id, result)
        except McpError as exc:
            reply = wire.error(request_id, _for_revision(exc, judged[-1] if judged else None))
        except Exception as exc:  # a defect: still an answer, and the session goes on
            log.exception("request failed: %s", frame.get("method"))
            reply = wire.error(request_id, InternalError(f"internal error: {exc}"))
        if served is not None:
            rev = judged[-1] if judged else conn.revision
            # A 2026-07-28 request has no session, whatever the connection had.
            served.answered(reply, rev, None if rev in MODERN else conn.session_id)
    if ctx.trace is not None:
        method = frame.get("method")
        answering = method if isinstance(method, str) else None
        ctx.trace(judged[-1] if judged else conn.revision, reply, answering)
    return reply


# The codes 2026-07-28 defines in the range it reserves (-32000 to -32099).
_MODERN_RESERVED = frozenset({-32020, -32021, -32022})


def _for_revision(exc: McpError, rev: str | None) -> McpError:
    """An error as a 2026-07-28 host may be sent it (S-ERR-3, S-ERR-4): an upstream's
    -32002 (resource not found, legacy) is -32602 there; any other code of the reserved
    range that revision does not define (-32042, an SDK's -32001 timeout …) is -32603,
    the upstream's code and data kept in ``data``. Other revisions get it unchanged."""
    if rev not in MODERN or not -32099 <= exc.code <= -32000 or exc.code in _MODERN_RESERVED:
        return exc
    if exc.code == -32002:
        return InvalidParams(exc.message, exc.data, remote=exc.remote)
    data = {"code": exc.code} | ({"data": exc.data} if exc.has_data else {})
    return InternalError(exc.message, data, remote=exc.remote)


async def _answer(
    frame: Mapping[str, Any],
    conn: Conn,
    ctx: OpContext,
    settings: Settings,
    headers: Mapping[str, str] | None,
    judged: list[str],
    notify: Callable[[JSON], None] | None,
    ask: Callable[[str, JSON], Awaitable[JSON]] | None,
) -> JSON:
    method, params = frame.get("method"), frame.get("params", {})
    if not isinstance(method, str):
        raise InvalidRequest("Invalid request: method must be a string")
    if not isinstance(params, Mapping):
        raise InvalidParams("Invalid params: params must be an object")
    header_version = field_value(headers, MCP_PROTOCOL_VERSION) if headers is not None else None
    if headers is not None and stateless(frame, header_version):
        judged.append(NEWEST)  # a refusal here is spelled for the era it was sent in
        # _meta first: a request without it is -32602 whatever its headers say.
        check_meta(params)
        # A pass-through tool's x-mcp-header marks ask for Mcp-Param-* headers.
        schema = (
            await passthrough.tool_schema(ctx, params.get("name"))
            if method == "tools/call"
            else None
        )
        check_headers(headers, frame, tool_input_schema=schema)
    policy = settings.policy()
    rev = judge(frame, conn, transport=conn.transport, header_version=header_version, policy=policy)
    judged.append(rev)
    view = conn
    if rev in MODERN:
        check_meta(params)
        view = conn.for_request(params)
    check_removed(method, rev)
    handler = _ROUTES.get(method)
    if handler is None or (method in _MODERN_ONLY and rev not in MODERN):
        raise MethodNotFound(f"Method not found: {method}", {"method": method})
    meta = params.get("_meta")
    identity = identity_for(
        meta if isinstance(meta, Mapping) else None, view, process=conn.identity or "stdio"
    )
    # None: a scope of its own (a 2026-07-28 request); what it started ends with it.
    scope = identity or f"request:{next(_REQUESTS)}"
    # A 2026-07-28 host's capabilities go upstream with its call, narrowing mcpx's own.
    host = view.capabilities if rev in MODERN else None
    # A 2026-07-28 host is never sent a request (its stdio transport forbids it); a
    # legacy one only once it has said initialized.
    asker = host_asker(view, rev, ask) if ask and rev not in MODERN and view.initialized else None
    per_request = ctx.evolve(
        passthrough=conn.passthrough,
        profile=profile_for(conn, settings),
        identity=scope,
        host_capabilities=host,
        notify=spelled_notify(notify, rev, ctx, settings),
        log_level=view.log_level,
        caller_meta=dict(meta) if isinstance(meta, Mapping) else None,
        asker=asker,
        caller=Caller("mcp", conn.transport, host_named(view.client_info), rev),
    )
    call = _Call(method, params, view, per_request, settings, rev, frame["id"])
    if rev in MODERN and rounds.in_rounds(per_request, view, method, params):
        # It may outlive this request (answered input_required): a task of its own,
        # which releases the request's scope when the call ends.
        release = None if identity is not None else partial(ctx.pool.release, scope)
        result = await rounds.answer(
            per_request, view, method, params, lambda c: handler(replace(call, ctx=c)), release
        )
        return spelled_result(method, result, rev, ctx, settings)
    try:
        result = await handler(call)
    finally:
        # Checked first: almost no request starts an instance of its own.
        if identity is None and ctx.pool.holds(scope):
            with anyio.CancelScope(shield=True):
                await ctx.pool.release(scope)
    return spelled_result(method, result, rev, ctx, settings)


def host_named(info: Mapping[str, Any] | None) -> str | None:
    """The host as its clientInfo names it, for the call log."""
    if not info or not isinstance(info.get("name"), str):
        return None
    version = info.get("version")
    return f"{info['name']} {version}" if isinstance(version, str) else str(info["name"])


def spelled_notify(
    send: Callable[[JSON], None] | None, rev: str, ctx: OpContext, settings: Settings
) -> Callable[[str, JSON], None] | None:
    """``send`` for notifications built in the newest shape, spelled for ``rev``."""
    if send is None:
        return None
    policy = settings.policy()

    def notify(method: str, params: JSON) -> None:
        frame = wire.notification(method, downgrade_notification(method, params, rev, policy))
        if ctx.trace is not None:
            ctx.trace(rev, frame, None)
        send(frame)

    return notify


def spelled_result(method: str, result: JSON, rev: str, ctx: OpContext, settings: Settings) -> JSON:
    """``result``, built in the newest shape, as a host of ``rev`` is sent it."""
    out: JSON = downgrade(method, result, rev, policy=settings.policy())
    if rev not in MODERN:
        return out
    wrapped: JSON = envelope(
        method,
        out,
        server_info=_server_info(ctx),
        list_max_age_s=float(settings["protoMessages.listMaxAge"]),
        read_max_age_s=float(settings["protoMessages.readMaxAge"]),
    )
    return wrapped


def _server_info(ctx: OpContext) -> JSON:
    return {"name": "mcpx", "version": ctx.version}


# -- lifecycle and utilities ---------------------------------------------------


async def _initialize(call: _Call) -> JSON:
    asked = call.params.get("protocolVersion")
    rev = negotiate_initialize(asked if isinstance(asked, str) else None, call.settings.policy())
    call.conn.initialize(rev, call.params)
    return {
        "protocolVersion": rev,
        "capabilities": _capabilities(call, rev),
        "serverInfo": _server_info(call.ctx),
        "instructions": modes.instructions(modes.mode(call.ctx)),
    }


async def _discover(call: _Call) -> JSON:
    return {
        "supportedVersions": [v for v in MODERN if v in call.settings.policy().precedence],
        "capabilities": _capabilities(call, call.revision),
        "instructions": modes.instructions(modes.mode(call.ctx)),
    }


def _capabilities(call: _Call, rev: str) -> JSON:
    # Upstream tools listed as mcpx's: their list changes are relayed.
    through = bool(passthrough.servers(call.ctx)) or modes.mode(call.ctx) == "full"
    # A 2026-07-28 host is pushed to on its subscriptions/listen stream.
    can_push = call.conn.can_push or rev in MODERN
    return server_capabilities(
        rev, passthrough=through, can_push=can_push, tasks=call.ctx.tasks is not None
    )


async def _empty(call: _Call) -> JSON:
    return {}


async def _set_level(call: _Call) -> JSON:
    level = call.params.get("level")
    if level not in LOG_LEVELS:
        levels = ", ".join(LOG_LEVELS)
        raise InvalidParams(f"Invalid params: logging/setLevel needs a level, one of {levels}")
    call.conn.log_level = level
    return {}


async def _subscribe(call: _Call) -> JSON:
    # Always agreed (a standing interest); a warning says when no update can come.
    await subscriptions.subscribe(call.ctx, call.conn, _uri(call))
    return {}


async def _unsubscribe(call: _Call) -> JSON:
    subscriptions.unsubscribe(call.ctx, call.conn, _uri(call))
    return {}


def _uri(call: _Call) -> str:
    uri = call.params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParams(f"Invalid params: {call.method} needs a uri (a string)")
    return uri


# -- the gateway surface -------------------------------------------------------


async def _tools_list(call: _Call) -> JSON:
    return await surface.list_tools(call.ctx, call.params, call.page_size)


async def _tools_call(call: _Call) -> JSON:
    def run(ctx: OpContext) -> Awaitable[JSON]:
        return surface.call_tool(ctx, call.params)

    if call.revision not in MODERN and "task" in call.params:
        return await core_tasks.call_as_task(call.ctx, call.conn, call.params, run)
    if call.revision in MODERN:
        return await ext_tasks.maybe_task(call.ctx, call.conn, call.params, run)
    return await run(call.ctx)


async def _tasks(call: _Call) -> JSON:
    # Core tasks to legacy hosts (accepted from any), the extension to 2026-07-28 ones.
    if call.revision in MODERN:
        return await ext_tasks.handle(call.method, call.ctx, call.conn, call.params)
    return await core_tasks.handle(call.method, call.ctx, call.conn, call.params)


async def _prompts_list(call: _Call) -> JSON:
    return await surface.list_prompts(call.ctx, call.params, call.page_size)


async def _prompts_get(call: _Call) -> JSON:
    return await surface.get_prompt(call.ctx, call.params)


async def _resources_list(call: _Call) -> JSON:
    return await surface.list_resources(call.ctx, call.params, call.page_size)


async def _templates_list(call: _Call) -> JSON:
    return await surface.list_templates(call.ctx, call.params, call.page_size)


async def _resources_read(call: _Call) -> JSON:
    return await surface.read_resource(call.ctx, call.params, call.revision)


async def _listen(call: _Call) -> JSON:
    return await listen(
        call.request_id, call.params, call.conn, call.ctx, call.ctx.audience, call.ctx.notify
    )


async def _complete(call: _Call) -> JSON:
    return await surface.complete(call.ctx, call.params, call.revision)


_ROUTES: Final[dict[str, Callable[[_Call], Awaitable[JSON]]]] = {
    "initialize": _initialize,
    "ping": _empty,
    "server/discover": _discover,
    "logging/setLevel": _set_level,
    "tools/list": _tools_list,
    "tools/call": _tools_call,
    "prompts/list": _prompts_list,
    "prompts/get": _prompts_get,
    "resources/list": _resources_list,
    "resources/templates/list": _templates_list,
    "resources/read": _resources_read,
    "resources/subscribe": _subscribe,
    "resources/unsubscribe": _unsubscribe,
    "completion/complete": _complete,
    "subscriptions/listen": _listen,
    "tasks/get": _tasks,
    "tasks/result": _tasks,
    "tasks/list": _tasks,
    "tasks/cancel": _tasks,
    "tasks/update": _tasks,
}
# Scopes for requests that are their own (2026-07-28 without a named session).
_REQUESTS: Final = itertools.count(1)
# No legacy revision has a DiscoverResult to answer with.
_MODERN_ONLY: Final = frozenset({"server/discover", "subscriptions/listen"})
