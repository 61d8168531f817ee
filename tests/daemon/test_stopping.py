"""A daemon that stops answers the calls in flight: after ``daemon.stopGrace`` they end
with an error that says so, over stdio and ``/mcp`` of both eras, instead of a host left
waiting for a connection to drop (a bare HTTP 500, an EOF with no answer).

End to end: a real daemon, a real ``mcpx serve`` shim, raw HTTP hosts, and the official
SDK's server (its ``slow`` tool) as the upstream; the daemon is stopped by SIGTERM.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, legacy_session, running_daemon, sdk_entry
from support.modern import modern_headers, modern_meta, modern_request
from support.waiting import wait_until

META = modern_meta(client=None)
STOPPING = "fixture: mcpx is stopping, and tools/call was ended before it finished"


@pytest.fixture
def daemon(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Daemon]:
    servers = {"fixture": sdk_entry("2.3.0")}
    with running_daemon(tmp_path, servers, settings={"daemon.stopGrace": request.param}) as d:
        yield d


def _slow(seconds: float, rid: int = 2) -> dict[str, Any]:
    arguments = {"server": "fixture", "tool": "slow", "arguments": {"seconds": seconds}}
    params = {"name": "mcpx_call", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


class _StdioHost:
    """``mcpx serve`` as an MCP host runs it, one slow call sent; its lines collected."""

    def __init__(self, daemon: Daemon, seconds: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpx", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=daemon.env(),
        )
        init = {"protocolVersion": "2025-11-25", "capabilities": {}}
        init["clientInfo"] = {"name": "t", "version": "1"}
        self._send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert self.proc.stdout is not None
        assert json.loads(self.proc.stdout.readline())["id"] == 1
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self._send(_slow(seconds))
        self.lines: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _send(self, frame: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(frame).encode() + b"\n")
        self.proc.stdin.flush()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    def ended(self) -> list[dict[str, Any]]:
        """Every line up to EOF (the daemon closed the host's pipes), once the shim exits."""
        self._reader.join(timeout=30)
        assert self.proc.wait(timeout=30) == 0
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        return self.lines


def _in_thread(post: Any) -> tuple[threading.Thread, list[httpx.Response]]:
    got: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: got.append(post()), daemon=True)
    thread.start()
    return thread, got


def _until_calls_in_flight(daemon: Daemon, count: int) -> None:
    def in_flight() -> bool:
        with daemon.http() as api:
            servers = api.get("/v1/servers").json()["servers"]
        instances = next(s for s in servers if s["name"] == "fixture")["instances"]
        return bool(sum(i["inFlight"] for i in instances) >= count)

    wait_until(in_flight, timeout=60, message=f"{count} calls never were in flight")


def _stop(daemon: Daemon) -> None:
    daemon.proc.send_signal(signal.SIGTERM)
    daemon.proc.wait(timeout=60)


def _text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


# S-LIFE-9: the server shuts down by closing its output (stdio) and its connections (HTTP),
# each call in flight answered first.
@pytest.mark.obligation("S-LIFE-9")
@pytest.mark.parametrize("daemon", ["500ms"], indirect=True)
def test_calls_in_flight_are_answered_with_an_error_when_the_daemon_stops(
    daemon: Daemon,
) -> None:
    url = daemon.info["url"]
    host = _StdioHost(daemon, 120)
    with httpx.Client(base_url=url, timeout=60) as mcp:
        headers = legacy_session(mcp, {})
    legacy, legacy_got = _in_thread(
        lambda: httpx.post(url + "/mcp", json=_slow(120, 5), headers=headers, timeout=60)
    )
    call = _slow(120)["params"]
    modern_frame = modern_request(7, "tools/call", call, META)
    modern_head = modern_headers("tools/call", call)
    modern, modern_got = _in_thread(
        lambda: httpx.post(url + "/mcp", json=modern_frame, headers=modern_head, timeout=60)
    )
    _until_calls_in_flight(daemon, 3)
    _stop(daemon)
    legacy.join(timeout=30)
    modern.join(timeout=30)
    # Each host got its call's answer: the tool's error result, saying why.
    [answer] = host.ended()
    assert answer["id"] == 2 and answer["result"]["isError"] is True
    assert _text(answer["result"]) == f"upstream_error: {STOPPING}"
    [reply] = legacy_got
    assert reply.status_code == 200
    assert reply.json()["id"] == 5 and _text(reply.json()["result"]).endswith(STOPPING)
    [reply] = modern_got
    assert reply.status_code == 200
    assert reply.json()["id"] == 7 and _text(reply.json()["result"]).endswith(STOPPING)


@pytest.mark.parametrize("daemon", ["60s"], indirect=True)
def test_a_call_that_ends_within_the_grace_is_answered_in_full(daemon: Daemon) -> None:
    host = _StdioHost(daemon, 1.5)
    _until_calls_in_flight(daemon, 1)
    _stop(daemon)
    [answer] = host.ended()
    assert answer["id"] == 2 and not answer["result"].get("isError")
    assert "slept 1.5" in _text(answer["result"])
