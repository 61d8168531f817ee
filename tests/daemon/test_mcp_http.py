"""The daemon's /mcp endpoint over real HTTP: legacy sessions, 2026-07-28, Origin, peers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.modern import MODERN, modern_headers, modern_meta, modern_request
from support.peers import peer_python
from support.schemas import FrameLog

META = modern_meta(client=None)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    with running_daemon(tmp_path_factory.mktemp("mcp"), servers) as d:
        yield d


@pytest.fixture
def mcp(daemon: Daemon) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as client:
        yield client


def _echo(text: str) -> dict[str, Any]:
    args = {"server": "demo", "tool": "echo", "arguments": {"text": text}}
    return {"name": "mcpx_call", "arguments": args}


def _text(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


@pytest.mark.obligation("S-LIFE-1", "S-HTTP-25", "S-MSG-1")
@pytest.mark.parametrize("rev", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_legacy_session_lifecycle(mcp: httpx.Client, sent_frames: FrameLog, rev: str) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": rev,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    r = mcp.post("/mcp", json=init)
    assert r.status_code == 200, r.text
    sent_frames.sent(r.json(), rev, answering="initialize")
    assert r.json()["result"]["protocolVersion"] == rev
    sid = r.headers["mcp-session-id"]
    headers = {"Mcp-Session-Id": sid}
    if rev != "2025-03-26":
        headers["MCP-Protocol-Version"] = rev
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.post("/mcp", json=note, headers=headers).status_code == 202

    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers)
    assert r.status_code == 200
    sent_frames.sent(r.json(), rev, answering="tools/list")
    assert "mcpx_call" in {t["name"] for t in r.json()["result"]["tools"]}

    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": _echo("hi")}
    r = mcp.post("/mcp", json=call, headers=headers)
    assert r.status_code == 200
    sent_frames.sent(r.json(), rev, answering="tools/call")
    assert "hi" in _text(r.json()["result"])

    assert mcp.delete("/mcp", headers=headers).status_code == 200
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 4, "method": "ping"}, headers=headers)
    assert r.status_code == 404
    sent_frames.sent(r.json(), rev)
    assert mcp.delete("/mcp", headers=headers).status_code == 404


def _modern(
    mcp: httpx.Client, method: str, params: dict[str, Any], name: str | None = None, **extra: str
) -> httpx.Response:
    # Mcp-Name only when given: a test leaves it out on purpose.
    headers = {**modern_headers(method, name=name), **extra}
    return mcp.post("/mcp", json=modern_request(7, method, params, META), headers=headers)


@pytest.mark.obligation("S-DISC-1", "S-DISC-2")
def test_modern_stateless(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    r = _modern(mcp, "server/discover", {})
    assert r.status_code == 200, r.text
    assert "mcp-session-id" not in r.headers
    sent_frames.sent(r.json(), MODERN, answering="server/discover")
    assert MODERN in r.json()["result"]["supportedVersions"]

    r = _modern(mcp, "tools/list", {})
    assert r.status_code == 200
    sent_frames.sent(r.json(), MODERN, answering="tools/list")

    r = _modern(mcp, "tools/call", _echo("modern"), name="mcpx_call")
    assert r.status_code == 200, r.text
    assert "mcp-session-id" not in r.headers
    sent_frames.sent(r.json(), MODERN, answering="tools/call")
    assert "modern" in _text(r.json()["result"])


@pytest.mark.obligation("S-HTTP-15", "S-HTTP-45", "S-HTTP-52", "S-ERR-1", "S-ERR-7")
def test_modern_errors(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    # Mcp-Name missing on tools/call.
    r = _modern(mcp, "tools/call", _echo("x"))
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32020)
    sent_frames.sent(r.json(), MODERN)

    # No _meta in the body (built by hand on purpose): invalid params.
    frame = {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}}
    r = mcp.post("/mcp", json=frame, headers=modern_headers("tools/list"))
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32602)
    sent_frames.sent(r.json(), MODERN)

    r = _modern(mcp, "initialize", {"protocolVersion": MODERN})
    assert (r.status_code, r.json()["error"]["code"]) == (404, -32601)
    sent_frames.sent(r.json(), MODERN)

    assert mcp.get("/mcp", headers={"MCP-Protocol-Version": MODERN}).status_code == 405
    assert mcp.get("/mcp").status_code == 405


def test_origin(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    r = _modern(mcp, "server/discover", {}, Origin="https://evil.example")
    assert r.status_code == 403
    assert "id" not in r.json() or r.json()["id"] is None
    assert r.json()["error"]["code"] == -32600
    r = _modern(mcp, "server/discover", {}, Origin="http://localhost:1234")
    assert r.status_code == 200
    sent_frames.sent(r.json(), MODERN, answering="server/discover")


@pytest.mark.obligation("S-HTTP-28", "S-ERR-1")
def test_unknown_session_and_bad_json(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    r = mcp.post("/mcp", json=ping, headers={"Mcp-Session-Id": "nope"})
    assert r.status_code == 404
    sent_frames.sent(r.json(), "2025-11-25")
    r = mcp.post("/mcp", json=ping)
    assert r.status_code == 400
    sent_frames.sent(r.json(), "2025-11-25")
    r = mcp.post("/mcp", content=b"{not json", headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32700)
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 1})
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32600)


@pytest.mark.obligation("S-HTTP-1", "S-HTTP-15")
def test_legacy_get_stream(mcp: httpx.Client) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}},
    }
    sid = mcp.post("/mcp", json=init).headers["mcp-session-id"]
    headers = {"Mcp-Session-Id": sid, "Accept": "text/event-stream"}
    with mcp.stream("GET", "/mcp", headers=headers) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert next(r.iter_lines()).startswith(":")
    assert mcp.delete("/mcp", headers={"Mcp-Session-Id": sid}).status_code == 200


_CLIENT_2 = """
import asyncio, sys
from mcp import Client

