"""Helpers for the tests of what one client may hold (tests/security/test_*_bounds.py):
a gauge upstream that counts its calls running at once, legacy /mcp sessions over the
daemon's unix socket, and a bounded wait for a condition."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

import httpx

from .daemon import Daemon
from .waiting import WaitTimedOut, wait_until

T = TypeVar("T")

GAUGE = Path(__file__).resolve().parents[1] / "fixtures" / "gauge_server.py"


def gauge_entry(**extra: Any) -> dict[str, Any]:
    """A config entry for ``tests/fixtures/gauge_server.py``."""
    return {"command": sys.executable, "args": [str(GAUGE)], **extra}


def wait_for(probe: Callable[[], T], ok: Callable[[T], bool], limit: float = 30) -> T:
    """``probe()`` again and again until ``ok`` holds of it (within ``limit`` seconds);
    the last value seen, which the caller asserts on (its message shows the value)."""
    seen: list[T] = []

    def holds() -> bool:
        seen[:] = [probe()]
        return ok(seen[0])

    with suppress(WaitTimedOut):
        wait_until(holds, timeout=limit)
    return seen[0]


def request(rid: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def mcpx_call(rid: int | str, server: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """A host's ``tools/call`` of the gateway's ``mcpx_call``."""
    args = {"server": server, "tool": tool, "arguments": arguments}
    return request(rid, "tools/call", {"name": "mcpx_call", "arguments": args})


def open_session(mcp: httpx.Client, revision: str = "2025-11-25") -> httpx.Response:
    """An ``initialize`` POST (the response: a session id, or a refusal)."""
    params = {"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "t"}}
    return mcp.post("/mcp", json=request(1, "initialize", params))


def session(mcp: httpx.Client, revision: str = "2025-11-25") -> dict[str, str]:
    """A legacy session, initialized; the headers its requests carry."""
    r = open_session(mcp, revision)
    assert r.status_code == 200, r.text
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": revision}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    return headers


def gauge(daemon: Daemon, gate: str, server: str = "gauge") -> dict[str, int]:
    """The gauge's counts for ``gate``: holds running now, and the most at once."""
    body = {"server": server, "tool": "gauge", "arguments": {"gate": gate}}
    with daemon.http() as api:
        r = api.post("/v1/call", json=body)
    assert r.status_code == 200, r.text
    counts: dict[str, int] = json.loads(r.json()["content"][0]["text"])
    return counts


def open_gate(daemon: Daemon, gate: str, server: str = "gauge") -> None:
    body = {"server": server, "tool": "open", "arguments": {"gate": gate}}
    with daemon.http() as api:
        assert api.post("/v1/call", json=body).status_code == 200
