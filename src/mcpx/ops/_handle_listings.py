"""The handlers that list and describe: health, protocol, servers, tools, prompts, resources.

Listings come from the catalogue (no upstream is started to list it); a server whose
listing failed is named under ``errors`` rather than failing the whole answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpx import spec
from mcpx.config import ServerConfig, filter_notes

from ._errors import OpError, unknown_server
from ._handle_auth import auth_state
from ._search import rank_tools
from ._upstream_call import upstream

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = [
    "catalogued_tool",
    "health",
    "prompts_list",
    "protocol",
    "resources_list",
    "resources_templates",
    "servers_list",
    "tools_describe",
    "tools_list",
]


async def health(ctx: OpContext, args: dict[str, Any]) -> Any:
    # Nothing more: /health is open to any Host and without a token (a monitor's probe),
    # so a rebinding page can read it. The pid and version are in <state>/daemon.json.
    return {"ok": True}


async def protocol(ctx: OpContext, args: dict[str, Any]) -> Any:
    return spec.protocol_json(ctx.settings.policy())


async def servers_list(ctx: OpContext, args: dict[str, Any]) -> Any:
    out = []
    for name in ctx.server_names():
        server = ctx.pool.servers[name]
        known = ctx.catalogue.known(name)
        out.append(
            {
                "name": name,
                "transport": server.transport,
                "command": [server.command, *server.args] if server.command else None,
                "url": server.shown_url,
                "description": server.description,
                "profiles": list(server.profiles),
                "inDefaultProfile": server.in_default,
                "filters": _filters(ctx, name, server) if server.filtered else None,
                "scope": server.scope,
                # An oauth server's sign-in: logged in, or login needed and why.
                "auth": auth_state(ctx, server),
                "protocol": server.protocol or ctx.settings["upstream.protocol"],
                "instances": [i.status() for i in ctx.pool.instances(name)],
                # Failing again and again: the last error, and the pause before a start.
                "restarts": ctx.pool.restarts.status(name),
                # Resource URIs subscribed upstream for hosts (counted across them).
                "subscriptions": sorted(ctx.pool.watches.wanted(name)),
                "catalogue": {
                    "tools": len(known.get("tools") or []),
                    "era": known.get("era"),
                    "revision": known.get("revision"),
                    "error": known.get("error"),
                }
                if known
                else None,
            }
        )
    return {"servers": out}


def _filters(ctx: OpContext, name: str, server: ServerConfig) -> dict[str, Any]:
    """A filtered server's filters, what they hid of its last listing, and why."""
    listed = ctx.catalogue.listed(name).get("tools")
    names = [str(t.get("name")) for t in listed] if isinstance(listed, list) else None
    hidden = None if names is None else [n for n in names if not server.offers_tool(n)]
    return {
        "tools": list(server.tools),
        "excludeTools": list(server.exclude_tools),
        "hidden": hidden,
        "notes": filter_notes(server, names),
    }


async def _catalogued(ctx: OpContext, args: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The catalogue entries of the server asked for, else of every server in reach."""
    server = args.get("server")
    if server is not None and not ctx.visible(server):
        raise unknown_server(server, ctx.server_names())
    names = [server] if server else ctx.server_names()
    return await upstream(
        server or "*", ctx.catalogue.entries(names, refresh=bool(args.get("refresh")))
    )


async def tools_list(ctx: OpContext, args: dict[str, Any]) -> Any:
    entries = await _catalogued(ctx, args)
    items = [(s, t) for s, e in entries.items() for t in e.get("tools") or []]
    if args.get("search"):
        # Each server's description is context for its tools' words (ServerConfig.description).
        about = {s: cfg.description for s, cfg in ctx.pool.servers.items() if s in entries}
        items = rank_tools(items, args["search"], about)
    errors = {s: e["error"] for s, e in entries.items() if e.get("error")}
    total = len(items)
    if args.get("limit") is not None:
        items = items[: int(args["limit"])]
    return {"tools": [{"server": s, **t} for s, t in items], "total": total, "errors": errors}


async def catalogued_tool(ctx: OpContext, server: str, name: str) -> dict[str, Any] | None:
    if not ctx.visible(server):
        raise unknown_server(server, ctx.server_names())
    entry = await upstream(server, ctx.catalogue.entry(server))
    if entry.get("error"):
        return None  # unknown: let the upstream say (it may have come back)
    tools = ctx.catalogue.tools_by_name(server, entry).last
    if name not in tools:
        raise OpError(
            404,
            "unknown_tool",
            f"{server} has no tool named {name!r}; it has: {', '.join(sorted(tools)) or 'none'}",
            {"server": server, "known": sorted(tools)},
        )
    return tools[name]


async def tools_describe(ctx: OpContext, args: dict[str, Any]) -> Any:
    tool = await catalogued_tool(ctx, args["server"], args["tool"])
    if tool is None:
        raise OpError(502, "upstream_error", f"{args['server']} could not be listed", {})
    return {"server": args["server"], **tool}


async def _listing(ctx: OpContext, args: dict[str, Any], key: str, out: str) -> Any:
    """One kind of catalogued item across servers, each tagged with its server;
    a server whose listing failed is named under ``errors`` instead."""
    entries = await _catalogued(ctx, args)
    found = [{"server": s, **item} for s, e in entries.items() for item in e.get(key) or []]
    return {out: found, "errors": {s: e["error"] for s, e in entries.items() if e.get("error")}}


async def prompts_list(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _listing(ctx, args, "prompts", "prompts")


async def resources_list(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _listing(ctx, args, "resources", "resources")


async def resources_templates(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _listing(ctx, args, "templates", "resourceTemplates")
