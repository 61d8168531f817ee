"""Streamable HTTP obligations (S-HTTP) of the daemon's /mcp endpoint, over real HTTP: a
POST's event stream (its response last, concurrent calls kept apart), a legacy session's
standalone GET stream (only unrelated messages, no event ids, nothing replayed), and the
X-Accel-Buffering header of every event stream.

The daemon is the package's one real daemon, ``daemon`` in this directory's conftest.py (the
demo upstream, whose ``slow`` reports progress per step and logs when done, and the
conformance fixture as a pass-through upstream, whose ``test_trigger_tool_change`` makes mcpx
push ``tools/list_changed`` to legacy sessions' GET streams). ``transport.sseKeepAlive`` is
200 ms, so a slow answer becomes a stream quickly. Every frame a test reads is checked
strictly against the host's revision (``sent_frames``); the daemon's own trace of every frame
it sent is checked at teardown.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest

from obligations.streamable_http.helpers import (
    BOTH,
    LEGACY_HTTP,
    META,
    _parse,
    _session,
    _slow,
    _text,
)
from support.daemon import Daemon
from support.modern import MODERN, modern_headers
from support.schemas import FrameLog
from support.waiting import wait_until


class _GetStream(threading.Thread):
    """A legacy session's GET stream, read to its end on a thread of its own."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.url, self.headers = url, {**headers, "Accept": "text/event-stream"}
        self.lines: list[str] = []
        self.status = 0
        self.content_type = ""
        self.accel: str | None = None  # its X-Accel-Buffering header
        self.opened = threading.Event()

    def run(self) -> None:
        with (
            httpx.Client(base_url=self.url, timeout=60) as client,
            client.stream("GET", "/mcp", headers=self.headers) as r,
        ):
            self.status, self.content_type = r.status_code, r.headers.get("content-type", "")
            self.accel = r.headers.get("x-accel-buffering")
            for line in r.iter_lines():
                self.lines.append(line)
                self.opened.set()
        self.opened.set()

    def frames(self) -> list[dict[str, Any]]:
        return _parse(self.lines)[0]


# -- POST: a request's event stream ----------------------------------------------


def _stream_call(
    daemon: Daemon, frame: dict[str, Any], headers: dict[str, str]
) -> tuple[httpx.Response, list[str]]:
    with (
        httpx.Client(base_url=daemon.info["url"], timeout=60) as client,
        client.stream("POST", "/mcp", json=frame, headers={**headers, "Accept": BOTH}) as r,
    ):
        lines = list(r.iter_lines())  # to the end of the HTTP response
    return r, lines


@pytest.mark.obligation("S-HTTP-7", "S-HTTP-8", "S-HTTP-9")
@pytest.mark.parametrize("rev", [*LEGACY_HTTP, MODERN])
def test_a_call_stream_carries_its_response_last_and_then_ends(
    daemon: Daemon, mcp: httpx.Client, rev: str, sent_frames: FrameLog
) -> None:
    if rev == MODERN:
        headers = modern_headers("tools/call", name="mcpx_call")
        meta: dict[str, Any] = {**META, "progressToken": "p"}
    else:
        headers, meta = _session(mcp, rev), {"progressToken": "p"}
    frame = {"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": _slow(0.8, 2, meta)}
    r, lines = _stream_call(daemon, frame, headers)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    frames = _parse(lines)[0]
    for f in frames:
        sent_frames.sent(f, rev, answering="tools/call" if "id" in f else None)
    # Progress came first, on this stream, and the stream stayed open for the response.
    assert [f["method"] for f in frames[:-1]] == ["notifications/progress"] * 2
    assert frames[-1]["id"] == 41 and "slept 0.8 s" in _text(frames[-1]["result"])
    # The response was the last thing on it: after its event, only the blank line that
    # ends the event, then the HTTP response itself ended.
    last_data = max(i for i, line in enumerate(lines) if line.startswith("data: "))
    assert json.loads(lines[last_data][len("data: ") :])["id"] == 41
    assert all(not line for line in lines[last_data + 1 :])
    if rev != MODERN:
        assert mcp.delete("/mcp", headers=headers).status_code == 200


