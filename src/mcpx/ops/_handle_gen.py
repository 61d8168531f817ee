"""``exec.client``: the typed Python client of the tools in the caller's reach.

The package (``mcpx_tools``) is generated from the catalogue's live schemas, as a
script run by ``mcpx exec`` imports it and as ``mcpx gen python`` writes it. A server
whose listing failed is left out of it and named under ``errors`` with why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from mcpx.exec import PACKAGE, generate_package

from ._upstream_call import upstream

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = ["exec_client"]


async def exec_client(ctx: OpContext, args: dict[str, Any]) -> dict[str, Any]:
    """``{"package", "files": {relative path: text}, "errors": {server: why}}``."""
    entries = await upstream("*", ctx.catalogue.entries(ctx.server_names()))
    tools = {s: list(e.get("tools") or []) for s, e in entries.items() if not e.get("error")}
    # Off the event loop: a catalogue of many large schemas takes a while to write out.
    files = await anyio.to_thread.run_sync(generate_package, tools)
    errors = {s: e["error"] for s, e in entries.items() if e.get("error")}
    return {"package": PACKAGE, "files": files, "errors": errors}
