"""What one client may have running: batch length and requests in flight (issue 18, defect 4).

A real daemon whose upstream is the gauge (``tests/fixtures/gauge_server.py``): each
``hold`` call waits at its gate, counted as running, until the test opens it; so "at
most N upstream calls at once" is read from the upstream itself.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from support.bounds import (
    gauge,
    gauge_entry,
    mcpx_call,
    open_gate,
    request,
    session,
    wait_for,
)
from support.daemon import Daemon, running_daemon

CALLS = 3  # proto.maxConcurrentCalls
BATCH = 8  # proto.maxBatch


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    settings = {"proto.maxConcurrentCalls": CALLS, "proto.maxBatch": BATCH}
    servers = {"gauge": gauge_entry()}
    with running_daemon(tmp_path_factory.mktemp("calls"), servers, settings) as d:
        yield d


def _in_thread(fn: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn(*args)), daemon=True)
    thread.start()
    return thread, out


def test_a_batch_over_max_batch_is_refused_whole(daemon: Daemon) -> None:
    with daemon.http() as mcp:
        headers = session(mcp, "2025-03-26")
        at = [request(i, "ping") for i in range(BATCH)]
        r = mcp.post("/mcp", json=at, headers=headers)
        assert r.status_code == 200, r.text
        assert sorted(f["id"] for f in r.json()) == list(range(BATCH))
        over = [request(i, "ping") for i in range(BATCH + 1)]
        r = mcp.post("/mcp", json=over, headers=headers)
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert error["code"] == -32600
        assert "proto.maxBatch" in error["message"] and f"({BATCH})" in error["message"]


def test_a_batch_of_slow_calls_runs_at_most_max_concurrent_calls_upstream(
    daemon: Daemon,
) -> None:
    with daemon.http() as mcp:
        headers = session(mcp, "2025-03-26")
        batch = [mcpx_call(i, "gauge", "hold", gate="batch") for i in range(BATCH)]
        thread, out = _in_thread(lambda: mcp.post("/mcp", json=batch, headers=headers))
        seen = wait_for(lambda: gauge(daemon, "batch"), lambda c: c["running"] >= CALLS)
        assert seen["running"] == CALLS, seen
        open_gate(daemon, "batch")
        thread.join(60)
        [r] = out
        assert r.status_code == 200, r.text
        texts = [f["result"]["content"][0]["text"] for f in r.json()]
        assert texts == ["opened"] * BATCH
    # However the calls went through, never more than CALLS were upstream at once.
    assert gauge(daemon, "batch")["peak"] == CALLS


def test_a_session_may_have_max_concurrent_calls_running(daemon: Daemon) -> None:
    with daemon.http() as mcp, daemon.http() as other:
        headers = session(mcp)
        threads = [
            _in_thread(
                lambda i=i: mcp.post(
                    "/mcp", json=mcpx_call(i, "gauge", "hold", gate="calls"), headers=headers
                )
            )
            for i in range(CALLS)
        ]
        seen = wait_for(lambda: gauge(daemon, "calls"), lambda c: c["running"] == CALLS)
        assert seen["running"] == CALLS, seen
        # One more on the same session: refused at once, saying which bound and when
        # (bounded: were it let through, it would wait at the gate).
        over = mcpx_call(99, "gauge", "hold", gate="calls")
        r = mcp.post("/mcp", json=over, headers=headers, timeout=20)
        assert r.status_code == 429, r.text
        assert r.headers["retry-after"] == "1"
        body = r.json()
        assert body["id"] == 99
        assert body["error"]["code"] == -429
        assert "proto.maxConcurrentCalls" in body["error"]["message"]
        # The bound is per client: another session is not held up by this one's calls.
        theirs = session(other)
        r = other.post("/mcp", json=mcpx_call(5, "gauge", "gauge", gate="calls"), headers=theirs)
        assert r.status_code == 200, r.text
        open_gate(daemon, "calls")
        for thread, out in threads:
            thread.join(60)
            assert out[0].status_code == 200, out[0].text
        # With its calls answered, the session may call again.
        r = mcp.post("/mcp", json=mcpx_call(7, "gauge", "hold", gate="calls"), headers=headers)
        assert r.status_code == 200, r.text
    assert gauge(daemon, "calls")["peak"] == CALLS


def _stdio(daemon: Daemon) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.connect(str(daemon.state / "mcpx-stdio.sock"))
    return sock


class _Lines:
    """A stdio host's view of its connection: JSON lines in, answers by id out."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def send(self, *frames: Any) -> None:
        self.sock.sendall(b"".join(json.dumps(f).encode() + b"\n" for f in frames))

    def next(self) -> Any:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            assert chunk, "the daemon closed the connection"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


def test_a_stdio_host_may_have_max_concurrent_calls_running(daemon: Daemon) -> None:
    init = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t"}}
    with _stdio(daemon) as sock:
        host = _Lines(sock)
        host.send(request(0, "initialize", init))
        assert host.next()["id"] == 0
        host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # A batch over proto.maxBatch is refused whole, in one error.
        host.send([request(100 + i, "ping") for i in range(BATCH + 1)])
        whole = host.next()
        assert isinstance(whole, dict) and whole["error"]["code"] == -32600, whole
        assert "proto.maxBatch" in whole["error"]["message"]
        host.send(*(mcpx_call(i, "gauge", "hold", gate="stdio") for i in range(1, CALLS + 1)))
        seen = wait_for(lambda: gauge(daemon, "stdio"), lambda c: c["running"] == CALLS)
        assert seen["running"] == CALLS, seen
        # One more waits in line (and the host's later lines behind it), not refused:
        # a pipe's writer is slowed down, as a pipe means.
        host.send(mcpx_call(CALLS + 1, "gauge", "hold", gate="stdio"), request(50, "ping"))
        open_gate(daemon, "stdio")
        answers = [host.next() for _ in range(CALLS + 2)]
        assert sorted(a["id"] for a in answers) == [*range(1, CALLS + 2), 50]
        assert all("result" in a for a in answers), answers
    assert gauge(daemon, "stdio")["peak"] == CALLS
