"""Profiles and tool filters: what each host sees and can call, on every surface.

A real daemon with four demo upstreams: ``demo`` (default profile, ``slow`` filtered
out, and a pattern with a typo), ``ops-demo`` offered as ``ops`` (only in profile
``ops``, only ``echo`` and ``now``), ``both`` (in ``ops`` and the default, only
``add``) and ``off`` (disabled).
Hosts of both eras, with and without a profile, through ``mcpx serve`` and ``/mcp``;
the CLI through ``--profile``. Every frame the daemon sent is checked strictly against
its revision's schema when the daemon stops.
"""

from __future__ import annotations

import json
import subprocess
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


def _servers() -> dict[str, Any]:
    return {
        "demo": {**_DEMO, "mcpx": {"tools": ["*"], "excludeTools": ["slow", "ech0"]}},
        "ops-demo": {
            **_DEMO,
            "mcpx": {
                "namespace": "ops",
                "profiles": ["ops"],
                "tools": ["echo", "now"],
                "description": "the operations team's copy",
            },
        },
        "both": {**_DEMO, "mcpx": {"profiles": ["ops"], "default": True, "tools": ["add"]}},
        "off": {**_DEMO, "mcpx": {"disabled": True}},
    }


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("profiles"), _servers()) as d:
        yield d


_ids = iter(range(1, 100000))


def _result(peer: StdioPeer, method: str, params: dict[str, Any] | None = None) -> Any:
    reply = peer.request(next(_ids), method, params or {}, timeout=60)
    assert "result" in reply, reply
    return reply["result"]


def _call_json(peer: StdioPeer, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = _result(peer, "tools/call", {"name": tool, "arguments": arguments})
    return dict(result)


def _searched(peer: StdioPeer) -> set[str]:
    found = _call_json(peer, "mcpx_search_tools", {})
    assert not found.get("isError"), found
    return {f"{t['server']}/{t['name']}" for t in json.loads(found["content"][0]["text"])["tools"]}


@pytest.fixture(scope="module")
def default_host(daemon: Daemon) -> Iterator[StdioPeer]:
    with stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env()) as peer:
        peer.initialize(REV)
        yield peer


@pytest.fixture(scope="module")
def ops_host(daemon: Daemon) -> Iterator[StdioPeer]:
    argv = [sys.executable, "-m", "mcpx", "serve", "--profile", "ops"]
    with stdio_peer(argv, env=daemon.env()) as peer:
        peer.initialize(REV)
        yield peer


def test_a_host_without_a_profile_sees_the_default_profile_filtered(
    default_host: StdioPeer,
) -> None:
    assert _searched(default_host) == {
        "demo/echo",
        "demo/add",
        "demo/now",
        *{f"demo/{n}" for n in _demo_tools() - {"echo", "add", "now", "slow"}},
        "both/add",
    }
    servers = _call_json(default_host, "mcpx_servers", {})
    names = [s["name"] for s in json.loads(servers["content"][0]["text"])["servers"]]
    assert names == ["both", "demo"]
    prompts = {p["name"] for p in _result(default_host, "prompts/list")["prompts"]}
    assert prompts == {"both_hello", "demo_hello"}


def _demo_tools() -> set[str]:
    with stdio_peer([sys.executable, "-m", "mcpx", "demo-server"]) as peer:
        peer.initialize(REV)
        return {t["name"] for t in _result(peer, "tools/list")["tools"]}


def test_a_host_cannot_call_outside_its_profile_or_past_a_filter(
    default_host: StdioPeer,
) -> None:
    ok = _call_json(default_host, "mcpx_call", _echo("demo"))
    assert not ok.get("isError") and "hi" in ok["content"][0]["text"]
    for server, tool, problem in [
        ("ops", "echo", "no server named 'ops'"),
        ("ops-demo", "echo", "no server named 'ops-demo'"),
        ("off", "echo", "no server named 'off'"),
        ("demo", "slow", "unknown_tool"),
        ("both", "echo", "unknown_tool"),
    ]:
        refused = _call_json(default_host, "mcpx_call", {**_echo(server), "tool": tool})
        assert refused.get("isError") is True, (server, tool, refused)
        assert problem in refused["content"][0]["text"], refused
    # A prompt of a server outside the profile is not there by its gateway name either.
    reply = default_host.request(next(_ids), "prompts/get", {"name": "ops_hello"}, timeout=60)
    assert reply["error"]["code"] == -32602, reply
    # Nor is a resource: not-found, as the revision spells it (-32002 before 2026-07-28).
    uri = "mcpx://ops/demo%3A%2F%2Freadme"
    reply = default_host.request(next(_ids), "resources/read", {"uri": uri}, timeout=60)
    assert reply["error"]["code"] == -32002, reply


