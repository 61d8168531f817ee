"""Over ``mcpx serve`` (stdio): progress and log lines of a call, an upstream's
question put to the host on its pipe, list changes pushed — with real processes."""

from __future__ import annotations

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


def test_progress_and_log_lines_come_on_the_pipe(daemon: Daemon) -> None:
    with _host(daemon) as peer:
        peer.initialize(REV)
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
