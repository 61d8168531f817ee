"""Which upstream resource an ``mcpx://`` URI names, read against the server's catalogue.

Invariant: an unknown server or a URI that is not an ``mcpx://`` one is ``None``, never an
error: what "not found" is on the wire depends on the caller's revision, so each surface
words it (``server`` for MCP hosts, the events operation for /v1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._uris import original_uri, split_gateway

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = ["upstream_resource"]


async def upstream_resource(ctx: OpContext, uri: str) -> tuple[str, str] | None:
    """(server, upstream URI) of an ``mcpx://`` URI; None if it names no configured server."""
    parts = split_gateway(uri)
    if parts is None or not ctx.visible(parts[0]):
        return None
    server, rest = parts
    # A failed listing is recorded in the entry, not raised: the URI then decodes plainly.
    entry = await ctx.catalogue.entry(server)
    resources = [r["uri"] for r in entry.get("resources") or [] if "uri" in r]
    templates = [t["uriTemplate"] for t in entry.get("templates") or [] if "uriTemplate" in t]
    return server, original_uri(rest, resources=resources, templates=templates)
