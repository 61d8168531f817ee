"""Progress and log messages of an upstream call, relayed to the host that made it.

A real daemon with the demo upstream (its ``slow`` tool reports progress per step and
logs when done); hosts on /mcp in a legacy session and as 2026-07-28 requests. Every
frame the daemon sent is checked strictly against the host's revision at teardown.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.modern import LOG_LEVEL, MODERN, modern_headers, modern_meta

BOTH = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    with running_daemon(tmp_path_factory.mktemp("relay"), servers) as d:
        yield d


def _slow(meta: dict[str, Any], steps: int = 4) -> dict[str, Any]:
    args = {"server": "demo", "tool": "slow", "arguments": {"seconds": 0.4, "steps": steps}}
    return {"name": "mcpx_call", "arguments": args, "_meta": meta}


def _events(r: httpx.Response) -> list[dict[str, Any]]:
    assert r.headers["content-type"].startswith("text/event-stream"), r.text
    return [
        json.loads(line[len("data: ") :])
        for line in r.text.splitlines()
        if line.startswith("data: ")
    ]


def _session(mcp: httpx.Client, rev: str) -> dict[str, str]:
    params: dict[str, Any] = {"protocolVersion": rev, "capabilities": {}}
    params["clientInfo"] = {"name": "t", "version": "1"}
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    assert "logging" in r.json()["result"]["capabilities"]
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "Accept": BOTH}
    if rev >= "2025-06-18":  # the header exists from 2025-06-18 on
        headers["MCP-Protocol-Version"] = rev
    return headers


def _check_progress(frames: list[dict[str, Any]], token: object, steps: int) -> None:
    progress = [f["params"] for f in frames if f.get("method") == "notifications/progress"]
    assert progress, frames
    assert {p["progressToken"] for p in progress} == {token}  # the host's own, restored
    values = [p["progress"] for p in progress]
    assert values == sorted(set(values))  # only forward
    assert values[-1] == steps == progress[-1]["total"]  # the final one always arrives


@pytest.fixture(scope="module")
def oldest_first(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # 2024-11-05 first and strict (--mcp-spec 2024-11-05): its hosts get progress without
    # the message field its schema lacks. By default they get it (a recorded reading).
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    settings = {"spec.first": "2024-11-05"}
    with running_daemon(tmp_path_factory.mktemp("relay-oldest"), servers, settings) as d:
        yield d


@pytest.mark.obligation("S-PROG-1", "S-PROG-2", "S-PROG-4")
@pytest.mark.parametrize("rev", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_legacy_host_gets_progress_and_logs_on_the_call_stream(
    daemon: Daemon, oldest_first: Daemon, rev: str
) -> None:
    if rev == "2024-11-05":
        daemon = oldest_first
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers = _session(mcp, rev)
        level = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "logging/setLevel",
            "params": {"level": "info"},
        }
        assert mcp.post("/mcp", json=level, headers=headers).json()["result"] == {}
        call = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": _slow({"progressToken": "tok"}),
        }
        frames = _events(mcp.post("/mcp", json=call, headers=headers))
        _check_progress(frames, "tok", 4)
        progress = [f["params"] for f in frames if f.get("method") == "notifications/progress"]
        assert all(("message" in p) == (rev != "2024-11-05") for p in progress), progress
        logs = [f["params"] for f in frames if f.get("method") == "notifications/message"]
        assert any("slow: slept" in str(m["data"]) for m in logs), frames
        assert frames[-1]["id"] == 3 and "slept" in frames[-1]["result"]["content"][0]["text"]
        # Nothing asked for, nothing relayed: a plain JSON answer.
        quiet = {**call, "id": 4, "params": _slow({})}
        level["params"] = {"level": "emergency"}
        mcp.post("/mcp", json={**level, "id": 5}, headers=headers)
        r = mcp.post("/mcp", json=quiet, headers=headers)
        assert r.headers["content-type"] == "application/json"


@pytest.mark.obligation("S-PROG-1", "S-PROG-2", "S-LOG-4")
def test_modern_host_gets_progress_and_logs_at_its_level(daemon: Daemon) -> None:
    meta = modern_meta({}, client=None, **{LOG_LEVEL: "info"}, progressToken=7)
    headers = modern_headers("tools/call", name="mcpx_call", accept=BOTH)
    frame = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": _slow(meta, steps=3)}
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        frames = _events(mcp.post("/mcp", json=frame, headers=headers))
        _check_progress(frames, 7, 3)
        assert any(f.get("method") == "notifications/message" for f in frames)
        assert frames[-1]["result"]["resultType"] == "complete"
        # No logLevel: no log messages (S-LOG-4); progress still comes.
        del meta[LOG_LEVEL]
        frames = _events(mcp.post("/mcp", json=frame, headers=headers))
        assert not [f for f in frames if f.get("method") == "notifications/message"]
        _check_progress(frames, 7, 3)


@pytest.fixture(scope="module")
def sdk_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # The official SDK's fixture server, legacy (1.23.3) and dual-era (2.3.0, found modern).
    servers = {"legacy": sdk_entry("1.23.3"), "modern": sdk_entry("2.3.0")}
    with running_daemon(tmp_path_factory.mktemp("relay-sdk"), servers) as d:
        yield d


def _sdk_call(server: str, tool: str, arguments: dict[str, Any], meta: dict[str, Any]) -> Any:
    args = {"server": server, "tool": tool, "arguments": arguments}
    return {"name": "mcpx_call", "arguments": args, "_meta": meta}


@pytest.mark.obligation("S-PROG-1", "S-PROG-2")
@pytest.mark.parametrize("upstream", ["legacy", "modern"])
@pytest.mark.parametrize("host", ["2025-11-25", MODERN])
def test_sdk_upstreams_progress_and_logs_reach_hosts_of_both_eras(
    sdk_daemon: Daemon, upstream: str, host: str
) -> None:
    with httpx.Client(base_url=sdk_daemon.info["url"], timeout=60) as mcp:
        if host == MODERN:
            meta = modern_meta({}, client=None, **{LOG_LEVEL: "info"})
            headers = modern_headers("tools/call", name="mcpx_call", accept=BOTH)
        else:
            meta = {}
            headers = _session(mcp, host)
            level = {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel"}
            mcp.post("/mcp", json={**level, "params": {"level": "info"}}, headers=headers)
        slow = _sdk_call(upstream, "slow", {"seconds": 0.5}, {**meta, "progressToken": "p"})
        frame = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": slow}
        frames = _events(mcp.post("/mcp", json=frame, headers=headers))
        _check_progress(frames, "p", 5)
        said = _sdk_call(upstream, "log", {"message": f"hello from {upstream}"}, meta)
        frame = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": said}
        frames = _events(mcp.post("/mcp", json=frame, headers=headers))
        logs = [f["params"] for f in frames if f.get("method") == "notifications/message"]
        assert [m["data"] for m in logs] == [f"hello from {upstream}"]
        assert logs[0]["level"] == "info"


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    from support.peers import everything_server_command

    argv = everything_server_command("stdio")
    servers = {"everything": {"command": argv[0], "args": argv[1:]}}
    with running_daemon(tmp_path_factory.mktemp("relay-everything"), servers) as d:
        yield d


@pytest.mark.obligation("S-PROG-2")
@pytest.mark.parametrize("rev", ["2025-11-25", MODERN])
def test_server_everything_progress_reaches_hosts_of_both_eras(
    everything: Daemon, rev: str
) -> None:
    args = {
        "server": "everything",
        "tool": "trigger-long-running-operation",
        "arguments": {"duration": 1, "steps": 4},
    }
    with httpx.Client(base_url=everything.info["url"], timeout=60) as mcp:
        if rev == MODERN:
            meta = modern_meta(client=None, progressToken="ev")
            headers = modern_headers("tools/call", name="mcpx_call", accept=BOTH)
        else:
            headers, meta = _session(mcp, rev), {"progressToken": "ev"}
        params = {"name": "mcpx_call", "arguments": args, "_meta": meta}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        frames = _events(mcp.post("/mcp", json=call, headers=headers))
    _check_progress(frames, "ev", 4)
    assert "Long running operation completed" in frames[-1]["result"]["content"][0]["text"]
