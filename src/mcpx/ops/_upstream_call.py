"""The upstream-call primitive and the one map of its failures to errors.

Every surface (``/v1``, the gateway's MCP tools, pass-through, stdio hosts) reaches an
upstream through ``request_for_caller`` and words its failures from ``upstream_error``:
a /v1 caller gets the ``OpError`` as it is, an MCP host its message as a JSON-RPC error.

Invariants:

- The caller's trace context (``TRACE_KEYS`` in ``_meta``) goes upstream unchanged; its
  progress token never does (``CallsInFlight`` gives the call one of mcpx's own).
- Arguments over ``pool.maxArguments``, or nested over ``_tool_input.MAX_DEPTH`` levels,
  are refused before anything is sent: the caller's error.
- A JSON-RPC error is the upstream's only when it sent it (``remote``); a local one (a
  request that could not be encoded) is mcpx's own failure, never blamed on the upstream
  (C-ERR-6).
- A ``call.finished`` event is published for every ``tools/call``, however it ends (just
  after its answer has gone: ``later``).
- A ``tools/call`` runs as an upstream task (``runs_as_task``) when the catalogued tool's
  ``execution.taskSupport`` is ``required``, or ``optional`` with a caller's budget longer
  than ``pool.callTimeout`` allows a plain request and an upstream that takes tasks.
- An upstream's ``CallToolResult`` is checked for shape (``shapes.call_result_problem``)
  before anyone is handed it: a malformed one is the upstream's failure (502
  ``upstream_error`` naming the server and what was wrong), never relayed as it came.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

from mcpx import wire
from mcpx.client import (
    SENT_AHEAD,
    UpstreamError,
    UpstreamTimeout,
    login_needed,
    offers_tasks,
)
from mcpx.config import ServerConfig, more_verbose
from mcpx.pool import PoolFull, UnknownServer
from mcpx.shapes import call_result_problem, without_nulls

from ._call_timing import recording
from ._errors import OpError
from ._later import later
from ._limits import check_arguments_size
from ._tool_input import check_depth

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = [
    "LOGIN",
    "TRACE_KEYS",
    "arguments_refusal",
    "call_finished",
    "login_needed_error",
    "registration_key",
    "request_for_caller",
    "runs_as_task",
    "server_refusal_or_config",
    "upstream",
    "upstream_error",
]

log = logging.getLogger("mcpx.ops")

# W3C trace context in _meta: passed upstream unchanged.
TRACE_KEYS: Final = ("traceparent", "tracestate", "baggage")

T = TypeVar("T")


async def upstream(server: str, call: Awaitable[T]) -> T:
    """``call``'s result; the pool's and the upstream's failures as /v1 errors."""
    try:
        return await call
    except Exception as exc:
        translated = upstream_error(server, exc)
        if translated is None:
            raise
        raise translated from exc


def upstream_error(server: str, exc: Exception) -> OpError | None:
    """``exc`` as the /v1 error it is, or None when it is not an upstream call's failure."""

    if isinstance(exc, UnknownServer):
        return OpError(404, "unknown_server", str(exc), {"known": exc.known})
    if (needed := login_needed(exc)) is not None:
        # 424: the call depends on a sign-in nobody has done (not 401/403: those are
        # about the caller's own credentials to mcpx, which are fine).
        command = f"mcpx auth login {needed.server}"
        return OpError(424, "login_needed", str(needed), {"server": server, "command": command})
    if isinstance(exc, wire.McpError) and isinstance(exc.data, dict) and LOGIN in exc.data:
        # A task's failure, which carries the login needed as JSON-RPC error data.
        return OpError(424, "login_needed", exc.message, {"server": server, **exc.data[LOGIN]})
    if isinstance(exc, UpstreamTimeout):
        return OpError(504, "upstream_timeout", str(exc), {"server": server})
    if isinstance(exc, PoolFull):
        return OpError(503, "pool_full", str(exc), {"server": server})
    if isinstance(exc, UpstreamError):
        return OpError(502, "upstream_error", str(exc), {"server": server})
    if isinstance(exc, wire.InvalidParams) and exc.remote:
        # The upstream refused the caller's params (no such prompt, no resource at that
        # URI): the caller's mistake, not the upstream failing.
        return OpError(
            400,
            "upstream_refused_input",
            f"{server} refused the request's params: {exc.message}",
            {"server": server, "jsonrpc": exc.to_error()},
        )
    if isinstance(exc, wire.McpError) and not exc.remote:
        # Raised on mcpx's side (the request could not be encoded): nothing was sent.
        return OpError(
            500,
            "internal_error",
            f"mcpx could not send the request to {server}: {exc.message}",
            {"server": server, "origin": "mcpx"},
        )
    if isinstance(exc, wire.McpError):
        return OpError(
            502,
            "upstream_error",
            f"{server} answered with an error: {exc.message}",
            {"server": server, "jsonrpc": exc.to_error()},
        )
    return None


