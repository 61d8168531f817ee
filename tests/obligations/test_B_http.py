"""Streamable HTTP obligations (S-HTTP) of the daemon's /mcp endpoint, over real HTTP.

One real daemon for the module: the demo upstream (``slow`` reports progress per step and
logs when done) and the conformance fixture as a pass-through upstream (its
``test_trigger_tool_change`` makes mcpx push ``tools/list_changed`` to legacy sessions'
GET streams). ``transport.sseKeepAlive`` is 200 ms, so a slow answer becomes a stream
quickly. A second daemon (``fixes``) adds the official SDK's fixture server (it asks
``roots/list`` and elicits mid-call) and ``tape``, a stdlib upstream that logs every line
mcpx writes to it. Every frame a test reads is checked strictly against the host's revision
(``sent_frames``); each daemon's own trace of every frame it sent is checked at teardown.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.peers import FIXTURES, peer_python
from support.schemas import FrameLog

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
BOTH = "application/json, text/event-stream"
JSON_ONLY = {"Accept": "application/json"}
LEGACY_HTTP = ["2025-03-26", "2025-06-18", "2025-11-25"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
        "conformance": {
            "command": str(peer_python("2.3.0")),
            "args": [str(FIXTURES / "conformance_server.py"), "--transport", "stdio"],
            "protocol": "force-initialize",
        },
    }
    settings = {"transport.sseKeepAlive": "200ms", "mcp.passthrough": ["conformance"]}
    with running_daemon(tmp_path_factory.mktemp("obl-http"), servers, settings) as d:
        yield d


@pytest.fixture
def mcp(daemon: Daemon) -> Iterator[httpx.Client]:
    # JSON unless a test asks for streams: a slow reply to "*/*" may become a stream.
    with httpx.Client(base_url=daemon.info["url"], timeout=60, headers=JSON_ONLY) as client:
        yield client


# -- helpers -------------------------------------------------------------------


def _initialize(mcp: httpx.Client, rev: str, rid: int = 1) -> httpx.Response:
    params = {
        "protocolVersion": rev,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    return mcp.post(
        "/mcp", json={"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}
    )


def _session(mcp: httpx.Client, rev: str, sent_frames: FrameLog | None = None) -> dict[str, str]:
    r = _initialize(mcp, rev)
    assert r.status_code == 200, r.text
    if sent_frames is not None:
        sent_frames.sent(r.json(), rev, answering="initialize")
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"]}
    if rev != "2025-03-26":  # the header exists from 2025-06-18 on
        headers["MCP-Protocol-Version"] = rev
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    return headers


def _slow(seconds: float, steps: int, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    args = {"server": "demo", "tool": "slow", "arguments": {"seconds": seconds, "steps": steps}}
    params: dict[str, Any] = {"name": "mcpx_call", "arguments": args}
    if meta is not None:
        params["_meta"] = meta
    return params


def _echo(text: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    args = {"server": "demo", "tool": "echo", "arguments": {"text": text}}
    params: dict[str, Any] = {"name": "mcpx_call", "arguments": args}
    if meta is not None:
        params["_meta"] = meta
    return params


def _modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def _text(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def _parse(lines: list[str]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """An event stream's data frames, its comment lines, and its other field lines."""
    frames, comments, fields = [], [], []
    for line in lines:
        if line.startswith(":"):
            comments.append(line)
        elif line.startswith("data: "):
            frames.append(json.loads(line[len("data: ") :]))
        elif line:
            fields.append(line)
    return frames, comments, fields


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


def _wait(predicate: Any, limit: float = 30) -> bool:
    deadline = time.monotonic() + limit
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(predicate())


# -- POST: notifications and responses -------------------------------------------