def _echo(server: str) -> dict[str, Any]:
    return {"server": server, "tool": "echo", "arguments": {"text": "hi"}}


def test_a_host_of_a_profile_sees_and_calls_only_that_profile(ops_host: StdioPeer) -> None:
    assert _searched(ops_host) == {"ops/echo", "ops/now", "both/add"}
    ok = _call_json(ops_host, "mcpx_call", _echo("ops"))
    assert not ok.get("isError") and "hi" in ok["content"][0]["text"]
    refused = _call_json(ops_host, "mcpx_call", _echo("demo"))
    assert refused.get("isError") is True and "no server named 'demo'" in str(refused)
    prompts = {p["name"] for p in _result(ops_host, "prompts/list")["prompts"]}
    assert prompts == {"both_hello", "ops_hello"}


def _modern(mcp: httpx.Client, path: str, server: str, **headers: str) -> httpx.Response:
    params = {"name": "mcpx_call", "arguments": _echo(server)}
    frame = modern_request(1, "tools/call", params)
    sent = {**modern_headers("tools/call", params), **headers}
    return mcp.post(path, json=frame, headers=sent)


def test_a_2026_host_names_its_profile_by_url_or_header(daemon: Daemon) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        for path, extra in [("/mcp?profile=ops", {}), ("/mcp", {"Mcpx-Profile": "ops"})]:
            ok = _modern(mcp, path, "ops", **extra).json()["result"]
            assert not ok.get("isError"), ok
            refused = _modern(mcp, path, "demo", **extra).json()["result"]
            assert refused.get("isError") is True and "no server named 'demo'" in str(refused)
        # No profile: the default one, where ops is not.
        refused = _modern(mcp, "/mcp", "ops").json()["result"]
        assert refused.get("isError") is True and "no server named 'ops'" in str(refused)


