"""A subscription written as server-sent events: framing, keep-alives, the end."""

from __future__ import annotations

import json

import anyio
import pytest

from mcpx.events import EventBus, encode, sse_stream


def test_encode_has_id_kind_and_one_data_line() -> None:
    bus = EventBus(clock=lambda: 5.0)
    event = bus.publish("server.log", {"message": "two\nlines"}, server="a")
    text = encode(event).decode()
    assert text.endswith("\n\n")
    lines = text.strip("\n").split("\n")
    assert lines[:2] == ["id: 1", "event: server.log"]
    assert len(lines) == 3 and lines[2].startswith("data: ")
    assert json.loads(lines[2][6:]) == {
        "seq": 1,
        "kind": "server.log",
        "ts": 5.0,
        "server": "a",
        "data": {"message": "two\nlines"},
    }


def test_a_gap_has_no_id() -> None:
    bus = EventBus(history=0, clock=lambda: 5.0)
    bus.publish("k")
    gap = bus.subscribe(since=0).receive_nowait()
    assert encode(gap).decode().split("\n")[0] == "event: gap"


@pytest.mark.anyio
async def test_stream_opens_keeps_alive_and_ends_with_the_bus() -> None:
    bus = EventBus()
    sub = bus.subscribe()
    chunks: list[bytes] = []
    with anyio.fail_after(10):
        stream = sse_stream(sub, keepalive=0.01)
        chunks.append(await anext(stream))
        chunks.append(await anext(stream))  # nothing published: a keep-alive
        bus.publish("k")
        while not chunks[-1].startswith(b"id: 1\n"):
            chunks.append(await anext(stream))
        bus.close()
        async for chunk in stream:
            chunks.append(chunk)
    assert chunks[0].startswith(b": ") and chunks[1] == b": keepalive\n\n"
    assert bus.subscribers == 0


@pytest.mark.anyio
async def test_a_stream_closed_early_forgets_its_subscription() -> None:
    bus = EventBus()
    stream = sse_stream(bus.subscribe(), keepalive=60)
    with anyio.fail_after(10):
        await anext(stream)
        assert bus.subscribers == 1
        await stream.aclose()  # as when the client goes away
    assert bus.subscribers == 0
