"""The demo server's era rules, as a real process: how each request's revision is judged.

A 2026-07-28 request is served statelessly and must carry its ``_meta``; what 2026-07-28
removed is -32601 to it and still answered to a legacy peer; a connection that never
initialized is served as the oldest revision; both eras share one connection; only a
2025-03-26 connection takes batches. Every frame is validated as in the other modules.
"""

from __future__ import annotations

from typing import Any

import pytest

from demo.peer import (
    META_CAPABILITIES,
    META_LOG_LEVEL,
    META_VERSION,
    SUBSCRIPTION_ID,
    DemoPeer,
    Start,
    modern_meta,
)
from mcpx import spec

NEWEST = spec.NEWEST
LEGACY = list(spec.LEGACY)


def raw(peer: DemoPeer, rid: Any, method: str, params: Any, rev: str = NEWEST) -> Any:
    """Send exactly this request (no ``_meta`` added) and return its response."""
    frame = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        frame["params"] = params
    peer.expect(rid, method, rev)
    peer.send(frame)
    return peer.response(rid)


META_PROBLEMS: list[tuple[str, Any, int]] = [
    ("server/discover", None, -32602),  # only 2026-07-28 has it: a modern request sans _meta
    ("subscriptions/listen", {"notifications": {}}, -32602),
    ("tools/list", {"_meta": {META_CAPABILITIES: {}}}, -32602),
    ("tools/list", {"_meta": {META_VERSION: NEWEST}}, -32602),
    ("tools/list", {"_meta": {META_VERSION: NEWEST, META_CAPABILITIES: []}}, -32602),
    ("tools/list", {"_meta": modern_meta(**{META_LOG_LEVEL: "loud"})}, -32602),
    ("tools/list", {"_meta": modern_meta("2099-01-01")}, -32022),
    ("tools/list", {"_meta": modern_meta("2025-06-18")}, -32022),  # legacy is negotiated
]


def test_modern_requests_need_their_meta(start: Start) -> None:
    peer = start()
    for rid, (method, params, code) in enumerate(META_PROBLEMS):
        error = raw(peer, rid, method, params)["error"]
        assert error["code"] == code, (method, params, error)
        if code == -32022:
            assert error["data"]["supported"] == ["2026-07-28"]
            assert error["data"]["requested"] == params["_meta"][META_VERSION]


REMOVED = sorted(
    row.name
    for row in spec.rows("request")
    if row.direction == "client" and row.removed_in == NEWEST
)


def test_methods_2026_removed_are_not_found_to_it(start: Start) -> None:
    assert {"initialize", "ping", "logging/setLevel", "resources/subscribe"} <= set(REMOVED)
    peer = start(NEWEST)
    params = {"protocolVersion": "2025-06-18", "level": "info", "uri": "demo://readme"}
    for method in REMOVED:
        assert peer.error(method, params)["code"] == -32601, method


@pytest.mark.parametrize("rev", LEGACY)
def test_legacy_keeps_what_2026_removed(start: Start, rev: str) -> None:
    peer = start(rev)
    assert peer.result("ping") == {}
    assert peer.result("logging/setLevel", {"level": "debug"}) == {}
    assert peer.result("resources/subscribe", {"uri": "demo://readme"}) == {}
    assert peer.result("resources/unsubscribe", {"uri": "demo://readme"}) == {}
    assert peer.error("logging/setLevel", {"level": "loud"})["code"] == -32602
    assert peer.error("sampling/createMessage", {"messages": []})["code"] == -32601


def test_never_initialized_is_served_as_oldest(start: Start) -> None:
    peer = start()  # no handshake at all
    assert peer.result("ping") == {}
    (tool, *_) = peer.result("tools/list")["tools"]
    assert tool.keys() == {"name", "description", "inputSchema"}  # 2024-11-05's Tool
    assert "structuredContent" not in peer.tool("add", {"a": 1, "b": 2})


def test_both_eras_on_one_connection(start: Start) -> None:
    peer = start("2025-06-18")
    (legacy, *_) = peer.result("tools/list")["tools"]
    assert "title" in legacy
    modern = peer.result("tools/list", rev=NEWEST)
    assert modern["resultType"] == "complete" and modern["ttlMs"] == 60_000
    # The modern request changed nothing about the legacy connection.
    again = peer.result("tools/list")
    assert "resultType" not in again
    assert peer.tool("add", {"a": 1, "b": 2})["structuredContent"] == {"sum": 3}


def test_initialize_negotiates_a_legacy_revision(start: Start) -> None:
    peer = start()
    for offered, agreed in [
        ("2025-03-26", "2025-03-26"),
        ("1999-01-01", "2025-11-25"),  # unknown: the newest legacy revision instead
        ("2026-07-28", "2025-11-25"),  # modern has no initialize: still legacy
    ]:
        params = {"protocolVersion": offered, "capabilities": {}, "clientInfo": _client()}
        assert peer.result("initialize", params)["protocolVersion"] == agreed
        peer.rev = agreed
    assert peer.error("initialize", {"capabilities": {}})["code"] == -32602


def _client() -> dict[str, str]:
    return {"name": "t", "version": "0"}


def _slow_log(peer: DemoPeer, **kw: Any) -> list[dict[str, Any]]:
    """The log messages one quick ``slow`` call sends."""
    before = len(peer.received)
    peer.tool("slow", {"seconds": 0, "steps": 1}, **kw)
    sent = peer.received[before:]
    return [f["params"] for f in sent if f.get("method") == "notifications/message"]


