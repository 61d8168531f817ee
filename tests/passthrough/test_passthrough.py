"""Pass-through: real upstreams offered as themselves through a real daemon.

The host is a raw JSON-lines client of ``mcpx serve``; the same requests are sent to the
upstream directly, and what mcpx relays must be what the upstream said. Every frame the
daemon sent is checked strictly against the host's revision when the daemon stops.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.peers import StdioPeer, everything_server_command, stdio_peer, time_server_command

REV = "2025-11-25"
GATEWAY = ["mcpx_call", "mcpx_exec", "mcpx_servers", "mcpx_search_tools"]


def _entry(argv: list[str]) -> dict[str, Any]:
    return {"command": argv[0], "args": argv[1:]}


def _servers() -> dict[str, Any]:
    return {
        "everything": _entry(everything_server_command("stdio")),
        "time": _entry(time_server_command()),
        "fixture": sdk_entry("1.23.3"),
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
    }


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    settings = {"mcp.passthrough": ["everything", "time"]}
    with running_daemon(tmp_path_factory.mktemp("through"), _servers(), settings) as d:
        yield d


@pytest.fixture(scope="module")
def host(daemon: Daemon) -> Iterator[StdioPeer]:
    with stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env()) as peer:
        caps = peer.initialize(REV)["capabilities"]
        # S-TOOL-2: listChanged is promised only here, where upstream lists are relayed.
        assert caps["tools"]["listChanged"] is True
        yield peer


@pytest.fixture(scope="module")
def everything() -> Iterator[StdioPeer]:
    with stdio_peer(everything_server_command("stdio")) as peer:
        # Declared as mcpx declares upstream: it can always answer (the broker at least),
        # and server-everything lists its asking tools only to such a client.
        peer.initialize(REV, {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}})
        yield peer


_ids = iter(range(1000, 100000))


def _ask(peer: StdioPeer, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return peer.request(next(_ids), method, params or {}, timeout=60)


def _result(peer: StdioPeer, method: str, params: dict[str, Any] | None = None) -> Any:
    reply = _ask(peer, method, params)
    assert "result" in reply, reply
    return reply["result"]


@pytest.mark.obligation("S-TOOL-2")
def test_tools_are_the_upstreams_own_merged_then_the_gateways(
    host: StdioPeer, everything: StdioPeer
) -> None:
    listed = _result(host, "tools/list")["tools"]
    names = [t["name"] for t in listed]
    direct = {t["name"]: t for t in _result(everything, "tools/list")["tools"]}
    assert {"get_current_time", "convert_time"} <= set(names)
    upstream = names[: -len(GATEWAY)]
    assert upstream == sorted(upstream)  # theirs first, by name
    assert names[-len(GATEWAY) :] == GATEWAY
    assert set(upstream) == set(direct) | {"get_current_time", "convert_time"}
    for tool in listed:
        if tool["name"] in direct:  # every field as the upstream listed it
            assert tool == direct[tool["name"]]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("get-tiny-image", {}),
        ("get-resource-links", {"count": 2}),
        ("get-resource-reference", {"resourceType": "Blob", "resourceId": 2}),
        ("get-structured-content", {"location": "Chicago"}),
        ("get-annotated-message", {"messageType": "error", "includeImage": True}),
        ("get-sum", {"a": 2, "b": "x"}),  # bad arguments: the upstream's own answer
    ],
)
def test_call_results_are_verbatim(
    host: StdioPeer, everything: StdioPeer, tool: str, arguments: dict[str, Any]
) -> None:
    params = {"name": tool, "arguments": arguments}
    assert (
        _ask(host, "tools/call", params)["result"]
        == _ask(everything, "tools/call", params)["result"]
    )


def test_an_upstream_error_is_relayed_as_that_error(host: StdioPeer, everything: StdioPeer) -> None:
    # An unlisted name is forwarded (to the first pass-through server): it says no.
    params = {"name": "no-such-tool", "arguments": {}}
    via, direct = _ask(host, "tools/call", params), _ask(everything, "tools/call", params)
    assert "error" in via or via["result"].get("isError"), via
    assert via.get("error", {}).get("code") == direct.get("error", {}).get("code")
    # The second server's tool reaches the second server.
    done = _result(
        host, "tools/call", {"name": "get_current_time", "arguments": {"timezone": "UTC"}}
    )
    assert "UTC" in done["content"][0]["text"]


def test_prompts_and_resources_keep_their_own_names(host: StdioPeer, everything: StdioPeer) -> None:
    prompts = [p["name"] for p in _result(host, "prompts/list")["prompts"]]
    assert "simple-prompt" in prompts and "args-prompt" in prompts
    assert "fixture_greet" in prompts  # other servers stay behind the gateway prefix
    params = {"name": "args-prompt", "arguments": {"city": "Paris"}}
    assert _result(host, "prompts/get", params) == _result(everything, "prompts/get", params)

    uris = [r["uri"] for r in _result(host, "resources/list")["resources"]]
    own = [u for u in uris if not u.startswith("mcpx://")]
    assert own and all(u.startswith("demo://resource/") for u in own)
    assert "mcpx://demo/demo%3A%2F%2Freadme" in uris
    read = {"uri": own[0]}
    assert _result(host, "resources/read", read) == _result(everything, "resources/read", read)
    # A template of the pass-through server, expanded: routed to it by the template.
    dynamic = {"uri": "demo://resource/dynamic/text/3"}
    assert _result(host, "resources/read", dynamic) == _result(
        everything, "resources/read", dynamic
    )
    # An mcpx:// URI still reaches every other server.
    readme = _result(host, "resources/read", {"uri": "mcpx://demo/demo%3A%2F%2Freadme"})
    assert "mcpx" in readme["contents"][0]["text"]


def test_completion_refs_use_the_upstreams_own_names(
    host: StdioPeer, everything: StdioPeer
) -> None:
    params = {
        "ref": {"type": "ref/prompt", "name": "completable-prompt"},
        "argument": {"name": "department", "value": "E"},
    }
    assert _result(host, "completion/complete", params) == _result(
        everything, "completion/complete", params
    )


def test_a_name_two_upstreams_offer_is_refused(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Both the SDK fixture and server-everything have "echo".
    settings = {"mcp.passthrough": ["fixture", "everything"]}
    with (
        running_daemon(tmp_path_factory.mktemp("clash"), _servers(), settings) as daemon,
        stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env()) as peer,
    ):
        peer.initialize(REV)
        reply = _ask(peer, "tools/list")
        assert reply["error"]["code"] == -32603
        assert reply["error"]["data"] == {"name": "echo", "servers": ["fixture", "everything"]}
        assert "fixture" in reply["error"]["message"] and "everything" in reply["error"]["message"]
        # The gateway tools still work through /v1 and the CLI.
        done = daemon.cli("call", "demo", "echo", "text=still here")
        assert done.returncode == 0 and "still here" in done.stdout


def test_an_unknown_passthrough_name_stops_the_daemon(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    settings = {"mcp.passthrough": ["nope"]}
    tmp = tmp_path_factory.mktemp("unknown")
    with (
        pytest.raises(RuntimeError, match="exited with status 2"),
        running_daemon(tmp, _servers(), settings),
    ):
        pass
