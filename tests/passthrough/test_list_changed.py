"""An upstream's tools/list_changed reaches the hosts that were promised it.

The conformance fixture (``test_trigger_tool_change``) as the pass-through upstream, once
legacy (its session notifies) and once modern (mcpx holds a listen stream on it). Hosts:
a 2026-07-28 ``subscriptions/listen`` over /mcp, and a legacy session's GET stream.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.modern import modern_headers, modern_meta, modern_request
from support.peers import FIXTURES, peer_python

META = modern_meta(client=None)
SUB_ID = "io.modelcontextprotocol/subscriptionId"


@pytest.fixture(scope="module", params=["legacy", "modern"])
def daemon(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Daemon]:
    fixture = {
        "command": str(peer_python("2.3.0")),
        "args": [str(FIXTURES / "conformance_server.py"), "--transport", "stdio"],
        "protocol": "force-initialize" if request.param == "legacy" else "force-discover",
    }
    servers = {"conformance": fixture}
    settings = {"mcp.passthrough": ["conformance"]}
    with running_daemon(tmp_path_factory.mktemp(request.param), servers, settings) as d:
        yield d


def _modern(mcp: httpx.Client, method: str, params: dict[str, Any], name: str | None = None) -> Any:
    frame = modern_request(1, method, params, META)
    return mcp.post("/mcp", json=frame, headers=modern_headers(method, name=name)).json()


def _read_events(lines: Iterator[str], got: list[dict[str, Any]], want: int) -> None:
    for line in lines:
        if line.startswith("data: "):
            got.append(json.loads(line[len("data: ") :]))
            if len(got) >= want:
                return


@pytest.mark.obligation("S-TOOL-3", "S-SUB-2", "S-SUB-3", "S-SUB-4")
def test_a_listen_stream_hears_of_tool_changes(daemon: Daemon) -> None:
    url = daemon.info["url"]
    frame = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {
            "notifications": {"toolsListChanged": True, "promptsListChanged": True},
            "_meta": META,
        },
    }
    headers = modern_headers("subscriptions/listen", accept="application/json, text/event-stream")
    got: list[dict[str, Any]] = []
    with httpx.Client(base_url=url, timeout=30) as mcp:
        # The discover answer promises tool changes (pass-through) and never prompt ones.
        caps = _modern(mcp, "server/discover", {})["result"]["capabilities"]
        assert caps["tools"]["listChanged"] is True and caps["prompts"]["listChanged"] is False
        with mcp.stream("POST", "/mcp", json=frame, headers=headers) as stream:
            lines = stream.iter_lines()
            _read_events(lines, got, 1)
            ack = got[0]
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            # Only what will be delivered: no prompts.
            assert ack["params"]["notifications"] == {"toolsListChanged": True}
            assert ack["params"]["_meta"][SUB_ID] == "listen-1"
            with httpx.Client(base_url=url, timeout=30) as other:
                done = _modern(
                    other,
                    "tools/call",
                    {"name": "test_trigger_tool_change", "arguments": {}},
                    "test_trigger_tool_change",
                )
                assert "result" in done, done
            reader = threading.Thread(target=_read_events, args=(lines, got, 2), daemon=True)
            reader.start()
            reader.join(timeout=20)
    change = got[1]
    assert change["method"] == "notifications/tools/list_changed"
    assert change["params"]["_meta"][SUB_ID] == "listen-1"


def test_a_legacy_session_hears_of_tool_changes_on_its_get_stream(daemon: Daemon) -> None:
    url = daemon.info["url"]
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    got: list[dict[str, Any]] = []
    with httpx.Client(base_url=url, timeout=30) as mcp:
        r = mcp.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        )
        assert r.json()["result"]["capabilities"]["tools"]["listChanged"] is True
        headers = {
            "Mcp-Session-Id": r.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        with mcp.stream(
            "GET", "/mcp", headers={**headers, "Accept": "text/event-stream"}
        ) as stream:
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "test_trigger_tool_change", "arguments": {}},
            }
            with httpx.Client(base_url=url, timeout=30) as other:
                assert "result" in other.post("/mcp", json=call, headers=headers).json()
            reader = threading.Thread(
                target=_read_events, args=(stream.iter_lines(), got, 1), daemon=True
            )
            reader.start()
            reader.join(timeout=20)
    assert got and got[0] == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
