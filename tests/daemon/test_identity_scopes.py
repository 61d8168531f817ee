"""Identity reaches the pool: a server with scope "identity" gets one instance per client.

Legacy HTTP sessions are each their own identity and their instance ends with the
session; a 2026-07-28 request is a scope of its own unless it names a session in
``_meta["dev.mcpx/session"]``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.modern import modern_headers, modern_meta
from support.waiting import wait_until

ECHO = {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    demo = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"], "scope": "identity"}
    with running_daemon(tmp_path_factory.mktemp("scopes"), {"demo": demo}) as d:
        yield d


def _scopes(daemon: Daemon) -> list[str]:
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    # "anonymous" is the catalogue's own instance, which lists what the server offers.
    return sorted(i["scope"] for s in servers for i in s["instances"] if i["scope"] != "anonymous")


def _wait_scopes(daemon: Daemon, want: list[str]) -> None:
    wait_until(lambda: _scopes(daemon) == want, message=lambda: f"scopes {_scopes(daemon)}")


def _session(mcp: httpx.Client) -> dict[str, str]:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}}
    params["clientInfo"] = {"name": "t", "version": "1"}
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    return {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}


def _call(mcp: httpx.Client, headers: dict[str, str], meta: dict[str, Any] | None = None) -> None:
    params: dict[str, Any] = {"name": "mcpx_call", "arguments": ECHO}
    if meta is not None:
        params["_meta"] = meta
    frame = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
    r = mcp.post("/mcp", json=frame, headers=headers)
    assert r.status_code == 200, r.text
    assert r.json()["result"]["content"][0]["text"] == "hi"


def test_each_legacy_session_has_its_own_instance(daemon: Daemon) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        first, second = _session(mcp), _session(mcp)
        _call(mcp, first)
        _call(mcp, second)
        _call(mcp, first)
        scopes = _scopes(daemon)
        want = sorted(f"http:{h['Mcp-Session-Id']}" for h in (first, second))
        assert scopes == want
        # Ending a session ends the instance it owned; the other stays.
        assert mcp.delete("/mcp", headers=first).status_code == 200
        _wait_scopes(daemon, [f"http:{second['Mcp-Session-Id']}"])
        assert mcp.delete("/mcp", headers=second).status_code == 200
        _wait_scopes(daemon, [])


def test_modern_requests_are_their_own_scope_unless_named(daemon: Daemon) -> None:
    meta = modern_meta(client=None)
    headers = modern_headers("tools/call", name="mcpx_call")
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        _call(mcp, headers, meta)
        # Its instance ended with the request: nothing of it is left.
        _wait_scopes(daemon, [])
        named = {**meta, "dev.mcpx/session": "agent-7"}
        _call(mcp, headers, named)
        _call(mcp, headers, named)
        assert _scopes(daemon) == ["named:agent-7"]