# The JSON-RPC error data key of a call that failed on a login needed.
LOGIN: Final = "loginNeeded"


def login_needed_error(exc: BaseException) -> wire.McpError | None:
    """A login needed behind ``exc`` as a JSON-RPC error that keeps saying so (a task's
    outcome is a JSON-RPC error), else None."""
    needed = login_needed(exc)
    if needed is None:
        return None
    details = {"server": needed.server, "command": f"mcpx auth login {needed.server}"}
    return wire.InternalError(str(needed), {LOGIN: details})


def upstream_log_level(ctx: OpContext) -> str | None:
    """The log level a request on the caller's behalf asks of a modern upstream: the
    caller's or the daemon's ``log.level``, whichever hears more."""
    return more_verbose(ctx.log_level, str(ctx.settings["log.level"]))


async def request_for_caller(
    ctx: OpContext,
    server: str,
    method: str,
    params: dict[str, Any],
    timeout: float | None = None,
    *,
    relay_input: bool = False,
) -> dict[str, Any]:
    """One upstream request on the caller's behalf: in its scope, narrowed to its
    capabilities, with its trace context; the upstream's progress and log messages go
    back to it while the request runs (all absent for /v1 callers). ``relay_input``
    hands a modern upstream's ``input_required`` back as it is."""
    config = _refusal_or_config(ctx, server, method, params)
    caller = ctx.caller_meta or {}
    meta: dict[str, Any] = {k: caller[k] for k in TRACE_KEYS if k in caller}
    meta |= params.get("_meta") or {}
    level = upstream_log_level(ctx)
    scope = ctx.pool.scope_key(config, ctx.identity)
    started = time.monotonic()
    outcome: dict[str, Any] = {}  # for call.finished: an error is assumed until it answers
    # The call sent ahead for this one was registered then: the registration is this
    # call's now (one call, one registration, from its sending to its end).
    ahead = SENT_AHEAD.get()
    held = ahead is not None and ahead.about(method, params)
    adopted = ahead.adopt(registration_key(server)) if ahead is not None and held else None
    try:
        with (
            ctx.calls.call(server, ctx.notify, caller, ctx.log_level, ctx.asker, scope, ctx.run)
            if adopted is None
            else _Adopted(adopted) as token,
            recording(ctx, server, method, params, meta) as timing,
        ):
            if token is not None:
                meta["progressToken"] = token
            sent = {**params, "_meta": meta} if meta else params
            result = await ctx.pool.request(
                server,
                method,
                sent,
                identity=ctx.identity,
                timeout=timeout,
                host_capabilities=ctx.host_capabilities,
                log_level=level,
                relay_input=relay_input,
                as_task=method == "tools/call" and runs_as_task(ctx, server, params, timeout),
                # The instance's wait (and start) is timed apart from the call.
                handed=timing.queued if timing is not None else None,
            )
            if method == "tools/call" and result.get("resultType", "complete") == "complete":
                problem = call_result_problem(result)
                if problem is not None:
                    raise UpstreamError(
                        f"{server} answered tools/call with a malformed result: {problem}"
                    )
                result = without_nulls(result)
            outcome["isError"] = bool(result.get("isError"))
            if timing is not None:
                timing.answered(result)
            return result
    except BaseException as exc:
        outcome["error"] = str(exc) or type(exc).__name__
        raise
    finally:
        if method == "tools/call":  # just after the answer has gone
            later(call_finished, ctx, server, params, time.monotonic() - started, outcome)


