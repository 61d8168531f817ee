"""Legacy /mcp sessions are bounded and expire (issue 18, defect 5).

``proto.maxSessions``: at the cap a new session ends the least recently used idle one,
whose later requests are 404 (2025-03-26+ Streamable HTTP: a terminated session's id is
answered 404, and its host starts a new session); when every session is busy (a request
in flight or a GET stream open) the new one is refused 503 with ``Retry-After``.
``proto.maxSessionStreams`` bounds a session's GET streams; ``proto.sessionIdle`` ends
an idle session, and with it the instances scoped to it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from support.bounds import open_session, request, session, wait_for
from support.daemon import Daemon, running_daemon

CAP = 3
DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    # A fresh daemon per test: each fills the session table its own way.
    settings = {
        "proto.maxSessions": CAP,
        "proto.maxSessionStreams": 1,
        # GET streams write a keep-alive this often: a closed one is noticed by then.
        "transport.sseKeepAlive": "200ms",
    }
    with running_daemon(tmp_path, {"demo": DEMO}, settings) as d:
        yield d


def _ping(mcp: httpx.Client, headers: dict[str, str], rid: int = 7) -> httpx.Response:
    return mcp.post("/mcp", json=request(rid, "ping"), headers=headers)


@pytest.mark.obligation("S-HTTP-29")
def test_at_the_cap_a_new_session_ends_the_least_recently_used_idle_one(daemon: Daemon) -> None:
    with daemon.http() as mcp:
        first, second, third = (session(mcp) for _ in range(CAP))
        # Up to the cap, every session lives.
        for headers in (first, second, third):
            assert _ping(mcp, headers).status_code == 200
        assert _ping(mcp, first).status_code == 200  # second is now the least recent
        fourth = session(mcp)
        assert _ping(mcp, fourth).status_code == 200
        gone = _ping(mcp, second, rid=11)
        assert gone.status_code == 404, gone.text
        assert gone.json()["id"] == 11
        assert "start a new one" in gone.json()["error"]["message"]
        assert mcp.get("/mcp", headers=second).status_code == 404
        assert mcp.delete("/mcp", headers=second).status_code == 404
        for headers in (first, third, fourth):
            assert _ping(mcp, headers).status_code == 200


def test_when_every_session_is_busy_a_new_one_is_refused_503(daemon: Daemon) -> None:
    with daemon.http() as mcp, ExitStack() as streams:
        held = [session(mcp) for _ in range(CAP)]
        clients = [streams.enter_context(daemon.http()) for _ in held]
        opened = [
            streams.enter_context(c.stream("GET", "/mcp", headers=h))
            for c, h in zip(clients, held, strict=True)
        ]
        assert [r.status_code for r in opened] == [200] * CAP
        refused = open_session(mcp)
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == "5"
        assert "proto.maxSessions" in refused.json()["error"]["message"]
        # Every session is still there.
        for headers in held:
            assert _ping(mcp, headers).status_code == 200
        # One stream closes: its session is idle again, and gives way to a new one.
        opened[0].close()
        admitted = wait_for(lambda: open_session(mcp), lambda r: r.status_code == 200)
        assert admitted.status_code == 200, admitted.text
        assert _ping(mcp, held[0]).status_code == 404
        assert _ping(mcp, held[1]).status_code == 200


def test_a_session_holds_at_most_max_session_streams(daemon: Daemon) -> None:
    with daemon.http() as mcp, daemon.http() as first, daemon.http() as second:
        headers = session(mcp)
        with first.stream("GET", "/mcp", headers=headers) as stream:
            assert stream.status_code == 200
            with second.stream("GET", "/mcp", headers=headers) as r:
                assert r.status_code == 409  # (were it a stream, it would not end)
                body = json.loads(r.read())
            assert "proto.maxSessionStreams" in body["error"]["message"]
        again = wait_for(
            lambda: _stream_status(daemon, headers), lambda status: status == 200, limit=30
        )
        assert again == 200


def _stream_status(daemon: Daemon, headers: dict[str, str]) -> int:
    with daemon.http() as client, client.stream("GET", "/mcp", headers=headers) as r:
        return r.status_code


def _scopes(daemon: Daemon) -> list[str]:
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    return sorted(i["scope"] for s in servers for i in s["instances"] if i["scope"] != "anonymous")


@pytest.mark.obligation("S-HTTP-29")
def test_an_idle_session_expires_and_its_instance_ends(tmp_path: Path) -> None:
    mine = {**DEMO, "scope": "identity"}
    settings = {"proto.sessionIdle": "1s"}
    with running_daemon(tmp_path, {"mine": mine}, settings) as d, d.http() as mcp:
        idle = session(mcp)
        call = {"server": "mine", "tool": "echo", "arguments": {"text": "hi"}}
        frame = request(2, "tools/call", {"name": "mcpx_call", "arguments": call})
        assert mcp.post("/mcp", json=frame, headers=idle).status_code == 200
        scope = f"http:{idle['Mcp-Session-Id']}"
        assert _scopes(d) == [scope]
        # Another session keeps asking (each request is when expiry is looked at); the
        # idle one ends once it has been idle proto.sessionIdle, and its instance too.
        busy = session(mcp)

        def scopes_after_a_request() -> list[str]:
            assert _ping(mcp, busy).status_code == 200
            return _scopes(d)

        assert wait_for(scopes_after_a_request, lambda found: found == []) == []
        assert _ping(mcp, idle).status_code == 404
        assert _ping(mcp, busy).status_code == 200
