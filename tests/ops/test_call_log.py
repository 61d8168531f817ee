"""The call log (issue 24, "Call log, stats, doctor"): every door's calls recorded in
``<state>/calls.db`` (0600), filtered by /v1/log, counted by /v1/stats, pruned by rows,
payloads kept only when asked and their secret-looking values hidden."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from support.daemon import bad_entry, legacy_session, running_daemon

TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _demo() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}


def _mcp_call(mcp: httpx.Client, headers: dict[str, str], tool: str, args: dict[str, Any]) -> Any:
    params = {"name": f"demo_{tool}", "arguments": args, "_meta": {"traceparent": TRACE}}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    return mcp.post("/mcp", json=body, headers=headers)


def _calls(api: httpx.Client, **query: Any) -> list[dict[str, Any]]:
    reply = api.get("/v1/log", params=query)
    assert reply.status_code == 200, reply.text
    calls: list[dict[str, Any]] = reply.json()["calls"]
    return calls


def test_every_door_is_recorded_and_filtered(tmp_path: Path) -> None:
    with running_daemon(tmp_path, {"demo": _demo()}, {"mcp.surface": "full"}) as d:
        with d.http() as api:
            assert (
                api.post(
                    "/v1/call", json={"server": "demo", "tool": "echo", "arguments": {"text": "v1"}}
                ).status_code
                == 200
            )
        done = d.cli("call", "demo", "echo", "text=cli")
        assert done.returncode == 0, done.stderr
        url = d.info["url"]
        with httpx.Client(base_url=url, timeout=60) as mcp:
            headers = legacy_session(mcp, {}) | {"Accept": "application/json, text/event-stream"}
            assert _mcp_call(mcp, headers, "echo", {"text": "mcp"}).status_code == 200
        with d.http() as api:
            calls = _calls(api)  # /v1/log waits for the calls finished before it
            assert len(calls) == 3, calls
            doors = {c["door"] for c in calls}
            assert {"v1", "cli", "passthrough"} <= doors, calls
            mcp_call = next(c for c in calls if c["door"] == "passthrough")
            assert mcp_call["tool"] == "echo", mcp_call
            assert mcp_call["trace_id"] == TRACE.split("-")[1]
            assert mcp_call["host_revision"] == "2025-11-25"
            assert mcp_call["caller"] == "t 1"
            assert mcp_call["transport"] == "http"
            assert all(c["upstream_revision"] for c in calls)
            assert all(c["outcome"] == "ok" and c["arguments"] is None for c in calls)
            # Newest first; filters by tool and errors.
            assert [c["id"] for c in calls] == sorted((c["id"] for c in calls), reverse=True)
            assert _calls(api, tool="add") == []
            assert _calls(api, errors="true") == []
            assert len(_calls(api, server="demo", limit=1)) == 1
            assert _calls(api, since="2099-01-01T00:00") == []
            assert api.get("/v1/log", params={"since": "soon"}).status_code == 400
        mode = (d.state / "calls.db").stat().st_mode
        assert stat.S_IMODE(mode) == 0o600


def test_errors_stats_and_crashes(tmp_path: Path) -> None:
    servers = {"demo": _demo(), "crash": bad_entry("exit")}
    with running_daemon(tmp_path, servers) as d, d.http() as api:
        for seconds in (0, 0.2, 0.4):
            body = {"server": "demo", "tool": "slow", "arguments": {"seconds": seconds}}
            assert api.post("/v1/call", json=body).status_code == 200
        body = {"server": "crash", "tool": "echo", "arguments": {"text": "x"}}
        assert api.post("/v1/call", json=body).status_code == 502
        failed = _calls(api, errors="true")
        assert [c["server"] for c in failed] == ["crash"]
        assert failed[0]["outcome"] == "error" and failed[0]["error"]
        stats = api.get("/v1/stats").json()
        slow = next(t for t in stats["tools"] if t["tool"] == "slow")
        assert slow["calls"] == 3 and slow["errors"] == 0
        assert slow["p50"] <= slow["p95"] <= slow["p99"]
        assert slow["p50"] >= 200  # nearest rank: the 0.2 s call
        crash = next(t for t in stats["tools"] if t["server"] == "crash")
        assert crash["errors"] == 1
        assert stats["servers"]["crash"]["crashes"] >= 1
        assert stats["servers"]["demo"] == {"starts": 1, "crashes": 0}
        shown = d.cli("stats")
        assert shown.returncode == 0 and "slow" in shown.stdout
        logged = d.cli("log", "--errors", "--json")
        assert logged.returncode == 0 and '"crash"' in logged.stdout


def test_payloads_are_redacted_and_rows_pruned(tmp_path: Path) -> None:
    settings = {"log.payloads": True, "log.keepRows": 3}
    # The bad server's echo takes any argument besides its text.
    with running_daemon(tmp_path, {"open": bad_entry("legacy")}, settings) as d, d.http() as api:
        body = {
            "server": "open",
            "tool": "echo",
            "arguments": {"text": "hello", "apiToken": "s3cr3t-value"},
        }
        reply = api.post("/v1/call", json=body)
        assert reply.status_code == 200, reply.text
        [call] = _calls(api)
        assert call["arguments"] == {"text": "hello", "apiToken": "***"}
        assert call["result"]["content"][0]["text"] == "hello"
        raw = b"".join(p.read_bytes() for p in d.state.glob("calls.db*"))
        assert b"s3cr3t-value" not in raw
        for n in range(4):
            body = {"server": "open", "tool": "echo", "arguments": {"text": f"n{n}"}}
            assert api.post("/v1/call", json=body).status_code == 200
        assert len(_calls(api)) == 5  # pruned at start, not per call
    # The next start prunes to log.keepRows, keeping the newest.
    with running_daemon(tmp_path, {"open": bad_entry("legacy")}, settings) as d, d.http() as api:
        kept = _calls(api)
        assert [c["arguments"]["text"] for c in kept] == ["n3", "n2", "n1"]


def test_gateway_tool_over_stdio_and_http_is_the_mcp_door(tmp_path: Path) -> None:
    call = {"server": "demo", "tool": "echo", "arguments": {"text": "gw"}}
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "stdio-host", "version": "2"},
    }
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "mcpx_call", "arguments": call},
        },
    ]
    with running_daemon(tmp_path, {"demo": _demo()}) as d:
        served = subprocess.run(
            [sys.executable, "-m", "mcpx", "serve"],
            input="".join(json.dumps(line) + "\n" for line in lines),
            cwd=d.home,
            env=d.env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        answers = [json.loads(x) for x in served.stdout.splitlines() if x.strip()]
        assert any(a.get("id") == 2 and "result" in a for a in answers), served
        with httpx.Client(base_url=d.info["url"], timeout=60) as mcp:
            headers = legacy_session(mcp, {}) | {"Accept": "application/json, text/event-stream"}
            body = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "mcpx_call", "arguments": call},
            }
            assert mcp.post("/mcp", json=body, headers=headers).status_code == 200
        with d.http() as api:
            calls = _calls(api)
        seen = {(c["door"], c["transport"], c["caller"], c["host_revision"]) for c in calls}
        assert seen == {
            ("mcp", "stdio", "stdio-host 2", "2025-06-18"),
            ("mcp", "http", "t 1", "2025-11-25"),
        }