# S-HTTP-3
@pytest.mark.parametrize("rev", LEGACY_HTTP)
def test_accepted_notifications_and_responses_are_202_with_no_body(
    mcp: httpx.Client, rev: str, sent_frames: FrameLog
) -> None:
    headers = _session(mcp, rev, sent_frames)
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    r = mcp.post("/mcp", json=note, headers=headers)
    assert (r.status_code, r.content) == (202, b"")
    cancelled = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 99, "reason": "changed my mind"},
    }
    r = mcp.post("/mcp", json=cancelled, headers=headers)
    assert (r.status_code, r.content) == (202, b"")
    # A response (to a question mcpx never asked: accepted, and nothing to say).
    answer = {"jsonrpc": "2.0", "id": -77, "result": {"roots": []}}
    r = mcp.post("/mcp", json=answer, headers=headers)
    assert (r.status_code, r.content) == (202, b"")
    error = {"jsonrpc": "2.0", "id": -78, "error": {"code": -1, "message": "declined"}}
    r = mcp.post("/mcp", json=error, headers=headers)
    assert (r.status_code, r.content) == (202, b"")
    assert mcp.delete("/mcp", headers=headers).status_code == 200


# S-HTTP-3
def test_a_modern_notification_is_202_with_no_body(mcp: httpx.Client) -> None:
    cancelled = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 5, "_meta": META},
    }
    r = mcp.post("/mcp", json=cancelled, headers={"MCP-Protocol-Version": MODERN})
    assert (r.status_code, r.content) == (202, b"")
    assert "mcp-session-id" not in r.headers


# S-HTTP-4
def test_notifications_and_responses_that_cannot_be_accepted_get_an_http_error(
    mcp: httpx.Client, sent_frames: FrameLog
) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    answer = {"jsonrpc": "2.0", "id": -1, "result": {}}
    for frame in (note, answer):
        # No session: nothing it could belong to.
        r = mcp.post("/mcp", json=frame)
        assert r.status_code == 400, r.text
        assert r.json().get("id") is None and r.json()["error"]["code"] == -32600
        sent_frames.sent(r.json(), "2025-11-25")
        # A session that does not exist (or ended).
        r = mcp.post("/mcp", json=frame, headers={"Mcp-Session-Id": "no-such-session"})
        assert r.status_code == 404, r.text
        assert r.json().get("id") is None
        sent_frames.sent(r.json(), "2025-11-25")
    headers = _session(mcp, "2025-11-25", sent_frames)
    # Not a JSON-RPC message at all.
    r = mcp.post("/mcp", json={"jsonrpc": "1.0", "method": "x"}, headers=headers)
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32600)
    assert r.json().get("id") is None
    r = mcp.post("/mcp", content=b'{"jsonrpc": "2.0", "method"', headers=headers)
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32700)
    assert mcp.delete("/mcp", headers=headers).status_code == 200
    r = mcp.post("/mcp", json=note, headers=headers)
    assert r.status_code == 404


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


# S-HTTP-7, S-HTTP-8, S-HTTP-9
@pytest.mark.parametrize("rev", [*LEGACY_HTTP, MODERN])
def test_a_call_stream_carries_its_response_last_and_then_ends(
    daemon: Daemon, mcp: httpx.Client, rev: str, sent_frames: FrameLog
) -> None:
    if rev == MODERN:
        headers = _modern_headers("tools/call", "mcpx_call")
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
@pytest.mark.parametrize("rev", ["2025-11-25", MODERN])
def test_concurrent_calls_each_stream_carries_only_its_own(
    daemon: Daemon, mcp: httpx.Client, rev: str, sent_frames: FrameLog
) -> None:
    # Upstream log lines are left out (no level set): they go to every call in flight on
    # the server, as the recorded reading "Upstream log lines that name no request..." says.
    if rev == MODERN:
        headers = _modern_headers("tools/call", "mcpx_call")
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


# S-HTTP-16, S-HTTP-17, S-HTTP-19
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

    assert _wait(lambda: changes() >= 1)
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
    time.sleep(0.5)  # several keep-alives long
    assert mcp.delete("/mcp", headers=headers).status_code == 200
    for stream in (resume, plain):
        stream.join(timeout=30)
        assert not stream.is_alive()
        got, comments, fields = _parse(stream.lines)
        assert stream.lines[0].startswith(":")  # opened with a comment, not an event
        assert comments and not fields and not got, stream.lines


# -- sessions --------------------------------------------------------------------


