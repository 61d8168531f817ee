"""The real peers are installed and answer; our fixture servers do what they say.

Real processes, raw JSON-RPC (no MCP client library), bounded timeouts. Needs
``scripts/peers.sh`` to have run: a missing peer fails with that advice, never skips.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from support.modern import PROTOCOL_VERSION, modern_headers, modern_meta
from support.peers import (
    MODERN_REVISION,
    PEER_REVISIONS,
    PEER_VERSIONS,
    SDK_SERVER,
    SDK_TRANSPORTS,
    PeerFailed,
    StreamableSession,
    bad_server_command,
    conformance_command,
    everything_server_command,
    everything_server_env,
    free_port,
    listen_addresses,
    node,
    peer_python,
    post,
    running_server,
    sdk_server_command,
    sse_session,
    stdio_peer,
    time_server_command,
)
from support.schemas import errors as schema_errors
from support.waiting import wait_until

LEGACY_REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
BASE_TOOLS = {"echo", "add", "slow", "fail", "sample", "roots", "log"}
# ask elicits: elicitation arrived in 2025-06-18.
ELICITING = {"1.12.4", "1.23.3", "2.3.0"}
CLIENT_CAPABILITIES = {"sampling": {}, "roots": {"listChanged": True}, "elicitation": {}}
RUN_TIMEOUT = 60


def fixture_tools(version: str) -> set[str]:
    return BASE_TOOLS | ({"ask"} if version in ELICITING else set())


def tool_names(reply: dict[str, Any]) -> set[str]:
    assert "result" in reply, reply
    return {tool["name"] for tool in reply["result"]["tools"]}


def text_of(reply: dict[str, Any]) -> str:
    assert "result" in reply, reply
    return "".join(block.get("text", "") for block in reply["result"]["content"])


def run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=True)
    return done.stdout.strip()


SDK_CASES = [(v, t) for v in PEER_VERSIONS for t in SDK_TRANSPORTS[v]]


# --- the installs -----------------------------------------------------------------------


@pytest.mark.parametrize("version", PEER_VERSIONS)
def test_each_peer_venv_holds_its_release(version: str) -> None:
    code = "import importlib.metadata as m, mcp.types as t; print(m.version('mcp'))"
    assert run([str(peer_python(version)), "-c", code]) == version


def test_node_is_24_and_conformance_is_pinned() -> None:
    assert run([str(node()), "--version"]) == "v24.22.3"
    assert run([*conformance_command(), "--version"]) == "0.2.0-alpha.12"


# --- sdk_server.py on each release and transport: tools/list ----------------------------


@pytest.mark.parametrize(("version", "transport"), SDK_CASES)
def test_sdk_server_lists_its_tools(version: str, transport: str) -> None:
    revision = PEER_REVISIONS[version]
    if transport == "stdio":
        with stdio_peer(sdk_server_command(version, "stdio")) as peer:
            result = peer.initialize(revision)
            listed = peer.request(1, "tools/list")
    else:
        port = free_port()
        with running_server(sdk_server_command(version, transport, port), port=port):
            assert listen_addresses(port) == {"127.0.0.1"}
            if transport == "sse":
                with sse_session(f"http://127.0.0.1:{port}/") as sse:
                    result = sse.initialize(revision)
                    listed = sse.request(1, "tools/list")
            else:
                session = StreamableSession(f"http://127.0.0.1:{port}/mcp")
                result = session.initialize(revision)
                assert session.session_id, "a stateful server names its session"
                listed = session.request(1, "tools/list")
    assert result["protocolVersion"] == revision
    assert result["serverInfo"]["name"] == "mcpx-fixture"
    assert tool_names(listed) == fixture_tools(version)


def test_sdk_server_refuses_a_transport_its_release_lacks() -> None:
    argv = [str(peer_python("1.2.1")), str(SDK_SERVER), "--transport", "streamable-http"]
    done = subprocess.run(
        [*argv, "--port", "1"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 2
    assert "has no streamable-http transport" in done.stderr


# --- mcp 2.3.0: the 2026-07-28 era on the same server -----------------------------------


def assert_discovers_modern(reply: dict[str, Any]) -> None:
    assert "result" in reply, reply
    assert MODERN_REVISION in reply["result"]["supportedVersions"]
    assert reply["result"]["resultType"] == "complete"
    assert schema_errors(reply["result"], MODERN_REVISION, "DiscoverResult") == []


def test_sdk_server_2_3_discovers_modern_over_stdio() -> None:
    with stdio_peer(sdk_server_command("2.3.0", "stdio")) as peer:
        assert_discovers_modern(peer.request(1, "server/discover", {"_meta": modern_meta()}))
        listed = peer.request(2, "tools/list", {"_meta": modern_meta()})
    assert tool_names(listed) == fixture_tools("2.3.0")


def test_sdk_server_2_3_serves_both_eras_on_one_http_endpoint() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running_server(sdk_server_command("2.3.0", "streamable-http", port), port=port):
        discover = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "server/discover",
            "params": {"_meta": modern_meta()},
        }
        reply = post(url, discover, headers=modern_headers("server/discover"))
        assert reply.status == 200
        assert "mcp-session-id" not in reply.headers, "2026-07-28 is stateless"
        assert_discovers_modern(reply.response(1))
        listing = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/list",
            "params": {"_meta": modern_meta()},
        }
        listed = post(url, listing, headers=modern_headers("tools/list")).response(2)
        assert tool_names(listed) == fixture_tools("2.3.0")
        # The legacy handshake, on the same endpoint of the same process.
        session = StreamableSession(url)
        assert session.initialize("2025-11-25")["protocolVersion"] == "2025-11-25"
        assert tool_names(session.request(3, "tools/list")) == fixture_tools("2.3.0")


# --- what sdk_server.py's tools do, on each release (stdio) -----------------------------


def answer_server_request(request: dict[str, Any]) -> dict[str, Any]:
    """A client's answers: sampling, roots, elicitation."""
    method = request["method"]
    if method == "sampling/createMessage":
        prompt = request["params"]["messages"][0]["content"]["text"]
        return {
            "role": "assistant",
            "content": {"type": "text", "text": f"sampled: {prompt}"},
            "model": "test-model",
            "stopReason": "endTurn",
        }
    if method == "roots/list":
        return {"roots": [{"uri": "file:///tmp/root", "name": "root"}]}
    if method == "elicitation/create":
        return {"action": "accept", "content": {"answer": "forty-two"}}
    raise AssertionError(f"unexpected server request {request}")


