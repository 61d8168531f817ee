"""Frame builders and a bounded ``receive`` shared by the HTTP transport tests."""

from __future__ import annotations

from typing import Any

import anyio

from mcpx.transport import Inbound, Transport

# The per-frame header that makes the test server answer with an SSE stream.
SSE = {"X-Test-Response": "sse"}


def request(rid: int | str, method: str = "tools/list", **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def result(rid: int | str, method: str = "tools/list", **params: Any) -> dict[str, Any]:
    """What the test server answers to ``request(rid, method, **params)``."""
    return {"jsonrpc": "2.0", "id": rid, "result": {"method": method, "params": params}}


async def receive(t: Transport, timeout: float = 10.0) -> Inbound:
    with anyio.fail_after(timeout):
        return await t.receive()
