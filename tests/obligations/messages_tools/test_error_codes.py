"""Errors a host gets from a pass-through upstream: mcpx's own failures are marked as its own
(C-ERR-6, S-ERR-6), the upstream's are relayed as they came, and a 2026-07-28 host gets only
the codes its revision defines (S-ERR-3, S-ERR-4).

One real daemon with four upstreams, each offered to a host of its own through ``mcpx serve
--passthrough <name>``: ``hang`` (``bad_server.py --mode hang``: its ``tools/call`` is never
answered, and ``pool.callTimeout`` is 2 s), ``exits`` (``bad_server.py --mode exit``: the
process dies on ``tools/call``), ``erring``, a stdlib legacy server written by this module
whose tool fails with its own JSON-RPC ``-32603``, and ``ghost``, whose command does not
exist. Every frame the daemon sends a host is traced and held strictly to the host's
revision when the module's daemon stops; the frames a test reads are validated too
(``sent_frames``).
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from support.daemon import Daemon, bad_entry, running_daemon
from support.modern import MODERN, modern_params
from support.peers import stdio_peer
from support.schemas import FrameLog

REV = "2025-11-25"
MARK = "origin"

ERRING = textwrap.dedent(
    '''
    """A legacy stdio server whose one tool fails with its own JSON-RPC -32603."""
    import json
    import sys

    BROKEN = {"name": "broken", "inputSchema": {"type": "object"}}
    LATE = {"name": "late", "inputSchema": {"type": "object"}}
    OWN = {"code": -32603, "message": "erring: the disk is full", "data": {"disk": "sda"}}
    # Codes of the range 2026-07-28 reserves that only older revisions define.
    TIMED_OUT = {"code": -32001, "message": "Request timed out"}
    NOT_FOUND = {"code": -32002, "message": "Resource not found", "data": {"uri": "erring://x"}}


    def send(frame):
        sys.stdout.write(json.dumps(frame) + "\\n")
        sys.stdout.flush()


    for line in sys.stdin:
        if not line.strip():
            continue
        frame = json.loads(line)
        method, rid = frame.get("method"), frame.get("id")
        if method is None or rid is None:
            continue
        params = frame.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            result = {
                "protocolVersion": asked if asked.startswith("2025") else "2025-11-25",
                "capabilities": {"tools": {}, "resources": {}},
                "serverInfo": {"name": "erring", "version": "1"},
            }
            send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [BROKEN, LATE]}})
        elif method == "resources/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"resources": []}})
        elif method == "resources/templates/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"resourceTemplates": []}})
        elif method == "resources/read":
            send({"jsonrpc": "2.0", "id": rid, "error": NOT_FOUND})
        elif method == "tools/call" and params.get("name") == "late":
            send({"jsonrpc": "2.0", "id": rid, "error": TIMED_OUT})
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "id": rid, "error": OWN})
        else:
            error = {"code": -32601, "message": "Method not found: " + method}
            send({"jsonrpc": "2.0", "id": rid, "error": error})
    '''
)
# What erring's tool answers, exactly: relayed as it came.
ERRING_OWN = {"code": -32603, "message": "erring: the disk is full", "data": {"disk": "sda"}}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("obl-g")
    script = tmp / "erring.py"
    script.write_text(ERRING)
    servers = {
        "hang": bad_entry("hang"),
        "exits": bad_entry("exit"),
        "erring": {"command": sys.executable, "args": [str(script)]},
        "ghost": {"command": str(tmp / "no-such-server")},
    }
    with running_daemon(tmp, servers, {"pool.callTimeout": "2s"}) as d:
        yield d


def _call_through(daemon: Daemon, server: str, tool: str, sent_frames: FrameLog) -> dict[str, Any]:
    """``tools/call`` of ``tool`` by a stdio host whose only pass-through server is
    ``server``; the error it got."""
    argv = [sys.executable, "-m", "mcpx", "serve", "--passthrough", server]
    with stdio_peer(argv, env=daemon.env()) as host:
        init = host.initialize(REV)
        sent_frames.sent({"jsonrpc": "2.0", "id": 0, "result": init}, REV, answering="initialize")
        listed = host.request(1, "tools/list", {}, timeout=60)
        sent_frames.sent(listed, REV, answering="tools/list")
        assert tool in {t["name"] for t in listed["result"]["tools"]}, listed
        params = {"name": tool, "arguments": {"text": "x"}}
        reply = host.request(2, "tools/call", params, timeout=60)
    sent_frames.sent(reply, REV, answering="tools/call")
    assert "error" in reply, reply
    error: dict[str, Any] = reply["error"]
    return error


@pytest.mark.obligation("C-ERR-6", "S-ERR-6")
@pytest.mark.parametrize("server", ["hang", "exits"])
def test_a_local_pass_through_failure_is_marked_as_mcpxs_own(
    daemon: Daemon, server: str, sent_frames: FrameLog
) -> None:
    # The upstream never answered (mcpx's pool.callTimeout ran out), or it died under the
    # call: the failure is mcpx's, an InternalError that says so in its data.
    error = _call_through(daemon, server, "echo", sent_frames)
    assert error["code"] == -32603, error
    assert error["data"] == {MARK: "mcpx", "server": server}, error


@pytest.mark.obligation("C-ERR-6", "S-ERR-6")
def test_a_pass_through_server_that_cannot_start_is_marked_as_mcpxs_own(daemon: Daemon) -> None:
    # Its tools cannot even be listed: the host's tools/call fails with mcpx's own error.
    argv = [sys.executable, "-m", "mcpx", "serve", "--passthrough", "ghost"]
    with stdio_peer(argv, env=daemon.env()) as host:
        host.initialize(REV)
        reply = host.request(1, "tools/call", {"name": "echo", "arguments": {}}, timeout=60)
    assert reply["error"]["code"] == -32603, reply
    assert "could not be started" in reply["error"]["message"], reply
    assert reply["error"]["data"] == {MARK: "mcpx", "server": "ghost"}, reply


@pytest.mark.obligation("C-ERR-6", "S-ERR-6")
def test_an_upstreams_own_internal_error_is_relayed_unmarked(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    # The same code from the upstream itself: exactly as it came, not marked as mcpx's.
    error = _call_through(daemon, "erring", "broken", sent_frames)
    assert error == ERRING_OWN, error


def _modern(host: Any, rid: int, method: str, params: dict[str, Any]) -> Any:
    return host.request(rid, method, modern_params(params), timeout=60)


@pytest.mark.obligation("S-ERR-3", "S-ERR-4", "S-RES-10", "C-ERR-1")
def test_a_2026_host_gets_only_codes_its_revision_defines(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    argv = [sys.executable, "-m", "mcpx", "serve", "--passthrough", "erring"]
    with stdio_peer(argv, env=daemon.env()) as host:
        read = _modern(host, 1, "resources/read", {"uri": "erring://x"})
        late = _modern(host, 2, "tools/call", {"name": "late", "arguments": {}})
    for reply, answering in ((read, "resources/read"), (late, "tools/call")):
        sent_frames.sent(reply, MODERN, answering=answering)
    # Legacy "resource not found" is invalid params in 2026-07-28.
    assert read["error"]["code"] == -32602, read
    assert read["error"]["data"] == {"uri": "erring://x"}, read
    # A reserved code 2026-07-28 does not define: internal error, the upstream's code kept.
    assert late["error"]["code"] == -32603, late
    assert late["error"]["data"] == {"code": -32001}, late
    # A legacy host is told the upstream's codes as they came.
    with stdio_peer(argv, env=daemon.env()) as host:
        host.initialize(REV)
        old = host.request(1, "resources/read", {"uri": "erring://x"}, timeout=60)
    assert old["error"]["code"] == -32002, old
