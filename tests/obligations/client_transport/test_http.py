"""Client obligations over Streamable HTTP (C-HTTP, C-LC): the headers, sessions and
streams of legacy and modern HTTP upstreams, header mismatches, and broken response streams.

Proven against the recording HTTP fake (starlette + uvicorn on 127.0.0.1, in a thread) that
records every HTTP request with its headers and body; the fake is built in helpers.py and
served once for this directory by the ``http_fake`` fixture in conftest.py. Every frame
mcpx sends is also validated strictly against its revision (the ``sent_frames`` fixture, in
tests/conftest.py).
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from mcpx import spec, wire
from mcpx.client import UpstreamError, UpstreamTimeout
from obligations.client_transport.helpers import META, HttpFake
from support.schemas import FrameLog
from support.upstream import Recorder, connected, http_server
from support.waiting import await_until

pytestmark = pytest.mark.anyio


def _accepts_both(headers: dict[str, str]) -> bool:
    accepted = {a.strip().split(";")[0] for a in headers["accept"].split(",")}
    return {"application/json", "text/event-stream"} <= accepted


# -- HTTP, legacy ----------------------------------------------------------------------------


@pytest.mark.obligation(
    "C-HTTP-1",
    "C-HTTP-2",
    "C-HTTP-5",
    "C-HTTP-7",
    "C-HTTP-8",
    "C-HTTP-9",
    "C-HTTP-10",
    "C-HTTP-12",
    "C-HTTP-14",
    "C-HTTP-16",
    "C-LC-28",
    "C-LC-29",
)
@pytest.mark.parametrize("discover", ["empty400", "legacy-32602", "404-32601"])
async def test_legacy_http_session_headers_and_streams(
    http_fake: HttpFake, discover: str, sent_frames: FrameLog, caplog: pytest.LogCaptureFixture
) -> None:
    http_fake.reset("legacy", discover)
    caplog.set_level(logging.DEBUG)
    recorder = Recorder()
    server = http_server("legacy-http", http_fake.url)
    async with connected(server, recorder, sent_frames) as session:
        # The probe went modern first; its 4xx without a modern error body meant legacy.
        assert session.negotiated is not None and session.negotiated.era is spec.Era.LEGACY
        assert session.revision == "2025-06-18"
        await session.list_tools()
        await session.call_tool("echo", {"text": "x"})
        # The server's ping on the GET stream is answered by a POST.
        await await_until(lambda: any(s.body and b"g-ping" in s.body for s in http_fake.of("POST")))
    await await_until(lambda: bool(http_fake.of("DELETE")))
    posts = http_fake.of("POST")

    sent = [f for f, _ in recorder.sent]

    # One POST per frame mcpx sent, each a single JSON object. The answer to the GET
    # stream's ping and the initialized notification are not waited for: each races the
    # requests on a connection of its own, so the frames are compared as a multiset. The
    # requests are in order: each was sent only once the one before it was answered.
    def key(frame: object) -> str:
        return json.dumps(frame, sort_keys=True)

    def requests(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [f for f in frames if "method" in f and "id" in f]

    assert sorted(key(p.frame()) for p in posts) == sorted(map(key, sent))
    assert requests([p.frame() for p in posts]) == requests(sent)
    assert [f["method"] for f in requests(sent)] == [
        "server/discover",
        "initialize",
        "tools/list",
        "tools/call",
    ]
    assert all(isinstance(p.frame(), dict) for p in posts)
    assert all(_accepts_both(p.headers) for p in posts)
    probe = posts[0]
    assert probe.frame()["method"] == "server/discover"
    assert probe.headers["mcp-protocol-version"] == "2026-07-28"
    assert META + "protocolVersion" in probe.frame()["params"]["_meta"]
    assert posts[1].frame()["method"] == "initialize"
    [sid] = http_fake.sessions
    later = posts[2:]
    assert later and all(p.headers.get("mcp-session-id") == sid for p in later)
    assert all(p.headers.get("mcp-protocol-version") == "2025-06-18" for p in later)
    answer = next(p.frame() for p in later if p.frame().get("id") == "g-ping")
    assert answer["result"] == {}
    [get] = http_fake.of("GET")
    assert get.headers["accept"].startswith("text/event-stream")
    assert get.headers["mcp-session-id"] == sid
    assert get.headers["mcp-protocol-version"] == "2025-06-18"
    [delete] = http_fake.of("DELETE")  # answered 405: accepted quietly
    assert delete.headers["mcp-session-id"] == sid
    assert delete.headers["mcp-protocol-version"] == "2025-06-18"
    # mcpx's own log never carries it (httpx/httpcore debug logs are not mcpx's).
    mine = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    assert not any(sid in r.getMessage() for r in mine)
    assert not any(sid in json.dumps(data) for _, data in recorder.events)


# -- HTTP, modern ----------------------------------------------------------------------------


def _b64(value: str) -> str:
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


@pytest.mark.obligation(
    "C-HTTP-1",
    "C-HTTP-2",
    "C-HTTP-6",
    "C-HTTP-21",
    "C-HTTP-24",
    "C-HTTP-25",
    "C-HTTP-27",
    "C-HTTP-28",
    "C-HTTP-29",
    "C-HTTP-30",
    "C-HTTP-32",
    "C-HTTP-35",
    "C-LC-28",
    "C-LC-30",
)
async def test_modern_http_request_headers(
    http_fake: HttpFake, sent_frames: FrameLog, caplog: pytest.LogCaptureFixture
) -> None:
    http_fake.reset("modern")
    caplog.set_level(logging.WARNING, logger="mcpx.client")
    recorder = Recorder()
    server = http_server("modern-http", http_fake.url)
    regions = {
        "eu-west": "eu-west",
        "Hello, 世界": "=?base64?SGVsbG8sIOS4lueVjA==?=",
        " padded ": "=?base64?IHBhZGRlZCA=?=",
        "a\nb": _b64("a\nb"),
        "=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
    }
    async with connected(server, recorder, sent_frames) as session:
        assert session.revision == "2026-07-28"
        tools = {t["name"] for t in await session.list_tools()}
        assert tools == {"echo", "slow"}  # the invalid annotation dropped its tool
        for region in regions:
            await session.call_tool("echo", {"text": "x", "region": region})
        await session.call_tool("echo", {"text": "no region"})
        await session.call_tool("echo", {"text": "null region", "region": None})
        await session.read_resource("file:///docs/naïve.txt")
        await session.read_resource("file:///docs/plain.txt")
        await session.get_prompt("greet")
    posts = http_fake.of("POST")
    assert [p.frame() for p in posts] == [f for f, _ in recorder.sent]
    assert http_fake.probes == 1  # the era was learnt once for the origin
    assert not http_fake.of("GET")
    for p in posts:
        frame = p.frame()
        assert isinstance(frame, dict) and "method" in frame  # never a response
        assert _accepts_both(p.headers)
        assert p.headers["mcp-protocol-version"] == "2026-07-28"
        assert p.headers["mcp-method"] == frame["method"]
        params = frame.get("params") or {}
        if frame["method"] in ("tools/call", "prompts/get"):
            assert p.headers["mcp-name"] == params["name"]
        if frame["method"] == "resources/read":
            uri = params["uri"]
            expected = uri if uri.isascii() else _b64(uri)
            assert p.headers["mcp-name"] == expected
    calls = [p for p in posts if p.frame()["method"] == "tools/call"]
    sent_regions = [p.headers.get("mcp-param-region") for p in calls]
    assert sent_regions == [*regions.values(), None, None]
    assert next(p for p in posts if p.frame()["method"] == "resources/read").headers[
        "mcp-name"
    ] == _b64("file:///docs/naïve.txt")
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("broken-annotation" in w and "N" in w for w in warned), warned


@pytest.mark.obligation("C-HTTP-38")
async def test_modern_http_cancel_closes_the_stream(
    http_fake: HttpFake, sent_frames: FrameLog
) -> None:
    http_fake.reset("modern")
    server = http_server("modern-http", http_fake.url)
    async with connected(server, Recorder(), sent_frames) as session:
        with pytest.raises(UpstreamTimeout):
            await session.call_tool("slow", {}, timeout=1)
        await await_until(lambda: any(e.startswith("closed:") for e in http_fake.events))
        assert (await session.call_tool("echo", {"text": "x"}))["content"][0]["text"] == "ok"
    methods = [p.frame().get("method") for p in http_fake.of("POST")]
    assert "notifications/cancelled" not in methods


@pytest.mark.obligation("C-HTTP-34")
async def test_a_header_mismatch_lists_the_tools_again_and_retries_once(
    http_fake: HttpFake, sent_frames: FrameLog
) -> None:
    http_fake.reset("modern-headers")
    server = http_server("modern-http", http_fake.url)
    async with connected(server, Recorder(), sent_frames) as session:
        await session.list_tools()
        assert await session.call_tool("echo", {"text": "a", "region": "eu"})
        # The server renames the header: mcpx's Mcp-Param-Region no longer matches.
        with http_fake.lock:
            http_fake.listed = http_fake.checked = "Zone"
        got = await session.call_tool("echo", {"text": "b", "region": "us"})
        assert got["content"][0]["text"] == "ok"
        # A server whose listing never matches what it checks: one refresh, one retry.
        with http_fake.lock:
            http_fake.checked = "Area"
        with pytest.raises(wire.HeaderMismatch, match="Mcp-Param-Area"):
            await session.call_tool("echo", {"text": "c", "region": "ap"})
    posts = [p for p in http_fake.of("POST") if p.frame()["method"] != "server/discover"]
    assert [p.frame()["method"] for p in posts] == [
        "tools/list",
        "tools/call",
        "tools/call",  # Region: us -> 400 -32020
        "tools/list",
        "tools/call",  # Zone: us -> ok
        "tools/call",  # Zone: ap -> 400 -32020
        "tools/list",
        "tools/call",  # Zone: ap -> 400 -32020 again: raised
    ]
    calls = [p for p in posts if p.frame()["method"] == "tools/call"]
    params = [(p.headers.get("mcp-param-region"), p.headers.get("mcp-param-zone")) for p in calls]
    assert params == [("eu", None), ("us", None), (None, "us"), (None, "ap"), (None, "ap")]
    # Each retry is the same call as a new request.
    assert calls[1].frame()["params"] == calls[2].frame()["params"]
    assert calls[3].frame()["params"] == calls[4].frame()["params"]
    ids = [p.frame()["id"] for p in posts]
    assert len(ids) == len(set(ids))


@pytest.mark.obligation("C-HTTP-36", "C-HTTP-38")
@pytest.mark.parametrize(("cut", "why"), [("end", "ended"), ("break", "broke")])
async def test_a_broken_response_stream_is_sent_again_once_as_a_new_request(
    http_fake: HttpFake, cut: str, why: str, sent_frames: FrameLog
) -> None:
    http_fake.reset("modern")
    server = http_server("modern-http", http_fake.url)
    async with connected(server, Recorder(), sent_frames) as session:
        with http_fake.lock:
            http_fake.cuts, http_fake.cut = 1, cut
        got = await session.call_tool("flaky", {"n": 1})
        assert got["content"][0]["text"] == "ok"
        with http_fake.lock:
            http_fake.cuts = 2
        with pytest.raises(UpstreamError, match=f"stream {why} before the response"):
            await session.call_tool("flaky", {"n": 2})
        # A request that timed out (its stream closed by mcpx) is not sent again.
        with pytest.raises(UpstreamTimeout):
            await session.call_tool("slow", {}, timeout=1)
        assert (await session.call_tool("echo", {"text": "x"}))["content"][0]["text"] == "ok"
    calls = [p for p in http_fake.of("POST") if p.frame()["method"] == "tools/call"]
    assert [p.frame()["params"]["name"] for p in calls] == [
        *["flaky"] * 4,  # cut then answered; cut, cut again and failed
        "slow",
        "echo",
    ]
    assert calls[0].frame()["params"] == calls[1].frame()["params"]
    assert calls[2].frame()["params"] == calls[3].frame()["params"]
    ids = [p.frame()["id"] for p in calls]
    assert len(ids) == len(set(ids))
    # No resumption in 2026-07-28: no Last-Event-ID, no GET.
    assert not any("last-event-id" in p.headers for p in http_fake.of("POST"))
    assert not http_fake.of("GET")


# C-HTTP-36 (2026-07-28 only: a legacy session's lost request is not sent again)
@pytest.mark.obligation("C-HTTP-36")
async def test_a_legacy_broken_response_stream_fails_the_request(
    http_fake: HttpFake, sent_frames: FrameLog
) -> None:
    http_fake.reset("legacy")
    server = http_server("legacy-http", http_fake.url)
    async with connected(server, Recorder(), sent_frames) as session:
        with http_fake.lock:
            http_fake.cuts = 2
        with pytest.raises(UpstreamError, match="stream ended before the response"):
            await session.call_tool("flaky", {})
    calls = [p for p in http_fake.of("POST") if p.frame().get("method") == "tools/call"]
    assert len(calls) == 1


# C-LC-29 (a 400 with a modern error body: modern, retried)
@pytest.mark.obligation("C-LC-29")
async def test_a_400_with_a_modern_error_is_modern(
    http_fake: HttpFake, sent_frames: FrameLog
) -> None:
    http_fake.reset("modern", "32022-first")
    server = http_server("modern-http", http_fake.url)
    async with connected(server, Recorder(), sent_frames) as session:
        assert session.negotiated is not None and session.negotiated.era is spec.Era.MODERN
    methods = [p.frame().get("method") for p in http_fake.of("POST")]
    assert methods == ["server/discover", "server/discover"]
    ids = [p.frame()["id"] for p in http_fake.of("POST")]
    assert ids[0] != ids[1]