@pytest.mark.parametrize("rev", LEGACY)
def test_legacy_log_messages_follow_set_level(start: Start, rev: str) -> None:
    peer = start(rev)
    assert _slow_log(peer) == []  # no level set: no messages
    peer.result("logging/setLevel", {"level": "info"})
    assert _slow_log(peer) == [
        {"level": "info", "logger": "mcpx-demo", "data": "slow: slept 0 s in 1 step"}
    ]
    peer.result("logging/setLevel", {"level": "warning"})
    assert _slow_log(peer) == []


def test_modern_log_messages_follow_the_request(start: Start) -> None:
    peer = start(NEWEST)
    assert _slow_log(peer) == []
    (message,) = _slow_log(peer, meta={META_LOG_LEVEL: "debug"})
    assert message["level"] == "info"
    assert _slow_log(peer, meta={META_LOG_LEVEL: "error"}) == []


def test_listen_is_acknowledged_then_ends_by_cancel(start: Start) -> None:
    peer = start(NEWEST)
    wanted = {"toolsListChanged": True, "resourceSubscriptions": ["demo://readme"]}
    rid = peer.request("subscriptions/listen", {"notifications": wanted})
    ack = peer.notification("notifications/subscriptions/acknowledged")["params"]
    # Nothing here ever changes: the server honours none of it, and says so.
    assert ack == {"notifications": {}, "_meta": {SUBSCRIPTION_ID: rid}}
    assert peer.result("tools/list")["tools"]
    peer.notify("notifications/cancelled", {"requestId": rid})
    assert peer.error("subscriptions/listen", {"notifications": []})["code"] == -32602
    second = peer.request("subscriptions/listen", {"notifications": {}})
    peer.notification("notifications/subscriptions/acknowledged")
    peer.close_stdin()  # a listen still open at end of input ends at once, unanswered
    assert peer.rest() == []
    assert peer.wait() == 0
    assert not [f for f in peer.received if f.get("id") in (rid, second)]
    assert "still running" not in peer.stderr()


def test_batches_on_2025_03_26(start: Start) -> None:
    peer = start("2025-03-26")
    echo = {"name": "echo", "arguments": {"text": "in a batch"}}
    slow = {
        "name": "slow",
        "arguments": {"seconds": 0.1, "steps": 2},
        "_meta": {"progressToken": 1},
    }
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": 5},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": slow},
        {"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},  # 1 is still in flight
    ]
    for rid, method in [(1, "ping"), (2, "tools/call"), (4, "tools/call")]:
        peer.expect(rid, method)
    peer.expect_progress(1)
    peer.send(batch)
    answer = _next_batch(peer)
    by_id: dict[Any, list[dict[str, Any]]] = {}
    for frame in answer:
        by_id.setdefault(frame["id"], []).append(frame)
    assert sorted(by_id) == [1, 2, 3, 4, 5]
    assert sorted("result" in f for f in by_id[1]) == [False, True]  # ping; duplicate id
    assert by_id[2][0]["result"]["content"][0]["text"] == "in a batch"
    assert by_id[3][0]["error"]["code"] == -32600
    assert by_id[4][0]["result"]["content"][0]["text"] == "slept 0.1 s in 2 steps"
    assert by_id[5][0]["error"]["code"] == -32600  # initialize must not be batched
    progress = [f for f in peer.received if f.get("method") == "notifications/progress"]
    assert [f["params"]["progress"] for f in progress] == [1, 2]

    before = len(peer.received)
    peer.send([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
    rid = peer.request("ping")
    peer.response(rid)
    assert [f.get("id") for f in peer.received[before:]] == [rid]  # notifications only: silence


def _next_batch(peer: DemoPeer) -> list[dict[str, Any]]:
    while (frame := peer.next_frame()) is not None:
        if "batch" in frame:
            batch: list[dict[str, Any]] = frame["batch"]
            return batch
    raise AssertionError("no batch answer")


@pytest.mark.parametrize("rev", [r for r in spec.REVISIONS if r != "2025-03-26"])
def test_batches_refused_elsewhere(start: Start, rev: str) -> None:
    peer = start(rev)
    before = len(peer.received)
    peer.send([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}])
    rid = peer.request("tools/list")
    peer.response(rid)
    sent = peer.received[before:]
    if spec.at_or_after(rev, "2025-11-25"):  # an error without an id is valid from here on
        assert sent[0]["error"]["code"] == -32600 and "id" not in sent[0]
        sent = sent[1:]
    assert [f.get("id") for f in sent] == [rid]


def test_cancel_edge_cases(start: Start) -> None:
    peer = start("2025-11-25")
    rid = peer.request("tools/call", {"name": "slow", "arguments": {"seconds": 0.3}}, rid=1)
    duplicate = peer.error("tools/call", {"name": "echo", "arguments": {"text": "x"}}, rid=1)
    assert duplicate["code"] == -32600 and "already in flight" in duplicate["message"]
    for params in ({"requestId": True}, {"requestId": "1"}, {"requestId": 424242}, {}):
        peer.notify("notifications/cancelled", params)  # none of these names request 1
    peer.notify("notifications/cancelled")
    assert peer.response(rid)["result"]["content"][0]["text"].startswith("slept 0.3 s")
    peer.notify("notifications/cancelled", {"requestId": rid})  # finished: ignored
    assert peer.result("ping") == {}
