"""Every other per-client table is bounded too (issue 18, defect 5): a connection's
resource subscriptions (``proto.maxSubscriptions``), the event streams open
(``events.maxSubscribers``) and the calls running as tasks (``proto.maxTasks``). Each
refusal names its setting; each table frees its entry when its client goes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from support.bounds import gauge, gauge_entry, open_gate, request, session, wait_for
from support.daemon import Daemon, running_daemon

SUBSCRIPTIONS = 2
STREAMS = 2
TASKS = 1


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    settings = {
        "proto.maxSubscriptions": SUBSCRIPTIONS,
        "events.maxSubscribers": STREAMS,
        "proto.maxTasks": TASKS,
        # Event streams write a keep-alive this often: a closed one is noticed by then.
        "transport.sseKeepAlive": "200ms",
    }
    servers = {"gauge": gauge_entry()}
    with running_daemon(tmp_path_factory.mktemp("tables"), servers, settings) as d:
        yield d


def _subscribe(mcp: httpx.Client, headers: dict[str, str], rid: int, uri: str) -> Any:
    r = mcp.post("/mcp", json=request(rid, "resources/subscribe", {"uri": uri}), headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_connection_holds_at_most_max_subscriptions(daemon: Daemon) -> None:
    with daemon.http() as mcp:
        headers = session(mcp)
        uris = [f"mcpx://gauge/thing-{i}" for i in range(SUBSCRIPTIONS + 1)]
        for i, uri in enumerate(uris[:SUBSCRIPTIONS]):
            assert "result" in _subscribe(mcp, headers, i, uri)
        # Subscribing again to one it holds is no new entry.
        assert "result" in _subscribe(mcp, headers, 10, uris[0])
        over = _subscribe(mcp, headers, 11, uris[-1])
        assert over["error"]["code"] == -429, over
        assert "proto.maxSubscriptions" in over["error"]["message"]
        # The bound is per connection: another session starts from none.
        theirs = session(mcp)
        assert "result" in _subscribe(mcp, theirs, 12, uris[-1])
        unsubscribe = request(13, "resources/unsubscribe", {"uri": uris[0]})
        assert mcp.post("/mcp", json=unsubscribe, headers=headers).status_code == 200
        assert "result" in _subscribe(mcp, headers, 14, uris[-1])


def _events_status(daemon: Daemon) -> int:
    with daemon.http() as client, client.stream("GET", "/v1/events") as r:
        return r.status_code


def test_at_most_max_subscribers_event_streams_are_open(daemon: Daemon) -> None:
    with ExitStack() as stack:
        clients = [stack.enter_context(daemon.http()) for _ in range(STREAMS)]
        streams = [stack.enter_context(c.stream("GET", "/v1/events")) for c in clients]
        assert [s.status_code for s in streams] == [200] * STREAMS
        with daemon.http() as api, api.stream("GET", "/v1/events") as r:
            assert r.status_code == 503  # (were it a stream, it would not end)
            error = json.loads(r.read())["error"]
        assert error["code"] == "too_many_streams"
        assert "events.maxSubscribers" in error["message"]
        streams[0].close()
        # The closed stream is forgotten (at its next keep-alive): one may open again.
        assert wait_for(lambda: _events_status(daemon), lambda s: s == 200) == 200


MODERN_HEADERS = {
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "mcpx_call",
    "Accept": "application/json, text/event-stream",
}


def _modern_hold() -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    args = {"server": "gauge", "tool": "hold", "arguments": {"gate": "tasks"}}
    return request(9, "tools/call", {"name": "mcpx_call", "arguments": args, "_meta": meta})


def test_at_most_max_tasks_calls_run_as_tasks(daemon: Daemon) -> None:
    hold = {"server": "gauge", "tool": "hold", "arguments": {"gate": "tasks"}}
    returning = {"Mcpx-Questions": "return"}
    out: list[httpx.Response] = []

    def first() -> None:
        with daemon.http() as api:
            out.append(api.post("/v1/call", json=hold, headers=returning))

    thread = threading.Thread(target=first, daemon=True)
    thread.start()
    seen = wait_for(lambda: gauge(daemon, "tasks"), lambda c: c["running"] == TASKS)
    assert seen["running"] == TASKS, seen
    with daemon.http() as api:
        # Bounded: if it were not refused, this one would wait at the gate.
        r = api.post("/v1/call", json=hold, headers=returning, timeout=20)
    assert r.status_code == 429, r.text
    error = r.json()["error"]
    assert error["code"] == "too_many_tasks"
    assert "proto.maxTasks" in error["message"]
    # A 2026-07-28 host that can be asked runs its call as a task too: refused alike.
    with daemon.http() as mcp:
        r = mcp.post("/mcp", json=_modern_hold(), headers=MODERN_HEADERS, timeout=20)
    assert r.status_code == 429, r.text
    assert r.json()["error"]["code"] == -429
    assert "proto.maxTasks" in r.json()["error"]["message"]
    open_gate(daemon, "tasks")
    thread.join(60)
    assert out and out[0].status_code == 200, out
    # The task ended: the next one runs.
    with daemon.http() as api:
        r = api.post("/v1/call", json=hold, headers=returning)
    assert r.status_code == 200, r.text
