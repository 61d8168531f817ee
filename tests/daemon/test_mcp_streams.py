"""/mcp answers lazily: JSON when it can, an event stream with keep-alives when slow,
and a client that goes away cancels its call."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.modern import modern_headers, modern_meta, modern_request
from support.schemas import FrameLog
from support.waiting import wait_until

META = modern_meta(client=None)
BOTH = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    settings = {"transport.sseKeepAlive": "200ms"}
    with running_daemon(tmp_path_factory.mktemp("streams"), servers, settings) as d:
        yield d


def _slow(seconds: float) -> dict[str, Any]:
    args = {"server": "demo", "tool": "slow", "arguments": {"seconds": seconds, "steps": 1}}
    return {"name": "mcpx_call", "arguments": args}


def _session(mcp: httpx.Client, rev: str) -> dict[str, str]:
    params = {
        "protocolVersion": rev,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    return {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": rev}


def _events(body: str) -> tuple[list[dict[str, Any]], int]:
    """The data frames of an event stream, and how many comment lines it held."""
    frames, comments = [], 0
    for block in body.split("\n\n"):
        for line in block.splitlines():
            if line.startswith(":"):
                comments += 1
            elif line.startswith("data: "):
                frames.append(json.loads(line[len("data: ") :]))
            else:
                assert line.startswith("event: message") or not line, line
                assert not line.startswith("id:")  # no event ids: nothing is resumable
    return frames, comments


@pytest.mark.obligation("S-HTTP-7", "S-HTTP-8")
@pytest.mark.parametrize("rev", ["2025-03-26", "2025-11-25"])
def test_a_slow_call_becomes_a_stream_with_keepalives(
    daemon: Daemon, rev: str, sent_frames: FrameLog
) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers = {**_session(mcp, rev), "Accept": BOTH}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": _slow(1.0)}
        r = mcp.post("/mcp", json=call, headers=headers)
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        frames, comments = _events(r.text)
        assert comments >= 2  # one every 200 ms of a 1 s call
        assert [f["id"] for f in frames] == [2]
        sent_frames.sent(frames[0], rev, answering="tools/call")
        assert "slept 1 s" in frames[0]["result"]["content"][0]["text"]
        # A fast answer stays JSON, even though the client offered streams.
        fast = {**call, "id": 3, "params": _slow(0)}
        r = mcp.post("/mcp", json=fast, headers=headers)
        assert r.headers["content-type"] == "application/json"
        # A client that offered no stream just waits for JSON.
        r = mcp.post(
            "/mcp", json={**call, "id": 4}, headers={**headers, "Accept": "application/json"}
        )
        assert r.headers["content-type"] == "application/json"
        assert r.json()["id"] == 4


def test_modern_slow_call_streams_and_errors_keep_their_status(daemon: Daemon) -> None:
    headers = modern_headers("tools/call", _slow(0.6), accept=BOTH)
    frame = modern_request(5, "tools/call", _slow(0.6), META)
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        r = mcp.post("/mcp", json=frame, headers=headers)
        assert r.headers["content-type"].startswith("text/event-stream")
        frames, _ = _events(r.text)
        assert frames[0]["result"]["resultType"] == "complete"
        # A fast error is JSON with the status its code calls for (-32602 → 400).
        bad = modern_request(5, "tools/call", {"name": "nope"}, META)
        r = mcp.post(
            "/mcp", json=bad, headers=modern_headers("tools/call", name="nope", accept=BOTH)
        )
        assert (r.status_code, r.json()["error"]["code"]) == (400, -32602)


def _in_flight(daemon: Daemon) -> int:
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    return sum(i["inFlight"] for s in servers for i in s["instances"])


@pytest.mark.obligation("S-CANC-8", "S-HTTP-24")
def test_closing_the_connection_cancels_the_call(daemon: Daemon) -> None:
    # A raw socket: the test decides exactly when the connection goes away.
    host, port = daemon.info["url"].removeprefix("http://").split(":")
    body = json.dumps(modern_request(6, "tools/call", _slow(60), META)).encode()
    mcp_headers = "".join(
        f"{name}: {value}\r\n"
        for name, value in modern_headers("tools/call", _slow(60), accept=BOTH).items()
    )
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"{mcp_headers}Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head + body)
        assert wait_until(lambda: _in_flight(daemon), timeout=20) == 1
    # Withdrawn long before its 60 s.
    wait_until(lambda: _in_flight(daemon) == 0, timeout=20, message="the call still runs")


def _finished(daemon: Daemon, tool: str, at_least_ms: float) -> dict[str, Any]:
    """The retained call.finished event of a ``tool`` call that ran ``at_least_ms``."""
    with daemon.http() as api:
        params: dict[str, str | int] = {"since": 0, "kind": "call.finished"}
        with api.stream("GET", "/v1/events", params=params, timeout=30) as r:
            for line in r.iter_lines():  # the replay holds it: found without waiting
                if line.startswith("data: "):
                    data: dict[str, Any] = json.loads(line[len("data: ") :])["data"]
                    if data.get("tool") == tool and data["ms"] >= at_least_ms:
                        return data
    raise AssertionError(f"no call.finished for {tool}")


@pytest.mark.obligation("S-HTTP-23")
def test_a_legacy_client_going_away_does_not_cancel_its_call(daemon: Daemon) -> None:
    # S-HTTP-23: before 2026-07-28 a disconnect is not a cancellation: the call completes
    # (its answer has nowhere to go).
    with httpx.Client(base_url=daemon.info["url"], timeout=30) as mcp:
        headers = _session(mcp, "2025-11-25")
    host, port = daemon.info["url"].removeprefix("http://").split(":")
    body = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": _slow(2)})
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: {BOTH}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        f"Mcp-Session-Id: {headers['Mcp-Session-Id']}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head + body.encode())
        assert wait_until(lambda: _in_flight(daemon), timeout=20) == 1
    wait_until(lambda: _in_flight(daemon) == 0, timeout=30, message="the call still runs")
    # It ran its 2 s rather than being withdrawn, and ended without an error.
    finished = _finished(daemon, "slow", 1900)
    assert "error" not in finished and finished["isError"] is False, finished
