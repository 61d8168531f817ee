"""The handlers that reach an upstream for the caller: call, prompts/get, resources/read,
completion.

Input the daemon can judge is judged before anything is sent: a tool's arguments
against its schema, a prompt's required arguments, the arguments' depth and size.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from ._call_ahead import CallAhead, send_ahead
from ._completion import declares_completions, from_catalogue
from ._detached import returning_call
from ._errors import OpError
from ._handle_listings import catalogued_tool
from ._limits import check_arguments_size
from ._operations import QUESTIONS_HEADER, RUN_HEADER
from ._tool_input import check_arguments, check_depth
from ._upstream_call import request_for_caller, upstream

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = ["call", "call_ahead", "complete", "prompts_get", "resources_read"]


async def call(ctx: OpContext, args: dict[str, Any]) -> Any:
    server, name = args["server"], args["tool"]
    ctx = _in_run(ctx, args.get(RUN_HEADER))
    arguments = args.get("arguments") or {}
    tool = await catalogued_tool(ctx, server, name)
    if tool is not None:
        check_arguments(server, tool, arguments)
    params = {"name": name, "arguments": arguments}

    def run(c: OpContext) -> Awaitable[dict[str, Any]]:
        return request_for_caller(c, server, "tools/call", params, timeout=args.get("timeout"))

    if args.get(QUESTIONS_HEADER) == "return" and ctx.tasks is not None:
        # Refused here too: inside the task it would become a failed task, not a 4xx.
        check_depth(arguments)
        check_arguments_size(ctx.settings, "tools/call", params)
        return await returning_call(
            ctx, server, f"tools/call {name}", run, lambda call: upstream(server, call)
        )
    return await upstream(server, run(ctx))


def call_ahead(ctx: OpContext, args: dict[str, Any]) -> CallAhead | None:
    """The request ``call`` is about to send, written now (``send_ahead``), when
    ``args`` ask for nothing but the call (no timeout, no run, no questions header) and
    the arguments pass their catalogued tool's schema; None: nothing was sent."""
    if not args.keys() <= _PLAIN_CALL:
        return None
    server, name = args["server"], args["tool"]
    entry = ctx.catalogue.settled(server) if ctx.visible(server) else None
    if entry is None or entry.get("error"):
        return None  # refused, or listed first: the call says
    tool = ctx.catalogue.tools_by_name(server, entry).last.get(name)
    arguments = args.get("arguments") or {}
    try:
        if tool is None:
            return None
        check_arguments(server, tool, arguments)
    except OpError:
        return None
    return send_ahead(ctx, server, {"name": name, "arguments": arguments})


_PLAIN_CALL: Final = frozenset({"server", "tool", "arguments"})


def _in_run(ctx: OpContext, run: object) -> OpContext:
    """``ctx`` for a call a script makes as part of ``run``: asked as its run's starter
    is. A run that is over (or never was) is nobody's: the call is the caller's own."""
    if not isinstance(run, str):
        return ctx
    try:
        asker = ctx.calls.run_asker(run)
    except KeyError:
        return ctx
    return replace(ctx, run=run, asker=asker)


async def prompts_get(ctx: OpContext, args: dict[str, Any]) -> Any:
    params: dict[str, Any] = {"name": args["name"]}
    if args.get("arguments"):
        params["arguments"] = args["arguments"]
    await _check_prompt_arguments(ctx, args["server"], args["name"], args.get("arguments") or {})
    get = request_for_caller(ctx, args["server"], "prompts/get", params)
    return await upstream(args["server"], get)


async def _check_prompt_arguments(
    ctx: OpContext, server: str, name: str, given: dict[str, Any]
) -> None:
    """A prompt's required arguments are there before it is asked for (S-PROMPT-6): the
    upstreams' own answers to a missing one differ (an error code 0, -32603 …)."""
    entry = await upstream(server, ctx.catalogue.entry(server))
    prompt = next((p for p in entry.get("prompts") or [] if p.get("name") == name), None)
    if prompt is None:
        return  # unlisted, or the listing failed: the upstream says
    missing = [
        a["name"]
        for a in prompt.get("arguments") or []
        if isinstance(a, dict) and a.get("required") and a.get("name") not in given
    ]
    if missing:
        raise OpError(
            400,
            "invalid_input",
            f"prompt {server}/{name} needs the argument(s) {', '.join(map(str, missing))}",
            {"field": f"arguments.{missing[0]}", "missing": missing},
        )


async def resources_read(ctx: OpContext, args: dict[str, Any]) -> Any:
    params = {"uri": args["uri"]}
    return await upstream(
        args["server"],
        request_for_caller(ctx, args["server"], "resources/read", params),
    )


async def complete(ctx: OpContext, args: dict[str, Any]) -> Any:
    server = args["server"]
    entry = await upstream(server, ctx.catalogue.entry(server))
    if not declares_completions(entry):
        return from_catalogue(server, entry, args["ref"], args["argument"])
    params = {"ref": args["ref"], "argument": args["argument"]}
    out = await upstream(
        server,
        request_for_caller(ctx, server, "completion/complete", params),
    )
    return {**out, "source": "server"}
