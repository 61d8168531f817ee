"""The 2024-11-05 HTTP+SSE transport against a live server (``http_server.py``)."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from mcpx.transport import (
    HttpStatusError,
    Inbound,
    LegacySseTransport,
    RequestFailed,
    TransportClosed,
    open_legacy_sse,
)
from transport.http_server import TestServer

pytestmark = pytest.mark.anyio


def request(rid: int, method: str = "tools/list") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {}}


def result(rid: int, method: str = "tools/list") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"method": method, "params": {}}}


async def receive(t: LegacySseTransport) -> Inbound:
    with anyio.fail_after(10):
        return await t.receive()


@pytest.mark.obligation("C-SSE-1", "C-SSE-2")
async def test_round_trip_over_the_endpoint(http: TestServer, client: Any) -> None:
    headers = {"Authorization": "Bearer legacy"}
    async with open_legacy_sse(f"{http.base}/sse", headers=headers, client=client) as t:
        endpoint = t.endpoint
        assert endpoint is not None and endpoint.startswith(f"{http.base}/messages?session=")
        assert t.describe() == {"transport": "sse", "url": f"{http.base}/sse", "endpoint": endpoint}
        await t.send(request(1, "initialize"), {"X-Per-Frame": "yes"})
        assert await receive(t) == result(1, "initialize")
        await t.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await t.send(request(2, "stream"))
        assert await receive(t) == {"jsonrpc": "2.0", "method": "notifications/progress"}
        assert await receive(t) == result(2, "stream")
        assert await t.abort(2) is False
    await http.until(lambda: "legacy-disconnect" in http.events)
    get, *posts = http.requests
    assert get.headers["accept"] == "text/event-stream"
    assert get.headers["authorization"] == "Bearer legacy"
    assert [p.frame().get("method") for p in posts] == [
        "initialize",
        "notifications/initialized",
        "stream",
    ]
    assert all(p.headers["authorization"] == "Bearer legacy" for p in posts)
    assert posts[0].headers["x-per-frame"] == "yes"
    assert posts[0].headers["content-type"] == "application/json"


async def test_a_rejected_post_is_answered_by_its_error_body(http: TestServer, client: Any) -> None:
    async with open_legacy_sse(f"{http.base}/sse", client=client) as t:
        await t.send(request(3, "fail"))
        assert await receive(t) == {
            "jsonrpc": "2.0",
            "id": 3,
            "error": {"code": -32603, "message": "rejected"},
        }


async def test_an_endpoint_on_another_origin_is_refused(http: TestServer, client: Any) -> None:
    with pytest.raises(TransportClosed, match="another origin"):
        async with open_legacy_sse(f"{http.base}/sse-offorigin", client=client):
            pytest.fail("must not open")
    await http.until(lambda: "x-disconnect" in http.events)


@pytest.mark.obligation("C-SSE-1")
async def test_no_endpoint_event_in_time(http: TestServer, client: Any) -> None:
    with anyio.fail_after(10), pytest.raises(TransportClosed, match="no endpoint event"):
        async with open_legacy_sse(f"{http.base}/sse-silent", client=client, endpoint_timeout=0.3):
            pytest.fail("must not open")


async def test_a_get_refused_with_a_status_tells_the_status(http: TestServer, client: Any) -> None:
    with pytest.raises(HttpStatusError) as caught:
        async with open_legacy_sse(f"{http.base}/nowhere", client=client):
            pytest.fail("must not open")
    assert caught.value.status == 404


async def test_the_stream_ending_ends_the_transport(http: TestServer, client: Any) -> None:
    async with open_legacy_sse(f"{http.base}/sse-short", client=client) as t:
        with anyio.fail_after(10), pytest.raises(TransportClosed, match="SSE stream ended"):
            await t.receive()
        with pytest.raises(TransportClosed, match="SSE stream ended"):
            await t.send(request(4))


async def test_a_failed_post_fails_only_its_request(http: TestServer, client: Any) -> None:
    async with open_legacy_sse(f"{http.base}/sse", client=client) as t:
        # Point the transport at a session the server does not know: the POST gets 404.
        assert t.endpoint is not None
        t._endpoint = httpx.URL(t.endpoint).copy_set_param("session", "unknown")
        await t.send(request(5))
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and failed.request_id == 5
        assert isinstance(failed.error, HttpStatusError) and failed.error.status == 404


async def test_each_post_is_taken_before_the_next_is_sent(http: TestServer, client: Any) -> None:
    # A server reads concurrent POSTs in any order: the SDK's 1.x SSE servers fail the
    # session on a request read before notifications/initialized. The server holds its
    # answer to each frame that is no request until another POST arrives (or 1 s).
    http.hold_unrequested = True
    async with open_legacy_sse(f"{http.base}/sse", client=client) as t:
        await t.send(request(1, "initialize"))
        assert await receive(t) == result(1, "initialize")
        await t.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await t.send(request(2))
        assert await receive(t) == result(2)
    assert "overlap" not in http.events
    assert [p.frame().get("method") for p in http.posts()] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
    ]
