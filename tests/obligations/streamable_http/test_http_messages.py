"""Streamable HTTP obligations (S-HTTP) of the daemon's /mcp endpoint, over real HTTP:
POST notifications and responses, legacy sessions and their ids, and 2026-07-28 requests
(header validation, ignored Last-Event-ID and Mcp-Session-Id, a modern GET, listen keep-alives).

The daemon is the package's one real daemon, ``daemon`` in this directory's conftest.py (the
demo upstream and the conformance fixture as a pass-through upstream); ``mcp`` is a JSON-only
client of it. Every frame a test reads is checked strictly against the host's revision
(``sent_frames``); the daemon's own trace of every frame it sent is checked at teardown.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from obligations.streamable_http.helpers import (
    BOTH,
    LEGACY_HTTP,
    META,
    _echo,
    _initialize,
    _parse,
    _session,
    _text,
)
from support.daemon import Daemon
from support.modern import MODERN, PROTOCOL_VERSION, modern_headers
from support.schemas import FrameLog

# -- POST: notifications and responses -------------------------------------------


@pytest.mark.obligation("S-HTTP-3")
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


@pytest.mark.obligation("S-HTTP-3")
def test_a_modern_notification_is_202_with_no_body(mcp: httpx.Client) -> None:
    cancelled = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 5, "_meta": META},
    }
    r = mcp.post("/mcp", json=cancelled, headers={"MCP-Protocol-Version": MODERN})
    assert (r.status_code, r.content) == (202, b"")
    assert "mcp-session-id" not in r.headers


@pytest.mark.obligation("S-HTTP-4")
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
    broken = b'{"jsonrpc": "2.0", "method"'
    r = mcp.post("/mcp", content=broken, headers={**headers, "Content-Type": "application/json"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32700)
    assert mcp.delete("/mcp", headers=headers).status_code == 200
    r = mcp.post("/mcp", json=note, headers=headers)
    assert r.status_code == 404


# -- sessions --------------------------------------------------------------------


@pytest.mark.obligation("S-HTTP-25", "S-HTTP-26")
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


@pytest.mark.obligation("S-HTTP-36")
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


@pytest.mark.obligation("S-HTTP-45", "S-HTTP-52")
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
        (modern_headers("tools/list", name="mcpx_call"), _echo("x"), META, -32020),
        # Mcp-Name says another tool than the body.
        (modern_headers("tools/call", name="mcpx_servers"), _echo("x"), META, -32020),
        # Mcp-Method missing.
        ({"MCP-Protocol-Version": MODERN, "Mcp-Name": "mcpx_call"}, _echo("x"), META, -32020),
        # A revision mcpx does not implement, in header and _meta alike.
        (
            {"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/call", "Mcp-Name": "x"},
            {"name": "x", "arguments": {}},
            {**META, PROTOCOL_VERSION: "2099-01-01"},
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
@pytest.mark.obligation("S-HTTP-46")
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


@pytest.mark.obligation("S-HTTP-48")
def test_a_quiet_listen_stream_gets_keepalive_comments(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    frame = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": META},
    }
    headers = {**modern_headers("subscriptions/listen"), "Accept": BOTH}
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


@pytest.mark.obligation("S-HTTP-49")
def test_last_event_id_is_ignored(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    frame = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": _echo("fresh", META)}
    headers = {**modern_headers("tools/call", name="mcpx_call"), "Last-Event-ID": "41"}
    r = mcp.post("/mcp", json=frame, headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"  # processed, nothing replayed
    sent_frames.sent(r.json(), MODERN, answering="tools/call")
    assert r.json()["id"] == 8 and _text(r.json()["result"]) == "fresh"


# S-HTTP-50 (dual-era: GET and DELETE are legacy-session traffic; a 2026-07-28 GET is 405)
@pytest.mark.obligation("S-HTTP-50")
def test_a_modern_get_is_405(mcp: httpx.Client) -> None:
    headers = _session(mcp, "2025-11-25")
    modern_get = {**headers, "MCP-Protocol-Version": MODERN, "Accept": "text/event-stream"}
    r = mcp.get("/mcp", headers=modern_get)  # even naming a live session
    assert r.status_code == 405
    r = mcp.get("/mcp", headers={"Accept": "text/event-stream"})  # no session: no stream
    assert r.status_code == 405
    assert mcp.delete("/mcp", headers=headers).status_code == 200


@pytest.mark.obligation("S-HTTP-51")
def test_a_modern_request_ignores_mcp_session_id(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    legacy = _session(mcp, "2025-11-25")
    frame = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": _echo("hi", META)}
    for sid in ("made-up-session", legacy["Mcp-Session-Id"]):
        headers = {**modern_headers("tools/call", name="mcpx_call"), "Mcp-Session-Id": sid}
        r = mcp.post("/mcp", json=frame, headers=headers)
        assert r.status_code == 200, r.text  # not 404 for an unknown session
        assert "mcp-session-id" not in r.headers  # neither minted nor echoed
        sent_frames.sent(r.json(), MODERN, answering="tools/call")
        assert _text(r.json()["result"]) == "hi"
    # The legacy session it named is untouched.
    ping = {"jsonrpc": "2.0", "id": 10, "method": "ping"}
    assert mcp.post("/mcp", json=ping, headers=legacy).json()["result"] == {}
    assert mcp.delete("/mcp", headers=legacy).status_code == 200
