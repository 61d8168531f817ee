"""Server obligations on features: cancellation, and the end of subscriptions and of
listen streams (a closed stream, a host gone, a stopping daemon).

The real daemon (fixture ``daemon``, one for the package) and its upstreams are described in
``conftest.py`` of this directory; shared helpers are in ``helpers.py``. The last test
starts a daemon of its own (fixture ``stoppable``, below) and stops it.

Hosts: ``mcpx serve`` over stdio (raw lines) and ``/mcp`` over HTTP (raw requests). Every
frame the daemon sends is traced and checked strictly against the host's revision when the
daemon stops; the frames a test reads are also checked with ``sent_frames``.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from obligations.server_features.helpers import (
    DOC,
    LEGACY,
    META,
    SUB_ID,
    WATCHED,
    _call,
    _drain,
    _gzip_resource,
    _legacy,
    _listen_frame,
    _listening,
    _serve,
    _session,
    _until,
)
from support.daemon import Daemon, running_daemon
from support.modern import MODERN
from support.peers import StdioPeer
from support.schemas import FrameLog
from support.waiting import wait_until


def _servers(daemon: Daemon) -> list[dict[str, Any]]:
    with daemon.http() as api:
        servers: list[dict[str, Any]] = api.get("/v1/servers").json()["servers"]
    return servers


def _watched(daemon: Daemon, server: str = "everything") -> list[str]:
    return next(s["subscriptions"] for s in _servers(daemon) if s["name"] == server)


def _in_flight(daemon: Daemon) -> int:
    return sum(i["inFlight"] for s in _servers(daemon) for i in s["instances"])


# --- cancellation ---------------------------------------------------------------------


def _handshake(peer: StdioPeer, rev: str) -> dict[str, Any] | None:
    """Legacy: the handshake; 2026-07-28: the ``_meta`` each request carries."""
    if rev == MODERN:
        return META
    peer.initialize(rev)
    return None


def _with_meta(params: dict[str, Any], meta: dict[str, Any] | None) -> dict[str, Any]:
    return params if meta is None else {**params, "_meta": meta}


@pytest.mark.obligation("S-CANC-1")
@pytest.mark.parametrize("rev", ["2024-11-05", LEGACY, MODERN])
def test_a_cancelled_call_stops_and_gets_no_answer(daemon: Daemon, rev: str) -> None:
    with _serve(daemon) as peer:
        meta = _handshake(peer, rev)
        slow = _with_meta(_call("demo", "slow", {"seconds": 60, "steps": 60}), meta)
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": slow})
        wait_until(lambda: _in_flight(daemon) == 1)
        peer.notify("notifications/cancelled", {"requestId": 2, "reason": "no longer needed"})
        # Stopped, upstream too, long before its 60 s.
        wait_until(lambda: _in_flight(daemon) == 0)
        # The connection goes on (tools/list: 2026-07-28 has no ping).
        listed = peer.request(3, "tools/list", _with_meta({}, meta))
        assert "mcpx_call" in [t["name"] for t in listed["result"]["tools"]], listed
        late = _drain(peer, 1.5)
        assert not [m for m in late if m.get("id") == 2], late


# Cancellations of ids mcpx does not know are ignored (malformed ids: a reported gap).
def test_unknown_and_malformed_cancellations_are_ignored(daemon: Daemon) -> None:
    junk: list[dict[str, Any] | None] = [
        {"requestId": 999},
        {"requestId": "never-sent"},
        {"requestId": 1},  # already answered
        {"reason": "no id"},
        {},
        None,
    ]
    with _serve(daemon) as peer:
        peer.initialize(LEGACY)
        assert peer.request(1, "ping")["result"] == {}
        for params in junk:
            peer.notify("notifications/cancelled", params)
        assert _drain(peer, 1.0) == []  # nothing answered, no error
        reply = peer.request(
            2, "tools/call", _call("demo", "echo", {"text": "still here"}), timeout=60
        )
        assert reply["result"]["content"][0]["text"] == "still here"
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers, _ = _session(mcp)
        for params in junk:
            note: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
            if params is not None:
                note["params"] = params
            assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
        assert _legacy(mcp, headers, "ping", {}, rid=5) == [
            {"jsonrpc": "2.0", "id": 5, "result": {}}
        ]


@pytest.mark.obligation("S-CANC-3")
def test_cancellations_racing_answers_are_harmless(daemon: Daemon, sent_frames: FrameLog) -> None:
    rounds = 40
    with _serve(daemon) as peer:
        peer.initialize(LEGACY)
        for rid in range(1, rounds + 1):
            call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call"}
            call["params"] = _call("demo", "echo", {"text": str(rid)})
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
            cancel["params"] = {"requestId": rid}
            before = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
            before["params"] = {"requestId": rid - 1}  # likely answered already
            # The call and its cancellation in one write: they race inside the daemon.
            peer.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in (before, call, cancel)))
        end = {"jsonrpc": "2.0", "id": "end", "method": "tools/call"}
        peer.send({**end, "params": _call("demo", "echo", {"text": "end"})})
        got = _until(peer, lambda got: any(m.get("id") == "end" for m in got), limit=60)
        got += _drain(peer, 1.0)
    [final] = [m for m in got if m.get("id") == "end"]
    assert final["result"]["content"][0]["text"] == "end"
    answers = [m for m in got if "id" in m and m["id"] != "end"]
    ids = [m["id"] for m in answers]
    assert len(ids) == len(set(ids))  # none answered twice
    assert set(ids) <= set(range(1, rounds + 1))
    for answer in answers:  # whatever was answered is a whole, valid answer
        assert answer["result"]["content"][0]["text"] == str(answer["id"])
        sent_frames.sent(answer, LEGACY, answering="tools/call")
    wait_until(lambda: _in_flight(daemon) == 0)


@pytest.mark.obligation("S-SUB-9")
def test_closing_a_listen_stream_ends_its_subscription(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    wait_until(lambda: _watched(daemon) == [])
    with _listening(daemon.info["url"], 31, {"resourceSubscriptions": [WATCHED]}) as got:
        assert got[0]["params"]["notifications"] == {"resourceSubscriptions": [WATCHED]}
        sent_frames.sent(got[0], MODERN)
        assert _watched(daemon) == [DOC]  # held upstream while the stream is open
    wait_until(lambda: _watched(daemon) == [])  # the request ended, and so did its state


@pytest.mark.obligation("S-SUB-8")
def test_no_subscription_outlives_the_host_that_made_it(daemon: Daemon) -> None:
    wait_until(lambda: _watched(daemon) == [])
    with _serve(daemon) as first:
        first.send(
            _listen_frame("old", {"resourcesListChanged": True, "resourceSubscriptions": [WATCHED]})
        )
        ack = _until(first, lambda got: bool(got))[0]
        assert ack["params"]["_meta"][SUB_ID] == "old"
        assert _watched(daemon) == [DOC]
        # The host goes away (its stdin ends; the shim exits). The daemon gives requests in
        # flight transport.stdioDrain (30 s) before it ends them, a listen among them.
        assert first.proc.stdin is not None
        first.proc.stdin.close()
        wait_until(lambda: _watched(daemon) == [], timeout=60)  # released with its connection
        assert first.wait(timeout=30) == 0
    with _serve(daemon) as second:
        # A new connection (the host restarted mcpx serve) that has not listened yet:
        # a change on the old filter's kind reaches nobody under the old id.
        reply = second.request(
            1, "tools/call", _with_meta(_gzip_resource("c2-b.txt.gz"), META), timeout=60
        )
        assert "result" in reply, reply
        assert _drain(second, 2.0) == []
        assert second.notifications == []


# --- the end of a listen stream -------------------------------------------------------


@pytest.fixture
def stoppable(tmp_path: Path) -> Iterator[Daemon]:
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    with running_daemon(tmp_path, servers) as d:
        yield d


@pytest.mark.obligation("S-SUB-6")
def test_a_stopping_daemon_ends_each_listen_with_its_response(
    stoppable: Daemon, sent_frames: FrameLog
) -> None:
    with _listening(stoppable.info["url"], "bye-1", {"resourcesListChanged": True}) as got:
        stoppable.proc.send_signal(signal.SIGTERM)  # the daemon this test started
        wait_until(lambda: len(got) >= 2)
        stoppable.proc.wait(timeout=30)
    ack, final = got[0], got[-1]
    sent_frames.sent(ack, MODERN)
    sent_frames.sent(final, MODERN, answering="subscriptions/listen")
    assert final["id"] == "bye-1"
    assert final["result"]["resultType"] == "complete"
    assert final["result"]["_meta"][SUB_ID] == "bye-1"