def call_finished(
    ctx: OpContext, server: str, params: dict[str, Any], took: float, outcome: dict[str, Any]
) -> None:
    """A ``call.finished`` event however the call ended (``took`` seconds)."""
    if ctx.events is not None:
        data = {"tool": params.get("name"), "ms": round(took * 1000, 1), **outcome}
        ctx.events.publish("call.finished", data, server=server)


class _Adopted:
    """A call's registration made when it was sent ahead, entered again by its caller:
    let go of on the way out (``SentAhead.held``)."""

    __slots__ = ("_let_go",)

    def __init__(self, let_go: Callable[[], object]) -> None:
        self._let_go = let_go

    def __enter__(self) -> None:
        return None  # sent without a progress token

    def __exit__(self, *exc: object) -> None:
        self._let_go()


def registration_key(server: str) -> str:
    """The key a call's registration on ``server`` hangs by on its ``SentAhead``."""
    return f"calls:{server}"


def _refusal_or_config(
    ctx: OpContext, server: str, method: str, params: dict[str, Any]
) -> ServerConfig:
    """What refuses a request before anything is sent, raised; else ``server``'s config.

    Raises:
        InvalidParams: arguments nested too deep; OpError: over ``pool.maxArguments``,
            or a tool the server's filters leave out; UnknownServer: not configured, or
            outside the caller's profile.
    """
    arguments_refusal(ctx, method, params)
    return server_refusal_or_config(ctx, server, method, params.get("name"))


def arguments_refusal(ctx: OpContext, method: str, params: dict[str, Any]) -> None:
    """What refuses a request for its arguments alone, raised (``_refusal_or_config``)."""
    # Every surface's calls pass here: depth first (a too deep value cannot be measured).
    if "arguments" in params:
        check_depth(params["arguments"])
    check_arguments_size(ctx.settings, method, params)


def server_refusal_or_config(
    ctx: OpContext, server: str, method: str, name: object
) -> ServerConfig:
    """What refuses a request to ``server`` whatever its arguments, raised; else the
    server's config (``_refusal_or_config``; ``name``: the tool a ``tools/call`` names)."""
    config = ctx.pool.servers.get(server)
    if config is None or not ctx.visible(server):
        raise UnknownServer(server, ctx.server_names())
    if method == "tools/call" and config.filtered and not config.offers_tool(str(name)):
        # Filtered out: as if the server did not have it, on every surface.
        said = f"{server} has no tool named {name!r}"
        raise OpError(404, "unknown_tool", said, {"server": server})
    return config


def runs_as_task(
    ctx: OpContext, server: str, params: dict[str, Any], timeout: float | None
) -> bool:
    """Whether this ``tools/call`` goes upstream as a task, by the catalogued tool's
    ``execution.taskSupport``: always when ``required`` (a plain call would be refused;
    an upstream that cannot take it fails the call naming it), when ``optional`` only for
    a budget longer than ``pool.callTimeout`` and an upstream that takes tasks."""
    entry = ctx.catalogue.known(server)
    name = params.get("name")
    tools = ctx.catalogue.tools_by_name(server, entry).first
    tool = tools.get(name) if isinstance(name, str) else None
    execution = tool.get("execution") if isinstance(tool, dict) else None
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    if support == "required":
        return True
    if support != "optional" or timeout is None:
        return False
    if float(timeout) <= float(ctx.settings["pool.callTimeout"]):
        return False
    modern = entry.get("era") == "modern"
    return offers_tasks(modern, entry.get("capabilities") or {})