# S-HTTP-25, S-HTTP-26
def test_only_initialize_assigns_a_session_id_and_ids_are_unguessable(
    mcp: httpx.Client, sent_frames: FrameLog
) -> None:
    ids = []
    for i in range(200):
        r = _initialize(mcp, "2025-11-25", rid=i)
        assert r.status_code == 200 and "result" in r.json()
        ids.append(r.headers["mcp-session-id"])
    sent_frames.sent(r.json(), "2025-11-25", answering="initialize")
    assert len(set(ids)) == len(ids)  # globally unique
    for sid in ids:
        # At least 32 URL-safe base64 characters: 192 random bits.
        assert re.fullmatch(r"[A-Za-z0-9_-]{32,}", sid), sid
    # Not sequential nor time-based: no two share a 6-character prefix or suffix, and
    # together they use nearly the whole alphabet.
    assert len({sid[:6] for sid in ids}) == len(ids)
    assert len({sid[-6:] for sid in ids}) == len(ids)
    assert len(set("".join(ids))) >= 60
    # No other message gets one: not a request in the session, nor a notification.
    headers = {"Mcp-Session-Id": ids[0], "MCP-Protocol-Version": "2025-11-25"}
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=headers)
    assert r.json()["result"] == {}
    assert r.headers.get("mcp-session-id") is None
    sent_frames.sent(r.json(), "2025-11-25", answering="ping")
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert "mcp-session-id" not in mcp.post("/mcp", json=note, headers=headers).headers
    # A failed handshake mints none.
    bad = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": ["2025-11-25"]}
    r = mcp.post("/mcp", json=bad)
    assert "error" in r.json() and "mcp-session-id" not in r.headers
    sent_frames.sent(r.json(), "2025-11-25")
    for sid in ids:
        assert mcp.delete("/mcp", headers={"Mcp-Session-Id": sid}).status_code == 200


# -- 2026-07-28 ------------------------------------------------------------------


