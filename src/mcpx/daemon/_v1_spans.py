"""What a /v1 operation that calls an upstream looks like to the telemetry: the MCP
request it stands for, so that its SERVER span (``Telemetry.serving``) is named and
attributed as a ``/mcp`` request's is, and the /v1 door's trace has the same shape.

The caller's W3C ``traceparent``/``tracestate`` HTTP headers stand where a host's
``params._meta`` would: they become the span's parent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcpx.ops import OpContext, Operation, OpError, run_operation

__all__ = ["run_served", "v1_frame"]

# The /v1 operations that call an upstream: (MCP method, the argument naming its
# target, and that target's name in the MCP params).
_UPSTREAM: Final = {
    "call": ("tools/call", "tool", "name"),
    "prompts_get": ("prompts/get", "name", "name"),
    "resources_read": ("resources/read", "uri", "uri"),
    "complete": ("completion/complete", "", ""),
}
_TRACE_HEADERS: Final = ("traceparent", "tracestate")


def v1_frame(
    operation: str, args: Mapping[str, Any], headers: Mapping[str, str]
) -> dict[str, Any] | None:
    """The request frame ``operation`` stands for; None for one that calls no upstream."""
    known = _UPSTREAM.get(operation)
    if known is None:
        return None
    method, arg, param = known
    params: dict[str, Any] = {}
    if arg and isinstance(args.get(arg), str):
        params[param] = args[arg]
    meta = {h: headers[h] for h in _TRACE_HEADERS if h in headers}
    if meta:
        params["_meta"] = meta
    return {"method": method, "params": params}


async def run_served(
    op: Operation, ctx: OpContext, args: dict[str, Any], headers: Mapping[str, str]
) -> Any:
    """``run_operation``, inside a SERVER span when ``op`` calls an upstream and the
    daemon has telemetry (its duration is ``mcp.server.operation.duration``'s too)."""
    telemetry = ctx.telemetry
    frame = v1_frame(op.name, args, headers) if telemetry is not None else None
    if telemetry is None or frame is None:
        return await run_operation(op, ctx, args)
    transport = ctx.caller.transport if ctx.caller is not None else None
    with telemetry.serving(frame, transport, None) as served:
        try:
            out = await run_operation(op, ctx, args)
        except OpError as exc:
            served.error = (exc.code, exc.message)
            raise
        served.answered({"result": out} if isinstance(out, Mapping) else {}, None, None)
        return out