# S-HTTP-12, S-HTTP-13 (progress and responses; log lines: recorded reading)
@pytest.mark.obligation("S-HTTP-12", "S-HTTP-13")
@pytest.mark.parametrize("rev", ["2025-11-25", MODERN])
def test_concurrent_calls_each_stream_carries_only_its_own(
    daemon: Daemon, mcp: httpx.Client, rev: str, sent_frames: FrameLog
) -> None:
    # Upstream log lines are left out (no level set): they go to every call in flight on
    # the server, as the recorded reading "Upstream log lines that name no request..." says.
    if rev == MODERN:
        headers = modern_headers("tools/call", name="mcpx_call")
        base: dict[str, Any] = dict(META)
    else:
        headers, base = _session(mcp, rev), {}
    got: dict[str, list[dict[str, Any]]] = {}

    def call(token: str, rid: int, seconds: float) -> None:
        params = _slow(seconds, 3, {**base, "progressToken": token})
        frame = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
        _, lines = _stream_call(daemon, frame, headers)
        got[token] = _parse(lines)[0]

    callers = [
        threading.Thread(target=call, args=("left", 1, 0.9)),
        threading.Thread(target=call, args=("right", 2, 1.2)),
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(timeout=60)
    assert set(got) == {"left", "right"}
    for token, rid in (("left", 1), ("right", 2)):
        frames = got[token]
        for f in frames:
            sent_frames.sent(f, rev, answering="tools/call" if "id" in f else None)
        progress = [f["params"] for f in frames if f.get("method") == "notifications/progress"]
        assert [p["progress"] for p in progress] == [1, 2, 3]
        assert {p["progressToken"] for p in progress} == {token}
        # Only its own response, last; nothing else on the stream asks anything.
        assert [f.get("id") for f in frames] == [None, None, None, rid]
        assert all(f.get("method") == "notifications/progress" for f in frames[:-1])
    if rev != MODERN:
        assert mcp.delete("/mcp", headers=headers).status_code == 200


# -- GET: the standalone stream of a legacy session ------------------------------


@pytest.mark.obligation("S-HTTP-16", "S-HTTP-17", "S-HTTP-19")
def test_get_streams_carry_only_unrelated_messages_each_on_exactly_one_stream(
    daemon: Daemon, mcp: httpx.Client, sent_frames: FrameLog
) -> None:
    rev = "2025-11-25"
    headers = _session(mcp, rev, sent_frames)
    level = {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "info"}}
    assert mcp.post("/mcp", json=level, headers=headers).json()["result"] == {}
    streams = [_GetStream(daemon.info["url"], headers) for _ in range(2)]
    for stream in streams:
        stream.start()
    for stream in streams:
        assert stream.opened.wait(30)
        assert stream.status == 200 and stream.content_type.startswith("text/event-stream")
    # A call with progress and log lines while both GET streams are open: all of it
    # goes on the call's own stream.
    meta = {"progressToken": "mine"}
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": _slow(0.6, 2, meta)}
    _, lines = _stream_call(daemon, call, headers)
    frames = _parse(lines)[0]
    methods = [f.get("method") for f in frames]
    assert methods.count("notifications/progress") == 2 and "notifications/message" in methods
    assert frames[-1]["id"] == 3
    for f in frames:
        sent_frames.sent(f, rev, answering="tools/call" if "id" in f else None)
    # A message unrelated to any request: the pass-through server's tool list changed.
    trigger = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "test_trigger_tool_change", "arguments": {}},
    }
    done = mcp.post("/mcp", json=trigger, headers=headers)
    assert "result" in done.json(), done.text

    def changes() -> int:
        return sum(
            f.get("method") == "notifications/tools/list_changed"
            for s in streams
            for f in s.frames()
        )

    wait_until(lambda: changes() >= 1)
    time.sleep(1.0)  # a second copy, were one sent, would be here by now
    # Ending the session ends its streams.
    assert mcp.delete("/mcp", headers=headers).status_code == 200
    for stream in streams:
        stream.join(timeout=30)
        assert not stream.is_alive()
    assert changes() == 1  # on exactly one of the two streams
    for stream in streams:
        for f in stream.frames():
            sent_frames.sent(f, rev)
            assert "id" not in f  # no response (and no request) on a fresh GET stream
            assert f["method"] == "notifications/tools/list_changed"