def test_an_unknown_profile_is_refused_on_every_door(daemon: Daemon) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        answer = _modern(mcp, "/mcp?profile=nope", "demo")
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert error["code"] == -32602 and "no profile named 'nope'" in error["message"]
        assert "default, ops" in error["message"]
        init = {
            "protocolVersion": REV,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        frame = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
        answer = mcp.post("/mcp", json=frame, headers={"Mcpx-Profile": "nope"})
        assert answer.status_code == 400 and answer.json()["error"]["code"] == -32602
        assert "mcp-session-id" not in answer.headers
    with daemon.http() as api:
        answer = api.get("/v1/tools", headers={"Mcpx-Profile": "nope"})
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "unknown_profile"
        assert answer.json()["error"]["details"]["known"] == ["default", "ops"]
    listed = daemon.cli("tools", "--profile", "nope")
    assert listed.returncode == 2 and "no profile named 'nope'" in listed.stderr
    served = _serve(daemon, "--profile", "nope")
    assert served.returncode == 2 and "no profile named 'nope'" in served.stderr


def test_the_cli_sees_every_enabled_server_unless_it_names_a_profile(daemon: Daemon) -> None:
    everything = json.loads(daemon.cli("servers", "--json").stdout)["servers"]
    assert [s["name"] for s in everything] == ["both", "demo", "ops"]
    ops = next(s for s in everything if s["name"] == "ops")
    assert ops["description"] == "the operations team's copy"
    tools = json.loads(daemon.cli("tools", "--json", "--profile", "ops").stdout)["tools"]
    assert {f"{t['server']}/{t['name']}" for t in tools} == {"ops/echo", "ops/now", "both/add"}
    assert daemon.cli("call", "ops", "echo", "text=hi").returncode == 0
    refused = daemon.cli("call", "--profile", "default", "ops", "echo", "text=hi")
    assert refused.returncode == 4, refused.stderr
    filtered = daemon.cli("call", "demo", "slow")
    assert filtered.returncode == 4 and "slow" in filtered.stderr, filtered.stderr
    assert daemon.cli("describe", "demo", "slow").returncode == 4


def test_pass_through_honours_the_filters(daemon: Daemon) -> None:
    argv = [sys.executable, "-m", "mcpx", "serve", "--passthrough", "demo"]
    with stdio_peer(argv, env=daemon.env()) as peer:
        peer.initialize(REV)
        names = {t["name"] for t in _result(peer, "tools/list")["tools"]}
        assert "slow" not in names and {"echo", "add"} <= names
        reply = peer.request(next(_ids), "tools/call", {"name": "slow", "arguments": {}})
        assert reply["error"]["code"] == -32602 and "slow" in reply["error"]["message"], reply
        ok = _result(peer, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert "hi" in ok["content"][0]["text"]


def test_a_daemon_whose_mcp_profile_no_server_lists_does_not_start(daemon: Daemon) -> None:
    other = str(daemon.home / "other")
    started = daemon.cli("daemon", "--state-dir", other, "--mcp-profile", "nope", "--port", "0")
    assert started.returncode == 2 and "no profile named 'nope'" in started.stderr


def test_the_filters_are_explained(daemon: Daemon) -> None:
    daemon.cli("tools", "demo")  # listed, so that what the filters hid is known
    servers = json.loads(daemon.cli("servers", "--json").stdout)["servers"]
    demo = next(s for s in servers if s["name"] == "demo")
    assert demo["filters"]["hidden"] == ["slow"]
    notes = demo["filters"]["notes"]
    assert "excludeTools 'slow' overlaps tools '*': a tool matching both is hidden" in notes[0]
    assert any("excludeTools 'ech0' matches none of the" in n for n in notes), notes
    assert "admitted by tools, hidden by excludeTools: slow" in notes
    table = daemon.cli("servers").stdout
    assert "demo: filters hide 1 (slow)" in table and "'ech0' matches none" in table
    assert next(s for s in servers if s["name"] == "ops")["profiles"] == ["ops"]
    settings = daemon.cli("settings")
    assert settings.returncode == 0, settings.stderr
    assert "profile default: both, demo" in settings.stdout
    assert "profile ops: both, ops" in settings.stdout
    assert "off: disabled (mcpx enable off)" in settings.stdout
    profiles = json.loads(daemon.cli("settings", "--json").stdout)["profiles"]
    assert profiles == {
        "default": {"servers": ["both", "demo"]},
        "ops": {"servers": ["both", "ops"]},
    }


def test_a_search_can_be_limited_and_says_how_many_matched(daemon: Daemon) -> None:
    found = json.loads(
        daemon.cli("tools", "--search", "echo text", "--limit", "1", "--json").stdout
    )
    assert len(found["tools"]) == 1 and found["total"] >= 2  # demo's and ops' echo
    assert found["tools"][0]["name"] == "echo" and "inputSchema" in found["tools"][0]
    with daemon.http() as api:
        refused = api.get("/v1/tools", params={"limit": "0"})
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_input"


def test_serve_refuses_to_pass_through_a_server_it_does_not_have(daemon: Daemon) -> None:
    served = _serve(daemon, "--passthrough", "demo,nope")
    assert served.returncode == 2 and "--passthrough names 'nope'" in served.stderr


def test_a_prompt_takes_key_value_arguments_as_strings(daemon: Daemon) -> None:
    got = daemon.cli("prompt", "demo", "hello", "name=42", "--json")
    assert got.returncode == 0, got.stderr
    assert "42" in json.dumps(json.loads(got.stdout)["messages"])


def _serve(daemon: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    """``mcpx serve ARGS`` with an empty stdin (it must refuse before reading any)."""
    return subprocess.run(
        [sys.executable, "-m", "mcpx", "serve", *args],
        env=daemon.env(),
        cwd=daemon.home,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
