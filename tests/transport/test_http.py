"""The Streamable HTTP transport against a live server: exchanges, errors, pooling."""

from __future__ import annotations

import socket
from typing import Any

import anyio
import httpx
import pytest

from mcpx.transport import (
    ExchangeFailed,
    HttpStatusError,
    RedirectRefused,
    RequestFailed,
    TransportClosed,
    http_client,
    open_streamable_http,
)
from mcpx.wire import MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, encode_header_value
from transport.exchange import SSE, receive, request, result
from transport.http_server import TestServer

pytestmark = pytest.mark.anyio


@pytest.mark.obligation("C-HTTP-2", "C-HTTP-3")
async def test_json_answer_carries_all_headers(http: TestServer, client: Any) -> None:
    configured = {"Authorization": "Bearer secret-token"}
    async with open_streamable_http(http.url, headers=configured, client=client) as t:
        frame_headers = {
            MCP_PROTOCOL_VERSION: "2026-07-28",
            MCP_METHOD: "tools/call",
            MCP_NAME: encode_header_value("wëather"),
        }
        await t.send(request(1, "tools/call", name="wëather"), frame_headers)
        assert await receive(t) == result(1, "tools/call", name="wëather")
        assert t.last_status(1) == 200
    [post] = http.posts()
    assert post.frame() == request(1, "tools/call", name="wëather")
    headers = post.headers
    assert headers["content-type"] == "application/json"
    assert set(headers["accept"].replace(" ", "").split(",")) == {
        "application/json",
        "text/event-stream",
    }
    assert headers["authorization"] == "Bearer secret-token"
    assert headers["mcp-protocol-version"] == "2026-07-28"
    assert headers["mcp-method"] == "tools/call"
    assert headers["mcp-name"] == "=?base64?d8OrYXRoZXI=?="
    assert "mcp-session-id" not in headers


@pytest.mark.obligation("C-HTTP-3", "C-HTTP-37")
async def test_sse_answer_streams_notifications_and_requests_first(
    http: TestServer, client: Any
) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(2, "tools/call"), SSE)
        frames = [await receive(t) for _ in range(3)]
    assert frames == [
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"of": 2}},
        {"jsonrpc": "2.0", "id": "s-2", "method": "roots/list"},
        result(2, "tools/call"),
    ]


@pytest.mark.obligation("C-HTTP-4")
async def test_a_batch_json_response_is_split(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(3, "batch"))
        assert await receive(t) == {"jsonrpc": "2.0", "method": "notifications/message"}
        assert await receive(t) == result(3, "batch")


async def test_notifications_get_nothing_back(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await t.send({"jsonrpc": "2.0", "id": "s-1", "result": {}})  # an answer we POST
        await t.send(request(4))
        assert await receive(t) == result(4)  # nothing was queued before it


async def test_posts_reach_the_server_in_send_order(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        for n in range(15):
            await t.send({"jsonrpc": "2.0", "method": f"notifications/n{n}"})
        await t.send(request(99))
        await receive(t)
    assert [p.frame()["method"] for p in http.posts()[:15]] == [
        f"notifications/n{n}" for n in range(15)
    ]


async def test_what_follows_a_notification_or_an_answer_waits_for_it_to_be_taken(
    http: TestServer, client: Any
) -> None:
    # A server reads concurrent POSTs in any order (the SDK's fail a session on a request
    # read before notifications/initialized): a frame that is no request is sent on only
    # once its POST is answered. The server holds those answers, waiting for another POST.
    http.hold_unrequested = True
    async with open_streamable_http(http.url, client=client) as t:
        with anyio.fail_after(10):
            await t.send(request(1, "initialize"))
            assert await receive(t) == result(1, "initialize")
            await t.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await t.send({"jsonrpc": "2.0", "id": "s-1", "result": {}})
            await t.send(request(2))
            assert await receive(t) == result(2)
    assert "overlap" not in http.events
    assert [p.frame().get("method") for p in http.posts()] == [
        "initialize",
        "notifications/initialized",
        None,
        "tools/list",
    ]


async def test_a_jsonrpc_error_body_is_delivered_with_its_status(
    http: TestServer, client: Any
) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(7), {"X-Test-Require": "Mcp-Method"})
        frame = await receive(t)
        # The body had no id: it answers the one request its exchange carried.
        assert frame == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": -32020, "message": "missing header Mcp-Method"},
        }
        assert t.last_status(7) == 400
        await t.send(request("x8"), {"X-Test-Require": "Mcp-Method", "X-Test-Error-Id": "1"})
        frame = await receive(t)
        assert isinstance(frame, dict) and frame["id"] == "x8" and "error" in frame
        assert t.last_status("x8") == 400
        await t.send(request(9), {"X-Test-Require": "Mcp-Method", MCP_METHOD: "tools/list"})
        assert await receive(t) == result(9)
        assert t.last_status(9) == 200
        assert t.last_status(12345) is None


async def test_http_errors_without_jsonrpc_body_fail_the_request(
    http: TestServer, client: Any
) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(10, "fail/500"))
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and failed.request_id == 10
        assert isinstance(failed.error, HttpStatusError)
        assert failed.error.status == 500 and failed.error.body == b"internal trouble"
        assert "text/plain" in failed.error.headers["content-type"]

        await t.send(request(11, "fail/not-json"))
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and isinstance(failed.error, ExchangeFailed)
        assert "not JSON-RPC" in str(failed.error)

        await t.send(request(12, "fail/text"))
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and isinstance(failed.error, HttpStatusError)
        assert failed.error.status == 200 and failed.error.body == b"plain words"

        await t.send(request(13, "fail/empty"))
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and isinstance(failed.error, TransportClosed)
        assert "stream ended before the response" in str(failed.error)


