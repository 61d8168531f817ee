"""A 2026-07-28 request as a test host sends it: the one builder every test uses.

A modern request carries its context itself: ``params._meta`` names the revision
(``io.modelcontextprotocol/protocolVersion``), what the client can answer
(``…/clientCapabilities``) and, unless left out, who it is (``…/clientInfo``); over HTTP it
also carries ``MCP-Protocol-Version`` and ``Mcp-Method``, and ``Mcp-Name`` for the methods
that name something (``tools/call``, ``prompts/get``: the name; ``resources/read``: the
URI; ``tasks/*``: the task id).

Invariants: every builder returns a new dict (callers may change it); the headers of a
request are derived from the same method and params as its body, so they always agree
unless a test overrides them on purpose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MODERN = "2026-07-28"
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"

# The params member each named method mirrors in Mcp-Name.
_NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def modern_meta(
    capabilities: Mapping[str, Any] | None = None,
    *,
    client: str | None = "mcpx-tests",
    **extra: Any,
) -> dict[str, Any]:
    """The ``_meta`` of a 2026-07-28 request: the revision, ``capabilities`` (none by
    default), ``clientInfo`` named ``client`` (left out when ``None``), then ``extra`` keys
    (full ``_meta`` key names; they replace the defaults)."""
    meta: dict[str, Any] = {
        PROTOCOL_VERSION: MODERN,
        CLIENT_CAPABILITIES: dict(capabilities or {}),
    }
    if client is not None:
        meta[CLIENT_INFO] = {"name": client, "version": "1"}
    meta.update(extra)
    return meta


def modern_params(
    params: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``params`` with ``_meta`` set: ``meta`` if given, else ``modern_meta()``."""
    return {**(params or {}), "_meta": dict(meta) if meta is not None else modern_meta()}


def modern_request(
    rid: int | str,
    method: str,
    params: Mapping[str, Any] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON-RPC frame of a 2026-07-28 request (``_meta`` as ``modern_params``)."""
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": modern_params(params, meta)}


def modern_headers(
    method: str,
    params: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    accept: str | None = None,
) -> dict[str, str]:
    """The HTTP headers of a 2026-07-28 request: ``MCP-Protocol-Version``, ``Mcp-Method``
    and, where the method names something, ``Mcp-Name`` (``name`` if given, else taken
    from ``params``); ``Accept`` only when given."""
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is None and params is not None:
        member = "taskId" if method.startswith("tasks/") else _NAMED_BY.get(method)
        if member is not None and member in params:
            name = str(params[member])
    if name is not None:
        headers["Mcp-Name"] = name
    if accept is not None:
        headers["Accept"] = accept
    return headers
