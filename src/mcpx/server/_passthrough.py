"""Pass-through: the servers named in ``mcp.passthrough`` offered as themselves.

Invariants:

- Their tools and prompts keep their own names and their resources their own URIs;
  several are merged into one surface, in the order configured. A tool or prompt name
  two of them offer is refused (the listing fails naming both), never handed to either:
  the loser would be unreachable under the name the client was shown.
- What they offer comes from the catalogue (listed once, refreshed on list_changed);
  a request is forwarded to the server that owns the name or URI, and its result or its
  JSON-RPC error comes back as the upstream sent it.
- A name no pass-through server lists (and no gateway tool has) goes to the first of
  them: the upstream says whether it exists. A bare URI goes to the first that lists
  it or has a template it falls under, else to the first.
- A server outside the request's profile is not passed through; the servers' tool
  filters hold (the catalogue offers only what they let through, and a filtered tool
  called by name is refused as unknown).
- Forwarded params lose only what is mcpx's to set upstream: the protocol's own
  ``_meta`` keys, mcpx's, and the host's progress token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from mcpx.ops import Caller, OpError, request_for_caller, upstream_error
from mcpx.spec import TASKS_EXTENSION
from mcpx.wire import InternalError, InvalidParams, McpError

if TYPE_CHECKING:
    from mcpx.ops import OpContext

__all__ = [
    "forward",
    "merged",
    "owner",
    "owners_now",
    "resource_owner",
    "servers",
    "tool_schema",
]

JSON = dict[str, Any]

# Catalogue key, and the item key that names an item, per listed kind.
KINDS: Final = {
    "tools": ("tools", "name"),
    "prompts": ("prompts", "name"),
    "resources": ("resources", "uri"),
    "resourceTemplates": ("templates", "uriTemplate"),
}
_UNIQUE: Final = frozenset({"tools", "prompts"})
# The only requests that may come back input_required (SEP-2322).
_ASKING: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
_MCPX_META: Final = ("io.modelcontextprotocol/", "dev.mcpx/")
_EXPRESSION: Final = re.compile(r"\{[^{}]*\}")


def servers(ctx: OpContext) -> tuple[str, ...]:
    """The pass-through servers, in the order configured."""
    named = ctx.passthrough if ctx.passthrough is not None else ctx.settings["mcp.passthrough"]
    return tuple(str(s) for s in named if ctx.visible(str(s)))


async def merged(ctx: OpContext, kind: str) -> list[tuple[str, JSON]]:
    """Every pass-through server's items of ``kind``, each with its server.

    Raises:
        InternalError: a tool or prompt name two servers offer; or a server's listing
            failed (the message says which and why).
    """
    return (await _listing(ctx, kind)).items


async def owner(ctx: OpContext, kind: str, name: str) -> str | None:
    """The pass-through server listing a tool or prompt ``name`` (None: none does)."""
    return (await _listing(ctx, kind)).owners.get(name)


class _Listing:
    """One kind's merged items and who owns each name, built from these entries."""

    def __init__(self, kind: str, entries: tuple[JSON, ...], items: list[tuple[str, JSON]]):
        self.entries = entries
        self.items = items
        self.owners: dict[str, str] = {}
        name_key = KINDS[kind][1]
        for server, item in items:
            name = item.get(name_key)
            if isinstance(name, str):
                self.owners.setdefault(name, server)  # the first, as the order configured


# Built again only when an entry was replaced (a catalogue entry is never edited once
# stored): every forwarded call looks its tool's owner up here, so it must not walk every
# listed tool of every server each time. Keyed by kind and the servers asked.
_LISTINGS: dict[tuple[str, tuple[str, ...]], _Listing] = {}
_LISTINGS_KEPT: Final = 64


async def _listing(ctx: OpContext, kind: str) -> _Listing:
    names = servers(ctx)
    return _kept(kind, names, tuple([await ctx.catalogue.entry(server) for server in names]))


def owners_now(
    ctx: OpContext, kind: str, names: tuple[str, ...] | None = None
) -> Mapping[str, str] | None:
    """The pass-through server owning each name of ``kind`` (as ``owner`` tells), when
    that can be told without waiting: every server listed, no listing under way, none
    failed, no name offered twice. None: it cannot be told now (the request says why).
    ``names``: ``servers(ctx)``, when the caller has them."""
    if names is None:
        names = servers(ctx)
    entries = tuple(ctx.catalogue.settled(server) for server in names)
    if any(entry is None for entry in entries):
        return None
    try:
        return _kept(kind, names, cast(tuple[JSON, ...], entries)).owners
    except McpError:
        return None


def _kept(kind: str, names: tuple[str, ...], entries: tuple[JSON, ...]) -> _Listing:
    key = (kind, names)
    known = _LISTINGS.get(key)
    if known is not None and all(a is b for a, b in zip(known.entries, entries, strict=True)):
        return known
    listing = _Listing(kind, entries, _merge(kind, names, entries))
    if len(_LISTINGS) >= _LISTINGS_KEPT:
        _LISTINGS.pop(next(iter(_LISTINGS)))
    _LISTINGS[key] = listing
    return listing