async def main():
    async with Client(sys.argv[1]) as c:
        tools = await c.list_tools()
        assert "mcpx_call" in [t.name for t in tools.tools], tools
        args = {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}}
        r = await c.call_tool("mcpx_call", args)
        print("".join(x.text for x in r.content if x.type == "text"))
        print(c.protocol_version)

asyncio.run(main())
"""

_CLIENT_1 = """
import asyncio, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

async def main():
    async with streamablehttp_client(sys.argv[1]) as (read, write, _):
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = await s.list_tools()
            assert "mcpx_call" in [t.name for t in tools.tools], tools
            args = {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}}
            r = await s.call_tool("mcpx_call", args)
            print("".join(x.text for x in r.content if x.type == "text"))

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("version", "script", "era"),
    [("2.3.0", _CLIENT_2, "2026-07-28"), ("1.23.3", _CLIENT_1, "")],
)
def test_official_sdk_client(daemon: Daemon, version: str, script: str, era: str) -> None:
    # 2.3.0 speaks 2026-07-28 to a server that offers it; 1.23.3 does the legacy handshake.
    done = subprocess.run(
        [str(peer_python(version)), "-c", textwrap.dedent(script), daemon.info["url"] + "/mcp"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "hi" in done.stdout
    assert era in done.stdout


def _legacy_session(mcp: httpx.Client, rev: str) -> dict[str, str]:
    params = {
        "protocolVersion": rev,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    return {"Mcp-Session-Id": r.headers["mcp-session-id"]}


@pytest.mark.obligation("S-MSG-9")
def test_batches_on_a_2025_03_26_session(mcp: httpx.Client) -> None:
    headers = _legacy_session(mcp, "2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": _echo("one")},
        {"jsonrpc": "2.0", "id": "b", "method": "ping"},
        {"jsonrpc": "2.0", "id": "c", "method": "no/such"},
        {"jsonrpc": "2.0", "id": "d"},  # not a message: its own error, the rest still run
    ]
    r = mcp.post("/mcp", json=batch, headers=headers)
    assert r.status_code == 200, r.text
    by_id = {f["id"]: f for f in r.json()}
    assert set(by_id) == {"a", "b", "c", "d"}
    assert _text(by_id["a"]["result"]) == "one"
    assert by_id["b"]["result"] == {}
    assert by_id["c"]["error"]["code"] == -32601
    assert by_id["d"]["error"]["code"] == -32600
    # Notifications only: nothing to answer.
    only = [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
    assert mcp.post("/mcp", json=only, headers=headers).status_code == 202
    # initialize may not ride in a batch.
    init = {"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {}}
    assert mcp.post("/mcp", json=[init], headers=headers).status_code == 400


@pytest.mark.parametrize("rev", ["2025-06-18", "2025-11-25"])
def test_batches_are_refused_after_2025_03_26(mcp: httpx.Client, rev: str) -> None:
    headers = {**_legacy_session(mcp, rev), "MCP-Protocol-Version": rev}
    r = mcp.post("/mcp", json=[{"jsonrpc": "2.0", "id": 1, "method": "ping"}], headers=headers)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32600
