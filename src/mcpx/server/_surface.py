"""The gateway's MCP surface: its tools, and the upstreams' prompts and resources renamed.

Every function here answers one MCP request with a result in the newest shape; the
dispatcher spells it for the client's revision. Protocol errors are raised as
``McpError`` (the dispatcher turns them into error frames).

Invariants:

- mcpx's own tools, and which are offered, are ``_modes``' (by ``mcp.surface``); a
  ``full`` surface's ``<server>_<tool>`` is forwarded to that server as ``tool``.
- ``mcpx_call``'s result is the upstream's ``CallToolResult`` as it was sent. A failing
  operation is an ``isError`` result naming the problem, which a model can act on; only a
  tool mcpx does not have is -32602, since no retry fixes that.
- Prompts are ``<server>_<prompt>``; resources and templates are ``mcpx://`` URIs
  (``_uris``). Forwarded results are returned verbatim, except that resource contents
  name the ``mcpx://`` URI they can be read back with, and so do the resource links
  and embedded resources in an ``mcpx_call`` result.
- Lists are paged by ``mcp.pageSize`` with an opaque cursor; a cursor mcpx did not hand
  out is -32602.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from mcpx.ops import (
    ArgumentsTooLarge,
    Operation,
    OpError,
    by_name,
    exec_tool_result,
    gateway_template,
    gateway_uri,
    input_problem,
    run_operation,
    split_gateway,
    upstream_resource,
)
from mcpx.spec import MODERN
from mcpx.wire import InternalError, InvalidParams, McpError, ResourceNotFound

from . import _modes as modes
from . import _passthrough as passthrough

if TYPE_CHECKING:
    # Only for annotations: the context brings in the pool and the client.
    from mcpx.ops import OpContext

__all__ = [
    "call_tool",
    "complete",
    "get_prompt",
    "list_prompts",
    "list_resources",
    "list_templates",
    "list_tools",
    "read_resource",
    "readable_uris",
]

JSON = dict[str, Any]

_SEARCH_LIMIT: Final = 10
_SOURCE_META: Final = "dev.mcpx/source"
_REASON_META: Final = "dev.mcpx/reason"
_MATCH_KEYS: Final = ("server", "name", "description", "inputSchema")


async def list_tools(ctx: OpContext, params: Mapping[str, Any], page_size: int) -> JSON:
    """Pass-through tools first (by name), then (``full``) every other server's tools
    prefixed, then mcpx's own that none of them shadows."""
    surface = modes.mode(ctx)
    upstream = sorted((t for _, t in await passthrough.merged(ctx, "tools")), key=_name)
    if surface == "full":
        prefixed = await modes.prefixed_tools(ctx, passthrough.servers(ctx))
        upstream += sorted(prefixed, key=_name)
    shadowed = {t.get("name") for t in upstream}
    own = [t for t in modes.own_tools(surface) if t["name"] not in shadowed]
    return _page("tools", [*upstream, *own], params, page_size)


def _name(item: JSON) -> str:
    return str(item.get("name", ""))


async def call_tool(ctx: OpContext, params: Mapping[str, Any]) -> JSON:
    """Run one of mcpx's tools, or forward the call to the pass-through server owning it.

    Raises:
        InvalidParams: no tool of that name (and no pass-through server to ask), or
            arguments over ``pool.maxArguments``.
        McpError: a pass-through server's own JSON-RPC error, relayed.
    """
    name = params.get("name")
    surface = modes.mode(ctx)
    own = modes.own_ops(surface)
    if passthrough.servers(ctx) and isinstance(name, str):
        server = await passthrough.owner(ctx, "tools", name)
        if server is None and name not in own and not _prefixed(surface, name, ctx):
            server = passthrough.servers(ctx)[0]  # unlisted: the upstream says if it exists
        if server is not None:
            return await passthrough.forward(ctx, server, "tools/call", params)
    op = own.get(name) if isinstance(name, str) else None
    if op is None and isinstance(name, str) and (found := _prefixed(surface, name, ctx)):
        server, tool = found
        forwarded = await passthrough.forward(ctx, server, "tools/call", {**params, "name": tool})
        return readable_uris(server, forwarded)
    if op is None:
        raise InvalidParams(f"no tool named {name!r}; mcpx has: {', '.join(own)}")
    arguments = params.get("arguments")
    arguments = {} if arguments is None else arguments
    problem = _argument_problem(op, arguments)
    if problem is not None:
        return _error_result(f"invalid arguments for {name}: {problem}")
    try:
        out = await run_operation(op, _gateway(ctx), dict(arguments))
    except ArgumentsTooLarge as exc:
        # The host sent more than may go upstream: its request's params are at fault.
        raise InvalidParams(exc.message, exc.details) from exc
    except OpError as exc:
        return _error_result(f"{exc.code}: {exc.message}")
    if op.name == "call":
        # The upstream's CallToolResult as sent, but for the resource URIs in it.
        return readable_uris(str(arguments["server"]), out)
    if op.name == "exec":
        return exec_tool_result(out)
    return _json_result(_search_matches(out) if op.name == "tools.list" else out)


