"""Over ``mcpx serve`` (stdio): progress and log lines of a call, an upstream's
question put to the host on its pipe, list changes pushed — with real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.peers import StdioPeer, stdio_peer

REV = "2025-11-25"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
        "sdk": sdk_entry("1.23.3"),
    }
    with running_daemon(tmp_path_factory.mktemp("serve-relays"), servers) as d:
        yield d


def _host(daemon: Daemon) -> Any:
    return stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env())


def _call(
    peer: StdioPeer, rid: int, server: str, tool: str, arguments: dict[str, Any], **kw: Any
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": "mcpx_call",
        "arguments": {"server": server, "tool": tool, "arguments": arguments},
    }
    if "meta" in kw:
        params["_meta"] = kw.pop("meta")
    return peer.request(rid, "tools/call", params, timeout=60, **kw)


@pytest.fixture(scope="module")
def oldest_first(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # 2024-11-05 first and strict: progress without the message its schema lacks.
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    settings = {"spec.first": "2024-11-05"}
    with running_daemon(tmp_path_factory.mktemp("serve-oldest"), servers, settings) as d:
        yield d


@pytest.mark.obligation("S-PROG-1", "S-PROG-2")
@pytest.mark.parametrize("rev", ["2024-11-05", "2025-03-26", "2025-06-18", REV])
def test_progress_and_log_lines_come_on_the_pipe(
    daemon: Daemon, oldest_first: Daemon, rev: str
) -> None:
    if rev == "2024-11-05":
        daemon = oldest_first
    with _host(daemon) as peer:
        peer.initialize(rev)
        assert peer.request(1, "logging/setLevel", {"level": "info"})["result"] == {}
        reply = _call(
            peer, 2, "demo", "slow", {"seconds": 0.3, "steps": 3}, meta={"progressToken": "t"}
        )
        assert reply["result"]["content"][0]["text"].startswith("slept")
        progress = [
            n["params"] for n in peer.notifications if n["method"] == "notifications/progress"
        ]
        assert [p["progress"] for p in progress] == [1, 2, 3]
        assert {p["progressToken"] for p in progress} == {"t"}
        assert all(("message" in p) == (rev != "2024-11-05") for p in progress), progress
        logs = [n["params"] for n in peer.notifications if n["method"] == "notifications/message"]
        assert any("slept" in str(m["data"]) for m in logs)


def test_an_upstream_question_is_put_to_the_host_on_its_pipe(daemon: Daemon) -> None:
    with _host(daemon) as peer:
        peer.initialize(REV, {"elicitation": {}})

        def answer(request: dict[str, Any]) -> dict[str, Any]:
            assert request["method"] == "elicitation/create" and request["id"] < 0
            assert request["params"]["message"] == "sdk (via mcpx) asks: name?"
            return {"action": "accept", "content": {"answer": "Ada"}}

        reply = _call(peer, 3, "sdk", "ask", {"question": "name?"}, on_request=answer)
        assert reply["result"]["content"][0]["text"] == "Ada"
        assert len(peer.server_requests) == 1


def test_serve_passthrough_is_this_hosts_own(daemon: Daemon, tmp_path: Any) -> None:
    # One daemon, two hosts: only the one started with --passthrough sees the demo's
    # tools as themselves.
    argv = [sys.executable, "-m", "mcpx", "serve", "--passthrough", "demo"]
    with stdio_peer(argv, env=daemon.env()) as through, _host(daemon) as plain:
        through.initialize(REV)
        plain.initialize(REV)
        names = [t["name"] for t in through.request(1, "tools/list")["result"]["tools"]]
        assert names[:5] == ["add", "echo", "now", "readme", "slow"]
        assert names[5:] == ["mcpx_call", "mcpx_exec", "mcpx_servers", "mcpx_search_tools"]
        done = through.request(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert done["result"]["content"][0]["text"] == "hi"
        plain_names = [t["name"] for t in plain.request(1, "tools/list")["result"]["tools"]]
        assert plain_names == ["mcpx_call", "mcpx_exec", "mcpx_servers", "mcpx_search_tools"]
    # Relayed (stdin a file: nothing to hand off), the option travels the same way.
    script = tmp_path / "in.jsonl"
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": REV,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    script.write_text(json.dumps(init) + "\n" + json.dumps(listing) + "\n")
    with script.open("rb") as stdin:
        done_run = subprocess.run(
            argv, stdin=stdin, capture_output=True, env=daemon.env(), timeout=60, check=False
        )
    replies = {r["id"]: r for r in map(json.loads, done_run.stdout.decode().splitlines())}
    assert replies[1]["result"]["tools"][0]["name"] == "add"