# S-HTTP-36
def test_a_request_without_the_version_header(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    # Modern _meta without MCP-Protocol-Version: a header-validation failure.
    frame = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    r = mcp.post("/mcp", json=frame, headers={"Mcp-Method": "tools/list"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32020)
    assert "MCP-Protocol-Version" in r.json()["error"]["message"]
    sent_frames.sent(r.json(), MODERN)
    # Without modern _meta it is a legacy request, served as 2025-03-26 would be.
    headers = _session(mcp, "2025-03-26", sent_frames)
    assert "MCP-Protocol-Version" not in headers
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers)
    assert r.status_code == 200 and "mcpx_call" in {t["name"] for t in r.json()["result"]["tools"]}
    sent_frames.sent(r.json(), "2025-03-26", answering="tools/list")
    assert mcp.delete("/mcp", headers=headers).status_code == 200


# S-HTTP-45, S-HTTP-52
def test_validation_failures_are_400_with_a_modern_json_rpc_error(
    mcp: httpx.Client, sent_frames: FrameLog
) -> None:
    def post(headers: dict[str, str], params: dict[str, Any], meta: Any = META) -> httpx.Response:
        frame = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {**params, "_meta": meta},
        }
        return mcp.post("/mcp", json=frame, headers=headers)

    cases = [
        # Mcp-Method says another method than the body.
        (_modern_headers("tools/list", "mcpx_call"), _echo("x"), META, -32020),
        # Mcp-Name says another tool than the body.
        (_modern_headers("tools/call", "mcpx_servers"), _echo("x"), META, -32020),
        # Mcp-Method missing.
        ({"MCP-Protocol-Version": MODERN, "Mcp-Name": "mcpx_call"}, _echo("x"), META, -32020),
        # A revision mcpx does not implement, in header and _meta alike.
        (
            {"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/call", "Mcp-Name": "x"},
            {"name": "x", "arguments": {}},
            {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"},
            -32022,
        ),
    ]
    for headers, params, meta, code in cases:
        r = post(headers, params, meta)
        assert r.status_code == 400, r.text
        assert r.headers["content-type"].startswith("application/json")
        body = r.json()  # a parseable JSON-RPC error, so a dual-era client does not fall back
        assert body["jsonrpc"] == "2.0" and body["id"] == 7
        assert body["error"]["code"] == code, body
        sent_frames.sent(body, MODERN)
    # -32022 says what would work.
    assert MODERN in body["error"]["data"]["supported"]
    assert body["error"]["data"]["requested"] == "2099-01-01"


# S-HTTP-46 (mcpx routes on the body: mirrored headers of a legacy request are not trusted)
def test_legacy_requests_are_not_routed_by_mirrored_headers(
    mcp: httpx.Client, sent_frames: FrameLog
) -> None:
    headers = _session(mcp, "2025-06-18", sent_frames)
    lying = {**headers, "Mcp-Method": "tools/list", "Mcp-Name": "mcpx_servers"}
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": _echo("by the body")}
    r = mcp.post("/mcp", json=call, headers=lying)
    assert r.status_code == 200
    sent_frames.sent(r.json(), "2025-06-18", answering="tools/call")
    assert _text(r.json()["result"]) == "by the body"
    assert mcp.delete("/mcp", headers=headers).status_code == 200


# S-HTTP-48
def test_a_quiet_listen_stream_gets_keepalive_comments(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    frame = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": META},
    }
    headers = {**_modern_headers("subscriptions/listen"), "Accept": BOTH}
    seen: list[str] = []
    with (
        httpx.Client(base_url=daemon.info["url"], timeout=60) as client,
        client.stream("POST", "/mcp", json=frame, headers=headers) as r,
    ):
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            seen.append(line)
            if sum(s.startswith(":") for s in seen) >= 3:
                break
    frames, comments, _ = _parse(seen)
    assert frames[0]["method"] == "notifications/subscriptions/acknowledged"
    sent_frames.sent(frames[0], MODERN)
    assert len(comments) == 3  # nothing to say, yet the stream is kept alive


# S-HTTP-49
def test_last_event_id_is_ignored(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    frame = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": _echo("fresh", META)}
    headers = {**_modern_headers("tools/call", "mcpx_call"), "Last-Event-ID": "41"}
    r = mcp.post("/mcp", json=frame, headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"  # processed, nothing replayed
    sent_frames.sent(r.json(), MODERN, answering="tools/call")
    assert r.json()["id"] == 8 and _text(r.json()["result"]) == "fresh"


# S-HTTP-50 (dual-era: GET and DELETE are legacy-session traffic; a 2026-07-28 GET is 405)
def test_a_modern_get_is_405(mcp: httpx.Client) -> None:
    headers = _session(mcp, "2025-11-25")
    modern_get = {**headers, "MCP-Protocol-Version": MODERN, "Accept": "text/event-stream"}
    r = mcp.get("/mcp", headers=modern_get)  # even naming a live session
    assert r.status_code == 405
    r = mcp.get("/mcp", headers={"Accept": "text/event-stream"})  # no session: no stream
    assert r.status_code == 405
    assert mcp.delete("/mcp", headers=headers).status_code == 200


# S-HTTP-51
def test_a_modern_request_ignores_mcp_session_id(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    legacy = _session(mcp, "2025-11-25")
    frame = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": _echo("hi", META)}
    for sid in ("made-up-session", legacy["Mcp-Session-Id"]):
        headers = {**_modern_headers("tools/call", "mcpx_call"), "Mcp-Session-Id": sid}
        r = mcp.post("/mcp", json=frame, headers=headers)
        assert r.status_code == 200, r.text  # not 404 for an unknown session
        assert "mcp-session-id" not in r.headers  # neither minted nor echoed
        sent_frames.sent(r.json(), MODERN, answering="tools/call")
        assert _text(r.json()["result"]) == "hi"
    # The legacy session it named is untouched.
    ping = {"jsonrpc": "2.0", "id": 10, "method": "ping"}
    assert mcp.post("/mcp", json=ping, headers=legacy).json()["result"] == {}
    assert mcp.delete("/mcp", headers=legacy).status_code == 200


# -- fixes: stream headers, 2025-03-26 batches, cancellation, initialized ---------------

# A legacy stdio upstream (standard library only) that appends every line it reads to the
# log its first argument names; its tool ``wait`` is never answered (only a cancel ends it).
TAPE = """
import json, sys

LOG = sys.argv[1]
WAIT = {"name": "wait", "inputSchema": {"type": "object"}}


def send(frame):
    sys.stdout.write(json.dumps(frame) + "\\n")
    sys.stdout.flush()


for line in sys.stdin:
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(line)
    frame = json.loads(line)
    method, rid = frame.get("method"), frame.get("id")
    if method is None or rid is None or method == "tools/call":
        continue
    if method == "initialize":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tape", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [WAIT]}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": "Method not found: " + method}
        send({"jsonrpc": "2.0", "id": rid, "error": error})
        continue
    send({"jsonrpc": "2.0", "id": rid, "result": result})
"""


@pytest.fixture(scope="module")
def fixes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """The demo, the official SDK's fixture server (it asks questions mid-call) and the
    recording ``tape`` upstream. A question waits in the broker at most 60 s."""
    tmp = tmp_path_factory.mktemp("obl-http-fixes")
    script = tmp / "tape.py"
    script.write_text(TAPE)
    servers = {
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
        "sdk": sdk_entry("1.23.3"),
        "tape": {"command": sys.executable, "args": [str(script), str(tmp / "tape.jsonl")]},
    }
    settings = {"transport.sseKeepAlive": "200ms", "proto.askTimeout": "60s"}
    with running_daemon(tmp, servers, settings) as d:
        yield d


def _tape(daemon: Daemon) -> list[dict[str, Any]]:
    """Every frame the tape upstream has read, in order."""
    log = daemon.home.parent / "tape.jsonl"
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def _in_flight(daemon: Daemon, server: str) -> int:
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    return sum(i["inFlight"] for s in servers if s["name"] == server for i in s["instances"])


def _call(server: str, tool: str, **arguments: Any) -> dict[str, Any]:
    args = {"server": server, "tool": tool, "arguments": arguments}
    return {"name": "mcpx_call", "arguments": args}


def _legacy(mcp: httpx.Client, rev: str, caps: dict[str, Any], initialized: bool) -> dict[str, str]:
    """A legacy session at ``rev`` that declared ``caps``; initialized only if asked to."""
    params = {"protocolVersion": rev, "capabilities": caps}
    params["clientInfo"] = {"name": "t", "version": "1"}
    frame = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    r = mcp.post("/mcp", json=frame, headers=JSON_ONLY)
    assert r.status_code == 200 and r.json()["result"]["protocolVersion"] == rev, r.text
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"]}
    if rev != "2025-03-26":
        headers["MCP-Protocol-Version"] = rev
    if initialized:
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    return headers


class _Streamed(threading.Thread):
    """A POST whose answer may become an event stream, read on a thread of its own: each
    frame as it comes (``frames``); a request from mcpx on it is handed to ``answer``."""

    def __init__(self, url: str, frame: dict[str, Any], headers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.url, self.frame = url, frame
        self.headers = {**headers, "Accept": BOTH}
        self.frames: list[dict[str, Any]] = []
        self.status, self.content_type, self.body = 0, "", b""

    def run(self) -> None:
        with (
            httpx.Client(base_url=self.url, timeout=120) as client,
            client.stream("POST", "/mcp", json=self.frame, headers=self.headers) as r,
        ):
            self.status, self.content_type = r.status_code, r.headers.get("content-type", "")
            if not self.content_type.startswith("text/event-stream"):
                self.body = r.read()
                if self.body:
                    self.frames.append(json.loads(self.body))
                return
            for line in r.iter_lines():
                if line.startswith("data: "):
                    self.frames.append(json.loads(line[len("data: ") :]))

    def requests(self) -> list[dict[str, Any]]:
        return [f for f in self.frames if "method" in f and "id" in f]


# S-HTTP-47
def test_every_event_stream_says_x_accel_buffering_no(
    daemon: Daemon, mcp: httpx.Client, sent_frames: FrameLog
) -> None:
    # A POST's slow answer turned into a stream (2026-07-28 and legacy), a
    # subscriptions/listen stream, and a legacy session's GET stream: each tells a
    # buffering reverse proxy not to hold its events back.
    seen: dict[str, httpx.Headers] = {}
    modern = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": _slow(0.6, 1, META)}
    r, lines = _stream_call(daemon, modern, _modern_headers("tools/call", "mcpx_call"))
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
    listen_headers = {**_modern_headers("subscriptions/listen"), "Accept": BOTH}
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


def _answered(call: _Streamed, rid: Any) -> dict[str, Any]:
    """The call's response, once its POST has ended."""
    call.join(timeout=60)
    assert not call.is_alive(), f"no answer to {rid} yet: {call.frames}"
    [answer] = [f for f in call.frames if f.get("id") == rid and "method" not in f]
    return answer


# S-HTTP-6 (2025-03-26: a batch of notifications, and batches of responses)
def test_a_2025_03_26_batch_of_notifications_or_responses_is_acted_on(
    fixes: Daemon, sent_frames: FrameLog
) -> None:
    rev = "2025-03-26"
    url = fixes.info["url"]
    with httpx.Client(base_url=url, timeout=120) as mcp:
        headers = _legacy(mcp, rev, {"roots": {}}, initialized=False)
        # notifications/initialized in a batch: accepted, and dispatched (the host is put
        # the upstream's roots/list below only because it was: S-LIFE-6).
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        r = mcp.post("/mcp", json=[note], headers=headers)
        assert (r.status_code, r.content) == (202, b"")
        # The host answers mcpx's roots/list with a batch: first a result, then an error.
        roots = {"roots": [{"uri": "file:///batched", "name": "b"}]}
        refusal = {"code": -32603, "message": "no roots today"}
        for rid, reply in ((5, {"result": roots}), (6, {"error": refusal})):
            frame = {"jsonrpc": "2.0", "id": rid, "method": "tools/call"}
            call = _Streamed(url, {**frame, "params": _call("sdk", "roots")}, headers)
            call.start()
            assert _wait(lambda c=call: bool(c.requests()) or not c.is_alive(), 60)
            [asked] = call.requests()
            sent_frames.sent(asked, rev)
            assert asked["method"] == "roots/list", asked
            batch = [{"jsonrpc": "2.0", "id": asked["id"], **reply}]
            r = mcp.post("/mcp", json=batch, headers=headers)
            assert (r.status_code, r.content) == (202, b"")
            answer = _answered(call, rid)
            sent_frames.sent(answer, rev, answering="tools/call")
            text = answer["result"]["content"][0]["text"]
            if "result" in reply:
                assert json.loads(text) == [{"uri": "file:///batched", "name": "b"}], answer
            else:  # the upstream got the host's error (its tool failed on it)
                assert answer["result"]["isError"] is True and "no roots today" in text, answer
        assert mcp.delete("/mcp", headers=headers).status_code == 200


# S-CANC-1 (a legacy /mcp session's notifications/cancelled; 2025-03-26: in a batch,
# S-HTTP-6)
@pytest.mark.parametrize("rev", LEGACY_HTTP)
def test_a_legacy_sessions_cancel_stops_its_request_and_its_post_gets_an_empty_202(
    fixes: Daemon, rev: str, sent_frames: FrameLog
) -> None:
    url = fixes.info["url"]
    got: list[httpx.Response] = []
    with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as mcp:
        headers = _legacy(mcp, rev, {}, initialized=True)
        frame = {"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call", "params": _slow(60, 1)}

        def post() -> None:
            with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as client:
                got.append(client.post("/mcp", json=frame, headers=headers))

        caller = threading.Thread(target=post, daemon=True)
        caller.start()
        assert _wait(lambda: _in_flight(fixes, "demo") == 1, 60)
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "slow-1", "reason": "no longer needed"},
        }
        r = mcp.post("/mcp", json=[cancel] if rev == "2025-03-26" else cancel, headers=headers)
        assert (r.status_code, r.content) == (202, b"")
        # The withdrawn request's POST ends at once, with no answer: an empty 202.
        caller.join(timeout=30)
        assert not caller.is_alive(), "the cancelled request is still being served"
        [answer] = got
        assert (answer.status_code, answer.content) == (202, b""), answer.text
        # Its upstream call stopped too, long before its 60 s.
        assert _wait(lambda: _in_flight(fixes, "demo") == 0, 30)
        # The session goes on.
        echo = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": _echo("after")}
        r = mcp.post("/mcp", json=echo, headers=headers)
        sent_frames.sent(r.json(), rev, answering="tools/call")
        assert _text(r.json()["result"]) == "after"
        assert mcp.delete("/mcp", headers=headers).status_code == 200


# S-CANC-1
def test_a_cancelled_legacy_request_stream_ends_without_a_response(
    fixes: Daemon, sent_frames: FrameLog
) -> None:
    rev = "2025-11-25"
    url = fixes.info["url"]
    with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as mcp:
        headers = _legacy(mcp, rev, {}, initialized=True)
        params = _slow(60, 120, {"progressToken": "going"})
        frame = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
        call = _Streamed(url, frame, headers)
        call.start()
        assert _wait(lambda: bool(call.frames) or not call.is_alive(), 60)
        assert call.content_type.startswith("text/event-stream"), call.content_type
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        r = mcp.post("/mcp", json=cancel, headers=headers)
        assert (r.status_code, r.content) == (202, b"")
        call.join(timeout=30)
        assert not call.is_alive(), "the cancelled request's stream did not end"
        # Only progress came on it: no response (neither result nor error) for request 7.
        assert call.frames and all(
            f.get("method") == "notifications/progress" for f in call.frames
        ), call.frames
        for f in call.frames:
            sent_frames.sent(f, rev)
        assert _wait(lambda: _in_flight(fixes, "demo") == 0, 30)
        assert mcp.delete("/mcp", headers=headers).status_code == 200


# S-CANC-1 (the upstream call is withdrawn as well: the upstream is told)
def test_a_legacy_sessions_cancel_reaches_the_upstream(fixes: Daemon) -> None:
    url = fixes.info["url"]
    got: list[httpx.Response] = []
    with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as mcp:
        headers = _legacy(mcp, "2025-06-18", {}, initialized=True)
        frame = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": _call("tape", "wait")}

        def post() -> None:
            with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as client:
                got.append(client.post("/mcp", json=frame, headers=headers))

        caller = threading.Thread(target=post, daemon=True)
        caller.start()
        calls: list[dict[str, Any]] = []

        def called() -> bool:
            calls[:] = [f for f in _tape(fixes) if f.get("method") == "tools/call"]
            return bool(calls)

        assert _wait(called, 60)
        [upstream_call] = calls
        assert upstream_call["params"]["name"] == "wait", upstream_call
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
        assert mcp.post("/mcp", json=cancel, headers=headers).status_code == 202
        caller.join(timeout=30)
        assert not caller.is_alive(), "the cancelled request is still being served"
        assert (got[0].status_code, got[0].content) == (202, b"")
        assert mcp.delete("/mcp", headers=headers).status_code == 200

    def told() -> bool:
        return any(
            f.get("method") == "notifications/cancelled"
            and f["params"]["requestId"] == upstream_call["id"]
            for f in _tape(fixes)
        )

    assert _wait(told, 30), _tape(fixes)


# S-LIFE-6
def test_a_legacy_http_session_is_put_questions_only_once_initialized(
    fixes: Daemon, sent_frames: FrameLog
) -> None:
    rev = "2025-11-25"
    url = fixes.info["url"]
    with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as mcp:
        headers = _legacy(mcp, rev, {"elicitation": {}}, initialized=False)
        # Initialized withheld: the question goes to the broker, none on the host's stream.
        frame = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
        call = _Streamed(url, {**frame, "params": _call("sdk", "ask", question="b4?")}, headers)
        call.start()
        question = fixes.open_question("sdk (via mcpx) asks: b4?")
        assert question["method"] == "elicitation/create", question
        with fixes.http() as api:
            assert api.post(f"/v1/questions/{question['id']}/cancel").status_code == 200
        answer = _answered(call, 3)
        sent_frames.sent(answer, rev, answering="tools/call")
        assert call.requests() == [], call.frames
        assert _text(answer["result"]) == "(cancel)", answer
        # Initialized: the same question is put to the host, on its POST's stream.
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
        frame = {"jsonrpc": "2.0", "id": 4, "method": "tools/call"}
        call = _Streamed(url, {**frame, "params": _call("sdk", "ask", question="now?")}, headers)
        call.start()
        assert _wait(lambda: bool(call.requests()) or not call.is_alive(), 60)
        [asked] = call.requests()
        sent_frames.sent(asked, rev)
        assert asked["method"] == "elicitation/create", asked
        assert asked["params"]["message"] == "sdk (via mcpx) asks: now?", asked
        reply = {"action": "accept", "content": {"answer": "host"}}
        r = mcp.post(
            "/mcp", json={"jsonrpc": "2.0", "id": asked["id"], "result": reply}, headers=headers
        )
        assert r.status_code == 202
        answer = _answered(call, 4)
        sent_frames.sent(answer, rev, answering="tools/call")
        assert _text(answer["result"]) == "host", answer
        assert mcp.delete("/mcp", headers=headers).status_code == 200