def readable_uris(server: str, result: JSON) -> JSON:
    """``result`` with every content block's resource URI one /mcp can read back."""
    content = result.get("content")
    if not isinstance(content, list):
        return result
    return {**result, "content": [_readable_block(server, block) for block in content]}


def _readable_block(server: str, block: object) -> object:
    if not isinstance(block, dict):
        return block
    if block.get("type") == "resource_link" and isinstance(block.get("uri"), str):
        return {**block, "uri": gateway_uri(server, block["uri"])}
    if block.get("type") == "resource" and isinstance(block.get("resource"), dict):
        return {**block, "resource": _renamed_contents(server, block["resource"])}
    return block


def _argument_problem(op: Operation, arguments: object) -> str | None:
    if not isinstance(arguments, Mapping):
        return "arguments must be an object"
    problem = input_problem(op, arguments, headers=False)
    if problem is None:
        return None
    where, why = problem
    return f"{where or '(arguments)'}: {why}"


def _search_matches(out: JSON) -> JSON:
    tools = out.get("tools") or []
    shown = [{k: t[k] for k in _MATCH_KEYS if k in t} for t in tools[:_SEARCH_LIMIT]]
    total = out.get("total", len(tools))
    return {"tools": shown, "total": total, "errors": out.get("errors") or {}}


def _json_result(value: JSON) -> JSON:
    # The same JSON as text too, as revisions with structuredContent ask; downgrade
    # then drops structuredContent for revisions that lack it without adding text.
    text = json.dumps(value, ensure_ascii=False)
    return {"content": [{"type": "text", "text": text}], "structuredContent": value}


def _error_result(message: str) -> JSON:
    return {"content": [{"type": "text", "text": message}], "isError": True}


# -- prompts -----------------------------------------------------------------


async def list_prompts(ctx: OpContext, params: Mapping[str, Any], page_size: int) -> JSON:
    """Pass-through prompts under their own names, then every other server's prefixed."""
    own = [p for _, p in await passthrough.merged(ctx, "prompts")]
    out = await _run(ctx, "prompts.list", {})
    through = passthrough.servers(ctx)
    items = [
        _untagged(p, name=f"{p['server']}_{p['name']}")
        for p in out["prompts"]
        if p["server"] not in through
    ]
    return _page("prompts", [*own, *items], params, page_size)


async def get_prompt(ctx: OpContext, params: Mapping[str, Any]) -> JSON:
    """Forward ``prompts/get`` to the server owning the name: the result as sent, but
    for the resource URIs in a prefixed prompt's messages, which become ones /mcp can
    read back (a pass-through server's resources keep their own URIs)."""
    name = params.get("name")
    through = passthrough.servers(ctx)
    if through and isinstance(name, str):
        server = await passthrough.owner(ctx, "prompts", name)
        if server is None and modes.split_name(name, ctx) is None:
            server = through[0]  # unlisted: the upstream says if it exists
        if server is not None:
            return await passthrough.forward(ctx, server, "prompts/get", params)
    found = modes.split_name(name, ctx) if isinstance(name, str) else None
    if found is None:
        raise InvalidParams(f"no prompt named {name!r}")
    args: JSON = {"server": found[0], "name": found[1]}
    if params.get("arguments"):
        args["arguments"] = params["arguments"]
    return _readable_messages(found[0], await _run(ctx, "prompts.get", args))