def call(session: Any, request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    reply: dict[str, Any] = session.request(
        request_id, "tools/call", params, on_request=answer_server_request
    )
    return reply


def tour(session: Any, version: str, *, roots: bool = True) -> None:
    """Every tool, the prompt and the resources of sdk_server.py, on an initialized session
    (a StdioPeer or a StreamableSession: both collect notifications and server requests)."""
    assert text_of(call(session, 1, "echo", text="hi")) == "hi"
    assert text_of(call(session, 2, "add", a=2, b=3)) == "5"
    failed = call(session, 3, "fail")
    assert failed["result"]["isError"] is True
    assert "fixture failure" in text_of(failed)

    slow = {"name": "slow", "arguments": {"seconds": 0.3}, "_meta": {"progressToken": "p"}}
    assert text_of(session.request(4, "tools/call", slow)) == "slept 0.3"
    progress = [n["params"] for n in session.notifications if n["method"].endswith("progress")]
    assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [
        ("p", 1, 3),
        ("p", 2, 3),
        ("p", 3, 3),
    ]

    assert text_of(call(session, 5, "log", message="note this")) == "logged"
    logged = [n["params"] for n in session.notifications if n["method"] == "notifications/message"]
    assert [(p["level"], p["data"]) for p in logged] == [("info", "note this")]

    assert text_of(call(session, 6, "sample", prompt="a poem")) == "sampled: a poem"
    assert session.server_requests[-1]["method"] == "sampling/createMessage"
    if roots:
        listed = json.loads(text_of(call(session, 7, "roots")))
        assert listed == [{"uri": "file:///tmp/root", "name": "root"}]
        assert session.server_requests[-1]["method"] == "roots/list"
    if version in ELICITING:
        assert text_of(call(session, 8, "ask", question="why?")) == "forty-two"
        assert session.server_requests[-1]["method"] == "elicitation/create"
        assert session.server_requests[-1]["params"]["message"] == "why?"

    greeting = session.request(9, "prompts/get", {"name": "greet", "arguments": {"name": "Ada"}})
    assert greeting["result"]["messages"][0]["content"]["text"] == "Hello, Ada!"
    for request_id, uri, text in (
        (10, "fixture://static", "static content"),
        (11, "fixture://item/7", "item 7"),
    ):
        read = session.request(request_id, "resources/read", {"uri": uri})
        assert read["result"]["contents"][0]["text"] == text
    templates = session.request(12, "resources/templates/list")["result"]["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["fixture://item/{id}"]


@pytest.mark.parametrize("version", PEER_VERSIONS)
def test_sdk_server_tools_prompt_and_resources_over_stdio(version: str) -> None:
    with stdio_peer(sdk_server_command(version, "stdio")) as peer:
        peer.initialize(PEER_REVISIONS[version], CLIENT_CAPABILITIES)
        tour(peer, version)


STREAMABLE = [v for v in PEER_VERSIONS if "streamable-http" in SDK_TRANSPORTS[v]]


@pytest.mark.parametrize("version", STREAMABLE)
def test_sdk_server_tools_prompt_and_resources_over_streamable_http(version: str) -> None:
    """Progress, logs, sampling and elicitation ride the POST's own SSE stream.

    roots/list is left out on 1.x: ServerSession.list_roots() takes no related request,
    so it travels on the standalone GET stream, which this raw client does not open.
    """
    port = free_port()
    with running_server(sdk_server_command(version, "streamable-http", port), port=port):
        session = StreamableSession(f"http://127.0.0.1:{port}/mcp")
        session.initialize(PEER_REVISIONS[version], CLIENT_CAPABILITIES)
        tour(session, version, roots=version == "2.3.0")


def test_sdk_server_2_3_asks_by_input_required_at_2026() -> None:
    meta = modern_meta()
    meta["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {}}
    params: dict[str, Any] = {"name": "ask", "arguments": {"question": "why?"}, "_meta": meta}
    with stdio_peer(sdk_server_command("2.3.0", "stdio")) as peer:
        first = peer.request(1, "tools/call", params)["result"]
        assert first["resultType"] == "input_required"
        ((key, question),) = first["inputRequests"].items()
        assert question["method"] == "elicitation/create"
        assert question["params"]["message"] == "why?"
        retry = {
            **params,
            "inputResponses": {key: {"action": "accept", "content": {"answer": "because"}}},
            "requestState": first["requestState"],
        }
        final = peer.request(2, "tools/call", retry)
    assert final["result"]["resultType"] == "complete"
    assert text_of(final) == "because"
    assert peer.server_requests == [], "no server-to-client request at 2026-07-28"


# --- other real peers -------------------------------------------------------------------


def test_time_server_lists_its_tools_over_stdio() -> None:
    with stdio_peer(time_server_command()) as peer:
        peer.initialize("2025-11-25")
        assert {"get_current_time", "convert_time"} <= tool_names(peer.request(1, "tools/list"))


def test_everything_server_lists_tools_over_stdio() -> None:
    with stdio_peer(everything_server_command("stdio")) as peer:
        result = peer.initialize("2025-11-25")
        listed = tool_names(peer.request(1, "tools/list"))
    assert result["protocolVersion"] == "2025-11-25"
    assert {"echo", "get-sum"} <= listed


def test_everything_server_lists_tools_over_streamable_http_on_loopback_only() -> None:
    port = free_port()
    argv = everything_server_command("streamableHttp")
    with running_server(argv, port=port, env=everything_server_env(port)):
        assert listen_addresses(port) == {"127.0.0.1"}
        session = StreamableSession(f"http://127.0.0.1:{port}/mcp")
        assert session.initialize("2025-11-25")["protocolVersion"] == "2025-11-25"
        assert session.session_id
        assert {"echo", "get-sum"} <= tool_names(session.request(1, "tools/list"))


# --- the helpers' own promises ----------------------------------------------------------


def alive(pid: int) -> bool:
    """Is the process there and not a zombie? (PID 1 of a container may never reap.)"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_running_server_reports_an_early_exit_with_its_output() -> None:
    argv = [sys.executable, "-c", "import sys; sys.stderr.write('no can do'); sys.exit(4)"]
    with (
        pytest.raises(PeerFailed, match=r"(?s)exited with 4.*no can do"),
        running_server(argv, port=free_port()),
    ):
        pass


def test_running_server_times_out_and_ends_the_whole_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = (
        "import pathlib, subprocess, time\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    with (
        pytest.raises(PeerFailed, match="not listening"),
        running_server([sys.executable, "-c", script], port=free_port(), ready_timeout=2),
    ):
        pass
    child = int(pid_file.read_text())
    wait_until(lambda: not alive(child), timeout=5, message="the server's own child ending")


def test_a_missing_peer_says_to_run_the_script(monkeypatch: pytest.MonkeyPatch) -> None:
    from support import peers

    monkeypatch.setattr(peers, "PEERS", peers.PEERS / "nowhere")
    with pytest.raises(peers.PeersMissing, match=r"run scripts/peers\.sh"):
        peer_python("1.2.1")


# --- bad_server.py: one misbehaviour per mode -------------------------------------------


def test_bad_legacy_is_a_well_behaved_legacy_server() -> None:
    with stdio_peer(bad_server_command("legacy")) as peer:
        discover = peer.request(1, "server/discover", {"_meta": modern_meta()})
        assert discover["error"]["code"] == -32601
        for revision in LEGACY_REVISIONS:
            assert peer.initialize(revision)["protocolVersion"] == revision
        assert peer.initialize("2099-01-01")["protocolVersion"] == "2025-11-25"
        init = peer.initialize("2025-06-18")
        assert schema_errors(init, "2025-06-18", "InitializeResult") == []
        assert tool_names(peer.request(2, "tools/list")) == {"echo"}
        assert text_of(call(peer, 3, "echo", text="hi")) == "hi"


def test_bad_exit_writes_boom_and_exits_3_on_a_call() -> None:
    with stdio_peer(bad_server_command("exit")) as peer:
        peer.initialize("2025-11-25")
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}})
        assert peer.wait() == 3
        assert peer.recv_line() is None
        assert peer.stderr().strip() == "boom"


def test_bad_hang_never_answers_the_call_but_still_reads() -> None:
    with stdio_peer(bad_server_command("hang")) as peer:
        peer.initialize("2025-11-25")
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}})
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert peer.recv() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        with pytest.raises(PeerFailed, match="no line"):
            peer.recv_line(timeout=0.3)


def test_bad_invalid_json_writes_a_broken_line() -> None:
    with stdio_peer(bad_server_command("invalid-json")) as peer:
        peer.initialize("2025-11-25")
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}})
        assert peer.recv_line() == b"{not json\n"


def test_bad_unknown_id_answers_the_wrong_id_only() -> None:
    with stdio_peer(bad_server_command("unknown-id")) as peer:
        peer.initialize("2025-11-25")
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}})
        assert peer.recv()["id"] == 99999
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert peer.recv()["id"] == 2


def test_bad_oversize_answers_with_one_70_mib_line() -> None:
    with stdio_peer(bad_server_command("oversize")) as peer:
        peer.initialize("2025-11-25")
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}})
        line = peer.recv_line(timeout=30)
        assert line is not None
        assert len(line) == 70 * 1024 * 1024 + 1
        assert json.loads(line)["id"] == 1


def test_bad_stderr_flood_writes_50_mib_then_answers() -> None:
    with stdio_peer(bad_server_command("stderr-flood")) as peer:
        peer.initialize("2025-11-25")
        assert text_of(call(peer, 1, "echo", text="still here")) == "still here"
        assert peer.stderr_size() >= 50 * 1024 * 1024 - 65536


def test_bad_exit_at_start_exits_1_before_reading() -> None:
    with stdio_peer(bad_server_command("exit-at-start")) as peer:
        assert peer.wait() == 1
        assert peer.recv_line() is None


def test_bad_exit_on_discover_exits_and_a_restart_connects_legacy() -> None:
    with stdio_peer(bad_server_command("exit-on-discover")) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}})
        assert peer.wait() == 1
    with stdio_peer(bad_server_command("exit-on-discover")) as peer:
        assert peer.initialize("2025-11-25")["protocolVersion"] == "2025-11-25"
        assert text_of(call(peer, 1, "echo", text="legacy")) == "legacy"


def test_bad_slow_discover_answers_nothing_until_the_delay() -> None:
    delay = 0.5
    with stdio_peer(bad_server_command("slow-discover", delay=delay)) as peer:
        started = time.monotonic()
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}})
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        first = peer.recv(timeout=10)
        assert time.monotonic() - started >= delay
        assert first["id"] == 1
        assert first["result"]["supportedVersions"] == [MODERN_REVISION]
        assert schema_errors(first["result"], MODERN_REVISION, "DiscoverResult") == []
        assert peer.recv()["id"] == 2


def test_bad_modern_is_a_minimal_2026_server() -> None:
    meta = {"_meta": modern_meta()}
    with stdio_peer(bad_server_command("modern")) as peer:
        discover = peer.request(1, "server/discover", meta)["result"]
        assert discover == {
            "resultType": "complete",
            "supportedVersions": [MODERN_REVISION],
            "capabilities": {"tools": {}},
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bad", "version": "1"}},
        }
        assert schema_errors(discover, MODERN_REVISION, "DiscoverResult") == []
        init = peer.request(2, "initialize", {"protocolVersion": "2025-11-25"})
        assert init["error"]["code"] == -32601
        listed = peer.request(3, "tools/list", meta)
        assert tool_names(listed) == {"echo"}
        assert schema_errors(listed["result"], MODERN_REVISION, "ListToolsResult") == []
        echoed = peer.request(4, "tools/call", {**meta, "name": "echo", "arguments": {"text": "x"}})
        assert text_of(echoed) == "x"
        assert echoed["result"]["resultType"] == "complete"
        assert schema_errors(echoed["result"], MODERN_REVISION, "CallToolResult") == []
        old = {"_meta": {**modern_meta(), PROTOCOL_VERSION: "2099-01-01"}}
        assert peer.request(5, "tools/list", old)["error"]["code"] == -32022
