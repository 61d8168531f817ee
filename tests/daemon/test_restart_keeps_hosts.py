"""``mcpx restart`` keeps the hosts on ``mcpx serve``: their pipes go back to the shim and
on to the next daemon, with what they had negotiated.

A real daemon with the bundled demo server, a raw JSON-lines host spawning the real
``mcpx serve``, and the real ``mcpx restart``. Every frame either daemon sends is checked
against the host's revision when the test ends (``running_daemon``; both daemons trace to
the same file).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.daemon import Daemon, running_daemon
from support.modern import modern_meta, modern_params, modern_request
from support.peers import StdioPeer, stdio_peer
from support.waiting import wait_until

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
REVISION = "2025-11-25"


def _echo(rid: int, text: str) -> dict[str, Any]:
    arguments = {"server": "demo", "tool": "echo", "arguments": {"text": text}}
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": "mcpx_call", "arguments": arguments},
    }


def _text(host: StdioPeer, rid: int) -> str:
    reply = host.response(rid, timeout=90)
    assert "result" in reply, reply
    return str(reply["result"]["content"][0]["text"])


def _restart(daemon: Daemon) -> subprocess.Popen[str]:
    """``mcpx restart``, running (in the background: the test acts meanwhile)."""
    return subprocess.Popen(
        [sys.executable, "-m", "mcpx", "restart"],
        cwd=daemon.home,
        env=daemon.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_in_flight(daemon: Daemon) -> None:
    def in_flight() -> bool:
        with daemon.http() as api:
            servers = api.get("/v1/servers").json()["servers"]
        return any(i.get("inFlight") for s in servers for i in s["instances"])

    wait_until(in_flight, message="the slow call never reached the upstream")


def _stopped_reading(daemon: Daemon) -> bool:
    """The old daemon has begun its stop for the restart, so it reads its hosts no more:
    the ``restarting`` marker of `mcpx restart` is taken, and uvicorn logged "Shutting
    down", which it does only after the daemon's stop hooks (the hand-back) ran. (The
    marker alone may come and go between two looks.)"""
    began = any(
        line.get("logger") == "uvicorn.error" and line["msg"] == "Shutting down"
        for line in daemon.log_lines()
    )
    return began and not (daemon.state / "restarting").exists()


def test_a_restart_keeps_a_serve_host_connected_in_its_revision(tmp_path: Path) -> None:
    with running_daemon(tmp_path, {"demo": DEMO}) as daemon:
        try:
            serve = [sys.executable, "-m", "mcpx", "serve"]
            with stdio_peer(serve, env=daemon.env()) as host:
                host.initialize(REVISION)
                host.send(_echo(2, "before"))
                assert _text(host, 2) == "before"
                restart = _restart(daemon)
                # Sent as the restart begins: read by one daemon or the other, answered
                # once, and not refused.
                host.send(_echo(3, "during"))
                out, err = restart.communicate(timeout=120)
                assert restart.returncode == 0, err
                assert _text(host, 3) == "during"
                host.send(_echo(4, "after"))
                assert _text(host, 4) == "after"
                host.send({"jsonrpc": "2.0", "id": 5, "method": "ping"})
                assert host.response(5, timeout=30)["result"] == {}
                assert host.proc.poll() is None  # the shim: never ended, never re-spawned
                now = json.loads((daemon.state / "daemon.json").read_text())
                assert now["pid"] != daemon.info["pid"], out
                log = [line["msg"] for line in daemon.log_lines()]
                assert any("given back for the restart" in m for m in log), log[-20:]
                assert any(f"stdio host resumed ({REVISION})" in m for m in log), log[-20:]
            # The next daemon answered in the revision negotiated with the first one: no
            # handshake came to it, and a host that declared nothing would be 2024-11-05.
            answers = [f for f in daemon.sent_frames() if f["frame"].get("id") in (4, 5)]
            assert answers and {f["rev"] for f in answers} == {REVISION}, answers
        finally:
            stopped = daemon.cli("stop")  # the daemon `mcpx restart` started, by its pid
            assert stopped.returncode == 0, stopped.stderr


def test_a_plain_stop_still_ends_the_host(tmp_path: Path) -> None:
    with running_daemon(tmp_path, {"demo": DEMO}) as daemon:
        serve = [sys.executable, "-m", "mcpx", "serve"]
        with stdio_peer(serve, env=daemon.env()) as host:
            host.initialize(REVISION)
            assert daemon.cli("stop").returncode == 0
            assert host.wait(timeout=60) == 0  # the shim ended with the daemon
        assert not (daemon.state / "daemon.json").exists()


def test_what_the_host_writes_while_nobody_reads_it_goes_to_the_next_daemon(
    tmp_path: Path,
) -> None:
    # A slow call keeps the old daemon stopping for a while; it has stopped reading the
    # host (the restart marker is gone when it begins), so a request written then waits
    # in the host's pipe, and the next daemon answers it. The slow call is answered whole
    # by the old one, within daemon.stopGrace.
    with running_daemon(tmp_path, {"demo": DEMO}, {"daemon.stopGrace": "10s"}) as daemon:
        try:
            serve = [sys.executable, "-m", "mcpx", "serve"]
            with stdio_peer(serve, env=daemon.env()) as host:
                host.initialize(REVISION)
                slow = {"server": "demo", "tool": "slow", "arguments": {"seconds": 2}}
                host.send(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {"name": "mcpx_call", "arguments": slow},
                    }
                )
                _wait_in_flight(daemon)
                restart = _restart(daemon)
                wait_until(lambda: _stopped_reading(daemon), message="no stop began")
                host.send(_echo(3, "waited in the pipe"))
                assert _text(host, 2).startswith("slept 2 s"), "the old daemon's answer"
                # Read by the old daemon, it would be refused (it takes no new calls once
                # stopping): this answer is the next daemon's.
                assert _text(host, 3) == "waited in the pipe"
                _, err = restart.communicate(timeout=120)
                assert restart.returncode == 0, err
            old = [f for f in daemon.sent_frames() if f["frame"].get("id") == 3]
            assert len(old) == 1, old  # answered once
        finally:
            assert daemon.cli("stop").returncode == 0


META = modern_meta(client=None)


def _listen(host: StdioPeer, rid: str) -> None:
    """Open a listen stream for resource list changes; its acknowledgement came."""
    params = {"notifications": {"resourcesListChanged": True}}
    host.send(modern_request(rid, "subscriptions/listen", params, META))
    acked = host.recv(30)
    assert acked["method"] == "notifications/subscriptions/acknowledged", acked


def test_a_modern_hosts_listen_ends_gracefully_and_it_goes_on_with_the_next_daemon(
    tmp_path: Path,
) -> None:
    # A 2026-07-28 host has no session to carry, but its listen stream is a request in
    # flight: at the restart it is answered (a graceful end, as at any stop), so the host
    # knows to listen again, and does so on the next daemon through the same pipes.
    with running_daemon(tmp_path, {"demo": DEMO}) as daemon:
        try:
            serve = [sys.executable, "-m", "mcpx", "serve"]
            with stdio_peer(serve, env=daemon.env()) as host:
                _listen(host, "l1")
                restarted = daemon.cli("restart")
                assert restarted.returncode == 0, restarted.stderr
                ended = host.response("l1", timeout=60)
                assert ended["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "l1"
                _listen(host, "l2")
                call = _echo(7, "modern after")
                call["params"] = modern_params(call["params"], META)
                host.send(call)
                assert _text(host, 7) == "modern after"
        finally:
            assert daemon.cli("stop").returncode == 0