def _readable_messages(server: str, result: JSON) -> JSON:
    messages = result.get("messages")
    if not isinstance(messages, list):
        return result
    readable = [
        {**m, "content": _readable_block(server, m["content"])}
        if isinstance(m, dict) and "content" in m
        else m
        for m in messages
    ]
    return {**result, "messages": readable}


def _prefixed(surface: str, name: str, ctx: OpContext) -> tuple[str, str] | None:
    """(server, tool) of a ``full`` surface's ``<server>_<tool>`` name."""
    return modes.split_name(name, ctx) if surface == "full" else None


# -- resources ---------------------------------------------------------------


async def list_resources(ctx: OpContext, params: Mapping[str, Any], page_size: int) -> JSON:
    """Pass-through resources with their own URIs, then every other server's as mcpx://."""
    items = await _listing(ctx, "resources", "resources.list", "uri", gateway_uri)
    return _page("resources", items, params, page_size)


async def list_templates(ctx: OpContext, params: Mapping[str, Any], page_size: int) -> JSON:
    kind = "resourceTemplates"
    items = await _listing(ctx, kind, "resources.templates", "uriTemplate", gateway_template)
    return _page(kind, items, params, page_size)


async def _listing(
    ctx: OpContext, kind: str, op: str, key: str, rename: Callable[[str, str], str]
) -> list[JSON]:
    """The pass-through servers' items as they are, then every other server's with
    ``key`` renamed by ``rename(server, value)``."""
    own = [item for _, item in await passthrough.merged(ctx, kind)]
    out = await _run(ctx, op, {})
    through = passthrough.servers(ctx)
    renamed = [
        _untagged(item, **{key: rename(item["server"], item[key])})
        for item in out[kind]
        if item["server"] not in through
    ]
    return [*own, *renamed]


