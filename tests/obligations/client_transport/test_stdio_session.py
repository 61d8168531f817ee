"""Client obligations over stdio, a modern session in use (C-STDIO, C-MSG, C-ERR, C-SUB,
C-PAGE, C-CACHE): requests a server sends, listen streams, request ids, errors and results
surfaced as they are, and paginated listings.

Proven against the recording stdio fake (a real process that logs every raw line mcpx
writes to its stdin); the ``fake`` fixture and the fake itself are in conftest.py, next to
this file. Every frame mcpx sends is also validated strictly against its revision (the
``sent_frames`` fixture, in tests/conftest.py).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpx import wire
from mcpx.client import UpstreamError, _pages
from support.schemas import FrameLog
from support.upstream import Recorder, connected

pytestmark = pytest.mark.anyio


# -- stdio, modern: a session in use -----------------------------------------------------------


@pytest.mark.obligation("C-STDIO-8")
async def test_a_request_from_a_modern_server_is_never_answered(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("modern")
    async with connected(up.server, Recorder(), sent_frames) as session:
        await session.call_tool("stray", {})
        await session.call_tool("echo", {"text": "after"})
    assert not [f for f in up.frames() if f.get("id") == "stray-1"]
    assert not [f for f in up.frames() if "result" in f or "error" in f]


@pytest.mark.obligation("C-STDIO-9")
async def test_listen_notifications_are_routed_by_subscription_id(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("modern")
    async with connected(up.server, Recorder(), sent_frames) as session:  # noqa: SIM117
        async with (
            session.listen({"toolsListChanged": True}, reopen=False) as tools,
            session.listen({"promptsListChanged": True}, reopen=False) as prompts,
        ):
            with anyio.fail_after(20):
                got_tools = [await tools.receive() for _ in range(3)]
                got_prompts = [await prompts.receive() for _ in range(3)]
    assert [m["method"] for m in got_tools] == [
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
        "notifications/tools/list_changed",
    ]
    assert [m["method"] for m in got_prompts] == [
        "notifications/subscriptions/acknowledged",
        "notifications/prompts/list_changed",
        "notifications/prompts/list_changed",
    ]
    listens = [f for f in up.frames() if f.get("method") == "subscriptions/listen"]
    assert len(listens) == 2


@pytest.mark.obligation("C-SUB-9")
async def test_request_scoped_notifications_on_a_listen_stream_are_credited_to_nothing(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("modern-listen-noise")
    recorder = Recorder()
    async with (
        connected(up.server, recorder, sent_frames) as session,
        session.listen({"toolsListChanged": True}, reopen=False) as stream,
    ):
        with anyio.fail_after(20):
            got = [await stream.receive() for _ in range(2)]
    assert [m["method"] for m in got] == [
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
    ]
    scoped = ("notifications/progress", "notifications/message")
    assert [m for m, _ in recorder.notifications if m in scoped] == []


@pytest.mark.obligation("C-MSG-4")
async def test_concurrent_requests_never_share_an_id(fake: Any, sent_frames: FrameLog) -> None:
    up = fake("modern")
    async with connected(up.server, Recorder(), sent_frames) as session:
        results: list[str] = []

        async def one(n: int) -> None:
            got = await session.call_tool("echo", {"text": str(n)}, timeout=60)
            results.append(got["content"][0]["text"])

        async with anyio.create_task_group() as tg:
            for n in range(100):
                tg.start_soon(one, n)
    assert sorted(results, key=int) == [str(n) for n in range(100)]
    ids = [f["id"] for f in up.frames() if f.get("method") == "tools/call"]
    assert len(ids) == 100 and len(set(ids)) == 100


@pytest.mark.obligation("C-ERR-2", "C-ERR-8")
async def test_server_errors_are_surfaced_not_interpreted(fake: Any, sent_frames: FrameLog) -> None:
    up = fake("modern")
    async with connected(up.server, Recorder(), sent_frames) as session:
        with pytest.raises(wire.McpError) as opaque:
            await session.call_tool("opaque", {})
        assert opaque.value.code == -32001 and type(opaque.value) is wire.McpError
        with pytest.raises(wire.McpError) as needs:
            await session.call_tool("needs-elicitation", {})
        assert needs.value.code == -32021
        # Neither broke the session nor changed its version.
        assert session.revision == "2026-07-28"
        assert (await session.call_tool("echo", {"text": "ok"}))["content"][0]["text"] == "ok"
    calls = [f["params"]["name"] for f in up.frames() if f.get("method") == "tools/call"]
    assert calls.count("needs-elicitation") == 1  # no blind retry
    assert calls.count("opaque") == 1


@pytest.mark.obligation("C-MSG-10", "C-MSG-9")
async def test_an_unrecognized_result_type_is_an_invalid_response(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("modern-results")
    async with connected(up.server, Recorder(), sent_frames) as session:
        # mcpx declares no extension, so "task" is as unknown as "foo"; relaying an
        # input_required result to the host does not make them acceptable either.
        for kind in ("task", "foo", "", None, 7):
            with pytest.raises(UpstreamError) as caught:
                await session.call_tool("result-type", {"kind": kind})
            assert type(caught.value) is UpstreamError
            message = str(caught.value)
            assert session.name in message and "tools/call" in message and repr(kind) in message
        with pytest.raises(UpstreamError, match="'task'"):
            params = {"name": "result-type", "arguments": {"kind": "task"}}
            await session.request("tools/call", params, relay_input=True)
        # Absent is complete; the session is still fine after the invalid answers.
        assert (await session.call_tool("result-type", {}))["content"] == []
        done = await session.call_tool("result-type", {"kind": "complete"})
        assert done["resultType"] == "complete"
    calls = [f for f in up.frames() if f.get("method") == "tools/call"]
    assert len(calls) == 8  # each answered once: an invalid response is not retried


@pytest.mark.obligation("C-PAGE-4", "C-PAGE-2")
async def test_an_empty_next_cursor_is_a_cursor(fake: Any, sent_frames: FrameLog) -> None:
    up = fake("modern-empty-cursor")
    recorder = Recorder()
    async with connected(up.server, recorder, sent_frames) as session:
        tools = await session.list_tools()
    assert [t["name"] for t in tools] == ["echo", "second"]
    lists = [f["params"] for f in up.frames() if f.get("method") == "tools/list"]
    assert [p.get("cursor", "absent") for p in lists] == ["absent", ""]


# C-PAGE-4 (the bound on a listing that never ends, since no cursor value may end it)
@pytest.mark.obligation("C-PAGE-4")
async def test_a_listing_that_never_ends_is_stopped_by_its_page_count(
    fake: Any, sent_frames: FrameLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pages, "MAX_PAGES", 25)
    up = fake("modern-endless")
    async with connected(up.server, Recorder(), sent_frames) as session:
        with pytest.raises(UpstreamError, match="fake-modern-endless returned more than 25 pages"):
            await session.list_tools()
    lists = [f["params"] for f in up.frames() if f.get("method") == "tools/list"]
    assert len(lists) == 25  # the repeated "" was followed each time, then no more
    assert [p.get("cursor") for p in lists[1:]] == [""] * 24


@pytest.mark.obligation("C-CACHE-14")
@pytest.mark.parametrize(
    ("mode", "sent"),
    [
        ("modern-expiring", [None, "c1", None, "c2"]),
        ("modern-expiring-always", [None, "c1", None, "c2"]),
        ("modern-refuse-first", [None]),
    ],
)
async def test_a_refused_cursor_restarts_the_listing_once(
    fake: Any, mode: str, sent: list[str | None], sent_frames: FrameLog
) -> None:
    up = fake(mode)
    async with connected(up.server, Recorder(), sent_frames) as session:
        if mode == "modern-expiring":
            # One pass from the first page: nothing kept from the pass the refusal ended.
            assert [t["name"] for t in await session.list_tools()] == ["echo", "second"]
        else:
            # A second refusal (or one with no cursor to blame) fails as it is.
            with pytest.raises(wire.InvalidParams):
                await session.list_tools()
    lists = [f["params"] for f in up.frames() if f.get("method") == "tools/list"]
    assert [p.get("cursor") for p in lists] == sent
