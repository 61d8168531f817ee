"""What ``tools/list`` offers an MCP host, by ``mcp.surface``.

- ``gateway``: mcpx's tools to find and call the upstreams' (``mcpx_call``,
  ``mcpx_exec``, ``mcpx_servers``, ``mcpx_search_tools``).
- ``lean``: only ``mcpx_search_tools``, ``mcpx_describe`` and ``mcpx_call``, with
  instructions saying how to use them: a host with hundreds of upstream tools is shown
  three, and finds the one it needs by searching.
- ``full``: every upstream tool in the host's profile listed directly as
  ``<server>_<tool>`` (callable by that name), then mcpx's own tools.

Pass-through servers are offered as themselves in every mode: they were asked for by
name. mcpx's own tools are generated from the operations table (name, description and
``inputSchema`` from the operation), so the CLI, /v1 and MCP cannot drift apart; a tool
the mode does not list cannot be called either.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, Final

from mcpx.ops import Operation, by_name

if TYPE_CHECKING:
    from mcpx.ops import OpContext

__all__ = ["instructions", "mode", "own_ops", "own_tools", "prefixed_tools", "split_name"]

JSON = dict[str, Any]

# Tool name -> operation. Named by what a model does with it, not by the route.
_OPS: Final = {
    "mcpx_call": "call",
    "mcpx_exec": "exec",
    "mcpx_servers": "servers.list",
    "mcpx_search_tools": "tools.list",
    "mcpx_describe": "tools.describe",
}
# Each mode's own tools, in the order listed.
_OWN: Final = {
    "gateway": ("mcpx_call", "mcpx_exec", "mcpx_servers", "mcpx_search_tools"),
    "lean": ("mcpx_search_tools", "mcpx_describe", "mcpx_call"),
    "full": ("mcpx_call", "mcpx_exec", "mcpx_servers", "mcpx_search_tools", "mcpx_describe"),
}
# Own tools a 2025-11-25 host may call as a task (the downgrade drops ``execution`` for
# every other revision: 2026-07-28's Tool has none).
_EXECUTION: Final = {
    name: {"execution": {"taskSupport": "optional"}} for name in ("mcpx_call", "mcpx_exec")
}
# What mcpx_exec's own arguments are (the operation's others are the CLI's).
_EXEC_ARGUMENTS: Final = ("code", "timeoutSec")
_NAMING: Final = (
    "Prompts are named <server>_<prompt>; resources are mcpx://<server>/<percent-encoded uri>."
)
_INSTRUCTIONS: Final = {
    "gateway": "mcpx is a gateway to the MCP servers configured on this machine. Find a tool "
    "with mcpx_search_tools, then run it with mcpx_call (server, tool, arguments); "
    "mcpx_servers lists the servers. To call many tools and keep only what matters, run "
    "a Python script with mcpx_exec: `from mcpx_tools import <server>`, then "
    "`<server>.<tool>(arg=...)` returns the tool's result as Python data. " + _NAMING,
    "lean": "mcpx is a gateway to many MCP servers; their tools are not listed here. To use "
    "one: 1) call mcpx_search_tools with a few words saying what you want to do (results "
    "are ranked, best first, each with its server, name and inputSchema); 2) if you need "
    "more than the search showed, call mcpx_describe (server, tool); 3) call mcpx_call with "
    "server, tool and arguments matching the inputSchema. Search again with other words "
    "rather than guessing a tool name. " + _NAMING,
    "full": "mcpx is a gateway to the MCP servers configured on this machine: each server's "
    "tools are listed as <server>_<tool>. mcpx_search_tools ranks them by what you want to "
    "do; mcpx_call (server, tool, arguments) calls one by its server and own name. " + _NAMING,
}


def mode(ctx: OpContext) -> str:
    return str(ctx.settings["mcp.surface"])


def instructions(surface: str) -> str:
    return _INSTRUCTIONS[surface]


@cache
def own_ops(surface: str) -> dict[str, Operation]:
    """The mode's own tools by name, and the operation each runs."""
    return {name: by_name(_OPS[name]) for name in _OWN[surface]}


@cache
def own_tools(surface: str) -> tuple[JSON, ...]:
    """The mode's own ``Tool`` objects, newest shape, in a fixed order."""
    return tuple(
        {
            "name": name,
            "description": op.doc,
            "inputSchema": _input_schema(name, op),
            **_EXECUTION.get(name, {}),
        }
        for name, op in own_ops(surface).items()
    )


def _input_schema(name: str, op: Operation) -> JSON:
    schema = op.input_schema(headers=False)
    if name != "mcpx_exec":
        return schema
    kept = {k: v for k, v in schema["properties"].items() if k in _EXEC_ARGUMENTS}
    return {**schema, "properties": kept}


def split_name(name: str, ctx: OpContext) -> tuple[str, str] | None:
    """(server, item) of a ``<server>_<item>`` name, the server one the request reaches."""
    # The first "_" that ends a server name: items' own names may hold "_" too.
    for i, ch in enumerate(name):
        if ch == "_" and ctx.visible(name[:i]):
            return name[:i], name[i + 1 :]
    return None


async def prefixed_tools(ctx: OpContext, skip: tuple[str, ...]) -> list[JSON]:
    """Every tool of every server in reach but ``skip``, named ``<server>_<tool>``; a
    server whose listing failed is left out (``mcpx_servers`` says why)."""
    names = [s for s in ctx.server_names() if s not in skip]
    out: list[JSON] = []
    for server, entry in (await ctx.catalogue.entries(names)).items():
        for tool in entry.get("tools") or []:
            if isinstance(tool.get("name"), str):
                out.append({**tool, "name": f"{server}_{tool['name']}"})
    return out