def _merge(kind: str, names: tuple[str, ...], entries: tuple[JSON, ...]) -> list[tuple[str, JSON]]:
    key, name_key = KINDS[kind]
    found: list[tuple[str, JSON]] = []
    seen: dict[str, str] = {}
    for server, entry in zip(names, entries, strict=True):
        if entry.get("error"):
            raise InternalError(f"{server} could not be listed: {entry['error']}", _ours(server))
        for item in entry.get(key) or []:
            name = item.get(name_key)
            if kind in _UNIQUE and name in seen:
                raise InternalError(
                    f"{kind[:-1]} name {name!r} is offered by both {seen[name]} and {server}; "
                    "pass through only one of them",
                    {"name": name, "servers": [seen[name], server]},
                )
            seen[str(name)] = server
            found.append((server, item))
    return found


async def tool_schema(ctx: OpContext, name: object) -> Mapping[str, Any] | None:
    """The ``inputSchema`` of the pass-through tool ``name`` (None: not one of theirs).

    Its ``x-mcp-header`` marks say which ``Mcp-Param-*`` headers a call must carry.
    A listing that fails is left for the call itself to report.
    """
    if not isinstance(name, str) or not servers(ctx):
        return None
    try:
        found = await merged(ctx, "tools")
    except McpError:
        return None
    for _, item in found:
        schema = item.get("inputSchema")
        if item.get("name") == name and isinstance(schema, Mapping):
            return schema
    return None


async def resource_owner(ctx: OpContext, uri: str) -> str | None:
    """The pass-through server a bare ``uri`` goes to (None: there is none)."""
    names = servers(ctx)
    if not names:
        return None
    for server, item in await merged(ctx, "resources"):
        if _same_uri(item.get("uri"), uri):
            return server
    for server, item in await merged(ctx, "resourceTemplates"):
        template = item.get("uriTemplate")
        if isinstance(template, str) and _fits(template, uri):
            return server
    return names[0]


async def forward(ctx: OpContext, server: str, method: str, params: Mapping[str, Any]) -> JSON:
    """``method`` sent to ``server`` as the host asked it; the upstream's own answer.

    Raises:
        McpError: the upstream's JSON-RPC error, as it sent it; or InternalError when
            the call failed on mcpx's side (the server could not start, a timeout, a
            request that could not be encoded); InvalidParams when the arguments are
            over ``pool.maxArguments`` or nested too deep.
    """
    try:
        # A 2026-07-28 host answers a modern upstream's questions itself, under the
        # upstream's own keys and requestState: its retry is forwarded as it comes. Not a
        # host that takes tasks: its call may be a task by the time the upstream asks, and
        # a task's questions are mcpx's to put (parked until tasks/update).
        relay_input = (
            ctx.host_capabilities is not None
            and method in _ASKING
            and not _takes_tasks(ctx.host_capabilities)
        )
        sent = _upstream_params(params)
        caller = ctx.caller
        if caller is not None:  # the call log tells a forwarded request apart
            # (Made directly: dataclasses.replace costs several times as much.)
            through = Caller("passthrough", caller.transport, caller.who, caller.revision)
            ctx = ctx.evolve(caller=through)
        return await request_for_caller(ctx, server, method, sent, relay_input=relay_input)
    except OpError as exc:  # refused before it was sent (too large or deep): the host's
        raise InvalidParams(exc.message, exc.details) from exc
    except Exception as exc:
        if isinstance(exc, McpError) and exc.remote:
            raise  # the upstream's own answer
        # mcpx's own failure (the server could not start, a timeout, a request that could
        # not be encoded): worded once, in ops.
        ours = upstream_error(server, exc)
        if ours is None:
            raise
        if ours.code == "login_needed" and method == "tools/call":
            # A model can act on a tool error: it says what to run.
            return {"content": [{"type": "text", "text": ours.message}], "isError": True}
        raise InternalError(f"{server}: {ours.message}", _ours(server)) from exc


def _takes_tasks(capabilities: Mapping[str, Any]) -> bool:
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def _ours(server: str) -> JSON:
    # An error of mcpx's own, marked so that it is not mistaken for an upstream's -32603
    # (C-ERR-6): the upstream's own errors are relayed as they came.
    return {"origin": "mcpx", "server": server}


def _upstream_params(params: Mapping[str, Any]) -> JSON:
    # A host's task belongs to mcpx (its task store runs the call): the upstream is sent
    # the plain request, or a task of mcpx's own when its tool requires one.
    out = {k: v for k, v in params.items() if k not in ("_meta", "task")}
    meta = params.get("_meta")
    if isinstance(meta, Mapping):
        kept = {
            k: v for k, v in meta.items() if k != "progressToken" and not k.startswith(_MCPX_META)
        }
        if kept:
            out["_meta"] = kept
    return out


def _same_uri(listed: object, uri: str) -> bool:
    # A leading "/" is compared away consistently (absolute-path URIs).
    return isinstance(listed, str) and listed.lstrip("/") == uri.lstrip("/")


def _fits(template: str, uri: str) -> bool:
    """Whether ``uri`` is an expansion of ``template`` (or the template itself)."""
    if template == uri:
        return True
    parts: list[str] = []
    last = 0
    for match in _EXPRESSION.finditer(template):
        parts.append(re.escape(template[last : match.start()]))
        # Reserved and fragment expansion may span "/"; simple expansion may not.
        parts.append(".*?" if match.group()[1:2] in ("+", "#", "/") else "[^/]*?")
        last = match.end()
    if last == 0:
        return False
    parts.append(re.escape(template[last:]))
    return re.fullmatch("".join(parts), uri, flags=re.DOTALL) is not None
