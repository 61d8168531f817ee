"""The official TypeScript SDK client as a real MCP host of mcpx, over stdio and Streamable HTTP.

``tests/fixtures/ts_host.mjs`` on Node 24 with npm ``@modelcontextprotocol/sdk`` 1.32.2
(``Client`` + ``StdioClientTransport`` spawning ``mcpx serve``, or
``StreamableHTTPClientTransport`` on the daemon's ``/mcp``) does what the Python hosts do;
the SDK speaks up to 2025-11-25, which mcpx must answer with.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from support.daemon import Daemon
from support.hosts import HOST_METHODS, answered, check_content, mcp_url, run_host, ts_host

TS_REVISION = "2025-11-25"  # the SDK's LATEST_PROTOCOL_VERSION, which its initialize offers


@pytest.mark.obligation(
    "S-LIFE-2",
    "S-LIFE-3",
    "S-TOOL-1",
    "S-PROMPT-1",
    "S-RES-1",
    "S-LIFE-8",
    "S-HTTP-27",
    "S-HTTP-30",
    "S-HTTP-29",
)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_ts_host(daemon: Daemon, demo_direct: dict[str, Any], transport: str) -> None:
    target = mcp_url(daemon) if transport == "http" else ""
    run = run_host(ts_host(transport, target), daemon)
    seen = run.seen
    assert seen["sdk"] == "1.32.2"
    # S-LIFE-2, S-LIFE-3: the SDK's initialize offered 2025-11-25 and got exactly that back,
    # with capabilities and serverInfo (the SDK checks the result against its schema).
    assert seen["protocolVersion"] == TS_REVISION, seen
    check_content(seen, demo_direct)
    # S-TOOL-1, S-PROMPT-1, S-RES-1: each capability is declared, and its methods worked.
    assert {"tools", "prompts", "resources"} <= set(seen["capabilities"]), seen["capabilities"]
    # Neither the client nor its transport reported an error on the way.
    assert seen["errors"] == [], seen["errors"]

    # S-LIFE-8: every frame mcpx sent this host is at the negotiated revision, which the
    # daemon's sweep holds it to (strictly) when the module ends.
    assert {r for r, _ in answered(run.frames)} == {TS_REVISION}, answered(run.frames)
    assert {m for _, m in answered(run.frames)} >= HOST_METHODS | {"initialize"}

    if transport == "http":
        # S-HTTP-27: the session id (assigned with the InitializeResult) is visible ASCII.
        assert re.fullmatch(r"[\x21-\x7e]+", seen["sessionId"] or ""), seen["sessionId"]
        # S-HTTP-30: the host's DELETE was answered 2xx or 405 (the SDK throws otherwise)...
        assert seen["terminated"] is True
        # S-HTTP-29: ...and it did end the session: a request in it now is 404.
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"Mcp-Session-Id": seen["sessionId"], "MCP-Protocol-Version": TS_REVISION}
        headers["Accept"] = "application/json, text/event-stream"
        assert httpx.post(target, json=ping, headers=headers, timeout=30).status_code == 404
    else:
        assert seen["sessionId"] is None