async def test_a_stream_cut_before_the_answer_fails_the_request(
    http: TestServer, client: Any
) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(14, "cut"), SSE)
        assert await receive(t) == {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"of": 14},
        }
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and failed.request_id == 14
        assert isinstance(failed.error, TransportClosed)
        assert "stream ended before the response" in str(failed.error)


async def test_abort_closes_the_stream(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(16, "hang"), SSE)  # returns although no answer will come
        assert await receive(t) == {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"of": 16},
        }
        assert await t.abort(16) is True
        await http.until(lambda: "disconnect:16" in http.events)
        assert await t.abort(16) is False
        await t.send(request(17))
        assert await receive(t) == result(17)  # nothing was delivered for 16
        assert await t.abort(17) is False  # answered: no stream left to close


async def test_close_cancels_exchanges_in_flight(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        await t.send(request(18, "hang"), SSE)
        await receive(t)
    await http.until(lambda: "disconnect:18" in http.events)
    with pytest.raises(TransportClosed, match="transport closed"):
        await t.receive()
    with pytest.raises(TransportClosed, match="transport closed"):
        await t.send(request(19))


async def test_oversized_frames_fail_only_their_exchange(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client, max_frame=1000) as t:
        await t.send(request(20, "big", size=5000))
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and isinstance(failed.error, ExchangeFailed)
        assert "over 1000 bytes" in str(failed.error)
        await t.send(request(21, "big", size=5000), SSE)
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and failed.request_id == 21
        assert "1000" in str(failed.error)
        await t.send(request(23, "fail/big400", size=5000))
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and isinstance(failed.error, HttpStatusError)
        assert failed.error.status == 400 and failed.error.body == b""  # too big to quote
        await t.send(request(22, "big", size=10))
        answer = await receive(t)
        assert isinstance(answer, dict) and answer["result"] == {"blob": "b" * 10}


async def test_a_refused_connection_fails_the_request_not_the_transport() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again on leaving: nobody listens there
    async with (
        http_client() as c,
        open_streamable_http(f"http://127.0.0.1:{port}/mcp", client=c) as t,
    ):
        for rid in (1, 2):
            await t.send(request(rid))
            failed = await receive(t)
            assert isinstance(failed, RequestFailed) and failed.request_id == rid
            assert isinstance(failed.error, ExchangeFailed)
            assert isinstance(failed.error.__cause__, httpx.ConnectError)
        await t.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


async def test_send_never_waits_for_the_consumer(client: Any) -> None:
    # More failures than the inbox holds, none received yet: send must still return
    # (a session whose one task both sends and receives would otherwise deadlock).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with open_streamable_http(f"http://127.0.0.1:{port}/mcp", client=client) as t:
        with anyio.fail_after(30):
            for rid in range(300):
                await t.send(request(rid))
            failed = [await t.receive() for _ in range(300)]
    assert sorted(f.request_id for f in failed if isinstance(f, RequestFailed)) == list(range(300))


async def test_one_client_serves_many_requests_on_one_connection(
    http: TestServer, client: Any
) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        for rid in range(20):
            await t.send(request(rid))
            await receive(t)
    async with open_streamable_http(http.url, client=client) as t:  # a second transport
        await t.send(request(99))
        await receive(t)
    assert len(http.posts()) == 21
    assert len(http.ports()) == 1  # one pooled connection carried them all


async def test_sse_answers_give_their_connection_back(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        for rid in range(10):
            await t.send(request(rid, "tools/call"), SSE)
            for _ in range(3):
                await receive(t)
    # The end of each stream is drained after the answer so the connection is reused; the
    # next POST may start before that drain finishes, so allow one spare connection.
    assert len(http.posts()) == 10
    assert len(http.ports()) <= 2


@pytest.mark.obligation("C-HTTP-15")
async def test_concurrent_requests_each_get_their_answer(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        async with anyio.create_task_group() as tg:
            for rid in range(30):
                tg.start_soon(t.send, request(rid, "tools/call"), SSE)
        answers: dict[int, dict[str, Any]] = {}
        with anyio.fail_after(20):
            while len(answers) < 30:
                frame = await t.receive()
                assert isinstance(frame, dict)
                if "result" in frame:
                    answers[frame["id"]] = frame
    assert sorted(answers) == list(range(30))


async def test_a_redirect_on_the_same_origin_is_followed(http: TestServer, client: Any) -> None:
    async with open_streamable_http(f"{http.base}/moved", client=client) as t:
        await t.send(request(1), {MCP_METHOD: "tools/list"})
        assert await receive(t) == result(1)
    [post] = http.posts()
    assert post.path == "/mcp" and post.frame() == request(1)  # method and body kept
    assert post.headers["mcp-method"] == "tools/list"


async def test_a_redirect_to_another_origin_is_refused(http: TestServer, client: Any) -> None:
    async with open_streamable_http(f"{http.base}/away", client=client) as t:
        await t.send(request(1), {"Authorization": "Bearer must-not-leak"})
        failed = await receive(t)
    assert isinstance(failed, RequestFailed) and isinstance(failed.error, ExchangeFailed)
    assert isinstance(failed.error.__cause__, RedirectRefused)
    assert "another origin" in str(failed.error)
    assert http.posts() == []  # nothing reached /mcp through localhost


async def test_an_exception_in_the_body_comes_out_unwrapped(http: TestServer, client: Any) -> None:
    with pytest.raises(KeyError, match="mine"):
        async with open_streamable_http(http.url, client=client):
            raise KeyError("mine")


async def test_a_url_that_is_not_http_is_refused(client: Any) -> None:
    with pytest.raises(ValueError, match="not an http"):
        async with open_streamable_http("ftp://example.com/mcp", client=client):
            pass
