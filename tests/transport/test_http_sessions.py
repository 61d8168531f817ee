"""The Streamable HTTP transport against a live server: sessions, resumption, the GET
stream and DELETE (the legacy revisions' stateful side)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpx.transport import (
    HttpStatusError,
    RequestFailed,
    open_streamable_http,
)
from mcpx.wire import MCP_PROTOCOL_VERSION
from transport.exchange import SSE, receive, request, result
from transport.http_server import TestServer

pytestmark = pytest.mark.anyio


@pytest.mark.obligation("C-HTTP-9", "C-HTTP-12")
async def test_session_id_is_captured_and_sent_back(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(1, "initialize"))
        await receive(t)
        sid = t.session_id
        assert sid is not None and sid in http.sessions
        assert t.describe() == {
            "transport": "http",
            "url": http.url,
            "sessionId": sid,
            "httpRequests": 1,  # one POST so far: the initialize
        }
        await t.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await t.send(request(2), SSE)
        for _ in range(3):
            await receive(t)
    assert [p.headers.get("mcp-session-id") for p in http.posts()] == [None, sid, sid]
    await http.until(lambda: f"delete:{sid}" in http.events)  # and ended on close


async def test_404_on_a_session_fails_the_request_and_clears_it(
    http: TestServer, client: Any
) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        t.session_id = "expired-session"
        await t.send(request(5))
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and failed.request_id == 5
        assert isinstance(failed.error, HttpStatusError)
        assert failed.error.status == 404 and failed.error.body == b"unknown session"
        assert t.session_id is None
        assert t.last_status(5) == 404
        await t.send(request(6, "initialize"))  # the session layer re-initializes
        assert await receive(t) == result(6, "initialize")
        assert t.session_id is not None
    assert "mcp-session-id" not in http.posts()[1].headers


async def test_a_late_echo_from_a_dead_session_is_not_adopted(
    http: TestServer, client: Any
) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(1, "initialize"))
        await receive(t)
        old = t.session_id
        await t.send(request(2, "hang"), SSE)  # carries the old id; the server echoes it
        await receive(t)
        t.session_id = None  # the session layer starts over
        await t.send(request(3))
        await receive(t)
        assert t.session_id is None
        assert old is not None
        assert await t.abort(2)


@pytest.mark.obligation("C-HTTP-14", "C-HTTP-18", "C-HTTP-19")
async def test_a_stream_with_event_ids_is_resumed_by_get(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(15, "resumable"), SSE)
        progress = await receive(t)
        assert isinstance(progress, dict) and progress["method"] == "notifications/progress"
        assert await receive(t) == result(15, "resumable")
    gets = [r for r in http.requests if r.method == "GET"]
    assert [g.headers.get("last-event-id") for g in gets] == ["r15-1"]
    assert gets[0].headers["accept"] == "text/event-stream"


@pytest.mark.obligation("C-HTTP-7", "C-HTTP-9", "C-HTTP-14", "C-HTTP-16")
async def test_the_listen_stream_delivers_pushed_frames(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(1, "initialize"))
        await receive(t)
        t.session_headers = {MCP_PROTOCOL_VERSION: "2025-06-18"}
        assert await t.open_listen_stream() is True
        assert t.listening
        assert await receive(t) == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
        }
        sid = t.session_id
    [get] = [r for r in http.requests if r.method == "GET"]
    assert get.headers["accept"] == "text/event-stream"
    assert get.headers["mcp-session-id"] == sid
    assert get.headers["mcp-protocol-version"] == "2025-06-18"
    await http.until(lambda: "get-disconnect" in http.events)
    [delete] = [r for r in http.requests if r.method == "DELETE"]
    assert delete.headers["mcp-protocol-version"] == "2025-06-18"


@pytest.mark.obligation("C-HTTP-13")
async def test_a_server_without_listen_stream_answers_405(http: TestServer, client: Any) -> None:
    http.get_mode = "405"
    async with open_streamable_http(http.url, client=client) as t:
        assert await t.open_listen_stream() is False
        assert not t.listening


@pytest.mark.obligation("C-HTTP-18")
async def test_the_listen_stream_resumes_with_last_event_id(http: TestServer, client: Any) -> None:
    http.get_mode = "drop"
    async with open_streamable_http(http.url, client=client) as t:
        assert await t.open_listen_stream() is True
        assert await receive(t) == {"jsonrpc": "2.0", "method": "notifications/first"}
        assert await receive(t) == {"jsonrpc": "2.0", "method": "notifications/after-resume"}
        assert t.listening
    gets = [r for r in http.requests if r.method == "GET"]
    assert [g.headers.get("last-event-id") for g in gets] == [None, "g-1"]


@pytest.mark.obligation("C-HTTP-12")
async def test_delete_405_is_ignored_and_no_session_no_delete(
    http: TestServer, client: Any
) -> None:
    http.delete_mode = "405"
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(1, "initialize"))
        await receive(t)
        sid = t.session_id
    assert f"delete:{sid}" in http.events
    http.reset()
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(2))
        await receive(t)
    assert not [r for r in http.requests if r.method == "DELETE"]