async def read_resource(ctx: OpContext, params: Mapping[str, Any], rev: str) -> JSON:
    """Forward ``resources/read``: an ``mcpx://`` URI to its server, a bare one to the
    pass-through server that owns it (result verbatim)."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParams("resources/read needs a uri (a string)")
    if split_gateway(uri) is None:
        server = await passthrough.resource_owner(ctx, uri)
        if server is None:
            raise _not_found(uri, rev)
        return await passthrough.forward(ctx, server, "resources/read", params)
    server, original = await _upstream_uri(ctx, uri, rev)
    out = await _run(ctx, "resources.read", {"server": server, "uri": original})
    contents = out.get("contents")
    if not isinstance(contents, list):
        return out
    named = [_renamed_contents(server, c) for c in contents]
    return {**out, "contents": named}


def _renamed_contents(server: str, item: object) -> object:
    if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
        return item
    return {**item, "uri": gateway_uri(server, item["uri"])}


async def _upstream_uri(ctx: OpContext, uri: str, rev: str) -> tuple[str, str]:
    found = await upstream_resource(ctx, uri)
    if found is None:
        raise _not_found(uri, rev)  # worded for the host's revision
    return found


def _not_found(uri: str, rev: str) -> McpError:
    message = f"no resource at {uri[:200]!r}; mcpx serves mcpx://<server>/<uri>"
    if rev in MODERN:  # -32002 is retired from 2026-07-28 on (SEP-2164)
        return InvalidParams(message, {"uri": uri})
    return ResourceNotFound(message, {"uri": uri})


# -- completion ----------------------------------------------------------------


async def complete(ctx: OpContext, params: Mapping[str, Any], rev: str) -> JSON:
    """Forward ``completion/complete`` for a prompt or resource ref, mapped back."""
    ref, argument = params.get("ref"), params.get("argument")
    if not isinstance(ref, Mapping) or not isinstance(argument, Mapping):
        raise InvalidParams("completion/complete needs a ref and an argument (objects)")
    server = await _passthrough_ref(ctx, ref)
    if server is not None:
        return _at_most_100(await passthrough.forward(ctx, server, "completion/complete", params))
    if ref.get("type") == "ref/prompt":
        name = ref.get("name")
        found = modes.split_name(name, ctx) if isinstance(name, str) else None
        if found is None:
            raise InvalidParams(f"no prompt named {name!r}")
        server, upstream_ref = found[0], {**ref, "name": found[1]}
    elif ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str):
        server, original = await _upstream_uri(ctx, ref["uri"], rev)
        upstream_ref = {**ref, "uri": original}
    else:
        raise InvalidParams("ref.type must be 'ref/prompt' or 'ref/resource'")
    args = {"server": server, "ref": upstream_ref, "argument": dict(argument)}
    out = dict(await _run(ctx, "complete", args))
    source, reason = out.pop("source", None), out.pop("reason", None)
    if source == "cache":
        # The result has no field for where values came from: _meta carries it.
        out["_meta"] = {**(out.get("_meta") or {}), _SOURCE_META: source, _REASON_META: reason}
    return _at_most_100(out)


def _at_most_100(result: JSON) -> JSON:
    """A completion carries at most 100 values (S-COMP-2); an upstream's longer list is
    cut there, and says there was more."""
    completion = result.get("completion")
    values = completion.get("values") if isinstance(completion, Mapping) else None
    if not isinstance(completion, Mapping) or not isinstance(values, list) or len(values) <= 100:
        return result
    total = completion.get("total")
    total = max(total, len(values)) if isinstance(total, int) else len(values)
    cut = {**completion, "values": values[:100], "hasMore": True, "total": total}
    return {**result, "completion": cut}


async def _passthrough_ref(ctx: OpContext, ref: Mapping[str, Any]) -> str | None:
    """The pass-through server a completion ref belongs to, if any."""
    if not passthrough.servers(ctx):
        return None
    if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
        return await passthrough.owner(ctx, "prompts", ref["name"])
    uri = ref.get("uri")
    if ref.get("type") == "ref/resource" and isinstance(uri, str) and not split_gateway(uri):
        return await passthrough.resource_owner(ctx, uri)
    return None


# -- shared --------------------------------------------------------------------


async def _run(ctx: OpContext, op: str, args: JSON) -> JSON:
    """Run an operation for a forwarded request; its failure is a protocol error."""
    try:
        out: JSON = await run_operation(by_name(op), _gateway(ctx), args)
    except OpError as exc:
        raise _protocol_error(exc) from exc
    return out


def _gateway(ctx: OpContext) -> OpContext:
    """``ctx`` for a call behind the gateway's own surface: mcpx declares upstream what
    it can answer itself (the broker at least), not only what the host declared. Only a
    pass-through server is called on the host's declaration alone."""
    if ctx.host_capabilities is None:
        return ctx
    return dataclasses.replace(ctx, host_capabilities=None)


def _protocol_error(exc: OpError) -> McpError:
    upstream = exc.details.get("jsonrpc")
    if isinstance(upstream, dict):
        # The upstream's own answer (an unknown prompt, a bad argument): relayed as sent.
        return McpError.from_error(upstream)
    if exc.code in ("unknown_server", "invalid_input"):
        return InvalidParams(exc.message)
    return InternalError(f"{exc.code}: {exc.message}")


def _untagged(item: JSON, **renamed: str) -> JSON:
    return {**{k: v for k, v in item.items() if k != "server"}, **renamed}


def _page(key: str, items: list[JSON], params: Mapping[str, Any], page_size: int) -> JSON:
    start = _offset(params.get("cursor"), len(items))
    end = start + page_size
    out: JSON = {key: items[start:end]}
    if end < len(items):
        out["nextCursor"] = base64.urlsafe_b64encode(str(end).encode()).decode()
    return out


def _offset(cursor: object, total: int) -> int:
    if cursor is None:
        return 0
    try:
        offset = int(base64.urlsafe_b64decode(str(cursor).encode()).decode(), 10)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        offset = -1
    # Only a page after the first is ever handed out, and only inside the list.
    if not isinstance(cursor, str) or not 0 < offset < total:
        raise InvalidParams(f"invalid cursor {cursor!r}: not one mcpx handed out")
    return offset
