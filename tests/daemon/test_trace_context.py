"""Trace context in a host's ``_meta`` reaches the upstream unchanged (issue 8)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from support.daemon import Daemon, bad_entry, running_daemon

TRACE = {
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "tracestate": "congo=t61rcWkgMzE",
    "baggage": "userId=alice",
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"legacy": bad_entry("legacy"), "modern": bad_entry("modern")}
    with running_daemon(tmp_path_factory.mktemp("trace"), servers) as d:
        yield d


@pytest.mark.obligation("C-MSG-14")
@pytest.mark.parametrize("upstream", ["legacy", "modern"])
def test_trace_context_passes_upstream_unchanged(daemon: Daemon, upstream: str) -> None:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}}
    init["clientInfo"] = {"name": "t", "version": "1"}
    args = {"server": upstream, "tool": "echo", "arguments": {"text": "x"}}
    call = {"name": "mcpx_call", "arguments": args, "_meta": {**TRACE, "progressToken": 1}}
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        r = mcp.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
        )
        headers = {
            "Mcp-Session-Id": r.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        frame = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
        result = mcp.post("/mcp", json=frame, headers=headers).json()["result"]
    # The upstream saw exactly the three keys (its own progress token is mcpx's).
    assert result["_meta"]["bad/received"] == TRACE
