"""``mcpx serve``: a real daemon, the shim as a real process, raw lines and real SDK hosts."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from support.daemon import Daemon, running_daemon
from support.peers import peer_python
from support.schemas import FrameLog

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}
ECHO = {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    with running_daemon(tmp_path_factory.mktemp("serve"), servers) as d:
        yield d


def _serve(daemon: Daemon, lines: list[dict[str, Any] | str]) -> dict[Any, dict[str, Any]]:
    """Run ``mcpx serve`` with ``lines`` on stdin (then EOF); its answers by id."""
    data = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    done = subprocess.run(
        [sys.executable, "-m", "mcpx", "serve"],
        input=data.encode(),
        cwd=daemon.home,
        env=daemon.env(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    frames = [json.loads(line) for line in done.stdout.decode().splitlines()]
    return {f.get("id"): f for f in frames}


def _request(id_: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def _text(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def test_raw_legacy_session(daemon: Daemon, sent_frames: FrameLog) -> None:
    rev = "2025-06-18"
    init = {"protocolVersion": rev, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    answers = _serve(
        daemon,
        [
            _request(1, "initialize", init),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            _request(2, "tools/list"),
            _request(3, "tools/call", {"name": "mcpx_call", "arguments": ECHO}),
            "not json",
        ],
    )
    assert answers[1]["result"]["protocolVersion"] == rev
    for id_, method in ((1, "initialize"), (2, "tools/list"), (3, "tools/call")):
        sent_frames.sent(answers[id_], rev, sender="server", answering=method)
    assert "mcpx_call" in {t["name"] for t in answers[2]["result"]["tools"]}
    assert _text(answers[3]["result"]) == "hi"
    # The bad line is answered with a parse error (no id), and the shim carried on.
    assert answers[None]["error"]["code"] == -32700


def test_raw_modern_requests(daemon: Daemon, sent_frames: FrameLog) -> None:
    answers = _serve(
        daemon,
        [
            _request(1, "server/discover", {"_meta": META}),
            _request(2, "tools/call", {"name": "mcpx_call", "arguments": ECHO, "_meta": META}),
        ],
    )
    sent_frames.sent(answers[1], MODERN, sender="server", answering="server/discover")
    sent_frames.sent(answers[2], MODERN, sender="server", answering="tools/call")
    assert MODERN in answers[1]["result"]["supportedVersions"]
    assert _text(answers[2]["result"]) == "hi"


def test_http_transport_names_the_url(daemon: Daemon) -> None:
    done = daemon.cli("serve", "--transport", "http", timeout=60)
    assert done.returncode != 0
    assert daemon.info["url"] + "/mcp" in done.stderr


_HOST = """
import asyncio, json, sys
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

async def main():
    params = StdioServerParameters(
        command=sys.argv[1], args=["-m", "mcpx", "serve"], env=json.loads(sys.argv[2])
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = await s.list_tools()
            assert "mcpx_call" in [t.name for t in tools.tools], tools
            args = {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}}
            r = await s.call_tool("mcpx_call", args)
            print("".join(x.text for x in r.content if x.type == "text"))

asyncio.run(main())
"""


@pytest.mark.parametrize("version", ["1.2.1", "2.3.0"])
def test_official_sdk_host(daemon: Daemon, version: str) -> None:
    # The SDK spawns `mcpx serve` as its stdio server, as an editor or agent would.
    env = {k: v for k, v in daemon.env().items() if k.startswith("MCPX_") or k == "PATH"}
    done = subprocess.run(
        [str(peer_python(version)), "-c", textwrap.dedent(_HOST), sys.executable, json.dumps(env)],
        cwd=daemon.home,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "hi" in done.stdout


def test_channel_socket_and_batches(daemon: Daemon) -> None:
    # The daemon's side directly: a 0600 socket, and a 2025-03-26 batch answered as an array.
    path = daemon.state / "mcpx-stdio.sock"
    assert path.stat().st_mode & 0o777 == 0o600
    init = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t"}}
    batch = [_request(2, "ping"), _request(3, "tools/list"), {"jsonrpc": "2.0", "method": "x"}]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(path))
        lines = [json.dumps(_request(1, "initialize", init)), json.dumps(batch)]
        sock.sendall("".join(line + "\n" for line in lines).encode())
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    first, second = (json.loads(line) for line in data.decode().splitlines())
    assert first["result"]["protocolVersion"] == "2025-03-26"
    assert sorted(f["id"] for f in second) == [2, 3]


def test_a_cancelled_request_gets_no_answer(daemon: Daemon, sent_frames: FrameLog) -> None:
    """notifications/cancelled withdraws a running request (and its upstream call):
    no answer is sent for it; the others are answered."""
    slow = {"server": "demo", "tool": "slow", "arguments": {"seconds": 20, "steps": 20}}
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    answers = _serve(
        daemon,
        [
            _request(1, "initialize", init),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            _request(2, "tools/call", {"name": "mcpx_call", "arguments": slow}),
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}},
            _request(3, "tools/call", {"name": "mcpx_call", "arguments": ECHO}),
        ],
    )
    assert 2 not in answers
    assert _text(answers[3]["result"]) == "hi"
    sent_frames.sent(answers[1], "2025-06-18", answering="initialize")
    sent_frames.sent(answers[3], "2025-06-18", answering="tools/call")