# S-HTTP-10, S-HTTP-11, S-HTTP-18, S-HTTP-20, S-HTTP-21, S-HTTP-22 (not offered: no event ids)
@pytest.mark.obligation(
    "S-HTTP-10", "S-HTTP-11", "S-HTTP-18", "S-HTTP-20", "S-HTTP-21", "S-HTTP-22"
)
def test_events_carry_no_ids_and_nothing_is_replayed(
    daemon: Daemon, mcp: httpx.Client, sent_frames: FrameLog
) -> None:
    # Events carry no ids, so nothing is resumable: no priming event, no retry advice, and
    # a GET with Last-Event-ID replays nothing.
    rev = "2025-11-25"
    headers = _session(mcp, rev, sent_frames)
    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": _slow(0.6, 2, {"progressToken": "t"}),
    }
    r, lines = _stream_call(daemon, call, headers)
    assert r.headers["content-type"].startswith("text/event-stream")
    frames, comments, fields = _parse(lines)
    assert frames[-1]["id"] == 5 and comments
    # No event ids (nothing to prime a reconnection with), no retry advice.
    assert set(fields) == {"event: message"}, fields
    for f in frames:
        sent_frames.sent(f, rev, answering="tools/call" if "id" in f else None)
    # A GET that tries to resume: a fresh stream, which replays nothing of the POST's.
    resume = _GetStream(daemon.info["url"], {**headers, "Last-Event-ID": "1"})
    plain = _GetStream(daemon.info["url"], headers)
    for stream in (resume, plain):
        stream.start()
        assert stream.opened.wait(30)
        assert stream.status == 200
    # Several keep-alives long: anything replayed would have come before them.
    wait_until(lambda: all(len(_parse(s.lines)[1]) >= 3 for s in (resume, plain)))
    assert mcp.delete("/mcp", headers=headers).status_code == 200
    for stream in (resume, plain):
        stream.join(timeout=30)
        assert not stream.is_alive()
        got, comments, fields = _parse(stream.lines)
        assert stream.lines[0].startswith(":")  # opened with a comment, not an event
        assert comments and not fields and not got, stream.lines


# -- stream headers -------------------------------------------------------------


@pytest.mark.obligation("S-HTTP-47")
def test_every_event_stream_says_x_accel_buffering_no(
    daemon: Daemon, mcp: httpx.Client, sent_frames: FrameLog
) -> None:
    # A POST's slow answer turned into a stream (2026-07-28 and legacy), a
    # subscriptions/listen stream, and a legacy session's GET stream: each tells a
    # buffering reverse proxy not to hold its events back.
    seen: dict[str, httpx.Headers] = {}
    modern = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": _slow(0.6, 1, META)}
    r, lines = _stream_call(daemon, modern, modern_headers("tools/call", name="mcpx_call"))
    seen["modern call"] = r.headers
    sent_frames.sent(_parse(lines)[0][-1], MODERN, answering="tools/call")
    legacy = _session(mcp, "2025-11-25", sent_frames)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": _slow(0.6, 1)}
    r, lines = _stream_call(daemon, call, legacy)
    seen["legacy call"] = r.headers
    sent_frames.sent(_parse(lines)[0][-1], "2025-11-25", answering="tools/call")
    listen = {
        "jsonrpc": "2.0",
        "id": "listen-47",
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": META},
    }
    listen_headers = {**modern_headers("subscriptions/listen"), "Accept": BOTH}
    with (
        httpx.Client(base_url=daemon.info["url"], timeout=60) as client,
        client.stream("POST", "/mcp", json=listen, headers=listen_headers) as r,
    ):
        seen["listen"] = r.headers
        for line in r.iter_lines():
            if line.startswith("data: "):
                sent_frames.sent(json.loads(line[len("data: ") :]), MODERN)
                break
    get = _GetStream(daemon.info["url"], legacy)
    get.start()
    assert get.opened.wait(30)
    assert mcp.delete("/mcp", headers=legacy).status_code == 200
    get.join(timeout=30)
    for stream in ("modern call", "legacy call", "listen"):
        assert seen[stream]["content-type"].startswith("text/event-stream"), stream
        assert seen[stream].get("x-accel-buffering") == "no", (stream, dict(seen[stream]))
    assert get.content_type.startswith("text/event-stream")
    assert get.accel == "no", get.accel
