"""``mcp.surface``: what tools/list offers MCP hosts, lean and full, in both eras.

Real daemons, each with the demo upstream twice (``demo``, and ``ops`` in profile
``ops`` only, filtered to ``echo``); hosts are raw JSON-lines clients of ``mcpx serve``
and 2026-07-28 requests on ``/mcp``. Every frame the daemons sent is checked strictly
against its revision's schema when they stop.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.modern import modern_headers, modern_request
from support.peers import StdioPeer, stdio_peer

REV = "2025-11-25"
_DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
_SERVERS = {
    "demo": _DEMO,
    "ops": {**_DEMO, "mcpx": {"profiles": ["ops"], "tools": ["echo"]}},
}
_ids = iter(range(1, 100000))


def _daemon(tmp: pytest.TempPathFactory, surface: str) -> Iterator[Daemon]:
    with running_daemon(tmp.mktemp(surface), _SERVERS, {"mcp.surface": surface}) as d:
        yield d


@pytest.fixture(scope="module")
def lean(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    yield from _daemon(tmp_path_factory, "lean")


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    yield from _daemon(tmp_path_factory, "full")


@pytest.fixture
def host(request: pytest.FixtureRequest) -> Iterator[tuple[StdioPeer, dict[str, Any]]]:
    daemon, *extra = request.param
    d: Daemon = request.getfixturevalue(daemon)
    with stdio_peer([sys.executable, "-m", "mcpx", "serve", *extra], env=d.env()) as peer:
        yield peer, peer.initialize(REV)


def _result(peer: StdioPeer, method: str, params: dict[str, Any] | None = None) -> Any:
    reply = peer.request(next(_ids), method, params or {}, timeout=60)
    assert "result" in reply, reply
    return reply["result"]


def _names(peer: StdioPeer) -> list[str]:
    return [t["name"] for t in _result(peer, "tools/list")["tools"]]


@pytest.mark.parametrize("host", [("lean",)], indirect=True)
def test_lean_offers_search_describe_and_call_and_says_how(
    host: tuple[StdioPeer, dict[str, Any]],
) -> None:
    peer, init = host
    assert _names(peer) == ["mcpx_search_tools", "mcpx_describe", "mcpx_call"]
    assert "mcpx_search_tools" in init["instructions"] and "mcpx_describe" in init["instructions"]
    found = _result(
        peer, "tools/call", {"name": "mcpx_search_tools", "arguments": {"search": "echo"}}
    )
    first = json.loads(found["content"][0]["text"])["tools"][0]
    assert (first["server"], first["name"]) == ("demo", "echo") and "inputSchema" in first
    described = _result(
        peer,
        "tools/call",
        {"name": "mcpx_describe", "arguments": {"server": "demo", "tool": "add"}},
    )
    assert not described.get("isError") and described["structuredContent"]["name"] == "add"
    assert "inputSchema" in described["structuredContent"]
    called = _result(
        peer,
        "tools/call",
        {
            "name": "mcpx_call",
            "arguments": {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}},
        },
    )
    assert "hi" in called["content"][0]["text"]
    # What the mode does not list cannot be called either.
    reply = peer.request(next(_ids), "tools/call", {"name": "mcpx_servers", "arguments": {}})
    assert reply["error"]["code"] == -32602, reply


@pytest.mark.parametrize("host", [("full",)], indirect=True)
def test_full_lists_every_tool_in_reach_prefixed_and_calls_it_by_that_name(
    host: tuple[StdioPeer, dict[str, Any]],
) -> None:
    peer, init = host
    assert init["capabilities"]["tools"]["listChanged"] is True
    names = _names(peer)
    assert {"demo_echo", "demo_add", "demo_now"} <= set(names)
    assert not [n for n in names if n.startswith("ops_")]  # not in the default profile
    assert names[-5:] == [
        "mcpx_call",
        "mcpx_exec",
        "mcpx_servers",
        "mcpx_search_tools",
        "mcpx_describe",
    ]
    called = _result(peer, "tools/call", {"name": "demo_echo", "arguments": {"text": "hi"}})
    assert not called.get("isError") and "hi" in called["content"][0]["text"]
    reply = peer.request(next(_ids), "tools/call", {"name": "ops_echo", "arguments": {}})
    assert reply["error"]["code"] == -32602, reply


@pytest.mark.parametrize("host", [("full", "--profile", "ops")], indirect=True)
def test_full_under_a_profile_lists_that_profile_filtered(
    host: tuple[StdioPeer, dict[str, Any]],
) -> None:
    peer, _ = host
    names = _names(peer)
    assert [n for n in names if not n.startswith("mcpx_")] == ["ops_echo"]
    called = _result(peer, "tools/call", {"name": "ops_echo", "arguments": {"text": "hi"}})
    assert "hi" in called["content"][0]["text"]
    reply = peer.request(
        next(_ids), "tools/call", {"name": "ops_add", "arguments": {"a": 1, "b": 2}}
    )
    assert reply["error"]["code"] == -32602 and "add" in reply["error"]["message"], reply


def test_a_2026_host_gets_the_same_surface(full: Daemon, lean: Daemon) -> None:
    for daemon, expected in [(full, "demo_echo"), (lean, "mcpx_describe")]:
        with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
            listed = mcp.post(
                "/mcp", json=modern_request(1, "tools/list"), headers=modern_headers("tools/list")
            )
            assert expected in [t["name"] for t in listed.json()["result"]["tools"]]
    params = {"name": "demo_echo", "arguments": {"text": "hi"}}
    with httpx.Client(base_url=full.info["url"], timeout=60) as mcp:
        called = mcp.post(
            "/mcp",
            json=modern_request(2, "tools/call", params),
            headers=modern_headers("tools/call", params),
        )
        assert "hi" in called.json()["result"]["content"][0]["text"]
