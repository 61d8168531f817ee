"""The event bus on its own: numbering, history, filters, replay, gaps, delivery."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from mcpx.events import GAP, Event, EventBus, EventFilter, Subscription, publish_notification


def _clock() -> Any:
    ticks = itertools.count(1000)
    return lambda: float(next(ticks))


def _bus(history: int = 1024, buffer: int = 256) -> EventBus:
    return EventBus(history, buffer=buffer, clock=_clock())


def _drain(sub: Subscription) -> list[Event]:
    out = []
    while True:
        try:
            out.append(sub.receive_nowait())
        except anyio.WouldBlock:
            return out


def _seqs(events: list[Event]) -> list[Any]:
    return [e.seq if e.kind != GAP else (GAP, e.data["from"], e.data["to"]) for e in events]


def test_publish_numbers_from_one_and_stamps_time() -> None:
    bus = _bus()
    assert bus.last_seq == 0
    first = bus.publish("server.log", {"message": "hi"}, server="a")
    second = bus.publish("list.changed", {"kind": "tools"}, server="a")
    assert (first.seq, second.seq, bus.last_seq) == (1, 2, 2)
    assert (first.ts, second.ts) == (1000.0, 1001.0)
    assert first.to_json() == {
        "seq": 1,
        "kind": "server.log",
        "ts": 1000.0,
        "server": "a",
        "data": {"message": "hi"},
    }


def test_publish_copies_its_data() -> None:
    bus, data = _bus(), {"n": 1}
    event = bus.publish("x", data)
    data["n"] = 2
    assert event.data == {"n": 1}


def test_history_keeps_the_newest() -> None:
    bus = _bus(history=3)
    for i in range(5):
        bus.publish("k", {"i": i})
    assert [e.seq for e in bus.retained()] == [3, 4, 5]
    assert _bus(history=0).retained() == []


def test_live_only_without_since() -> None:
    bus = _bus()
    bus.publish("before")
    sub = bus.subscribe()
    bus.publish("after")
    assert [e.kind for e in _drain(sub)] == ["after"]


def test_since_replays_what_follows_then_live() -> None:
    bus = _bus()
    for _ in range(5):
        bus.publish("k")
    sub = bus.subscribe(since=3)
    bus.publish("k")
    assert _seqs(_drain(sub)) == [4, 5, 6]
    assert _drain(bus.subscribe(since=6)) == []


def test_since_zero_replays_everything_retained() -> None:
    bus = _bus()
    for _ in range(4):
        bus.publish("k")
    assert _seqs(_drain(bus.subscribe(since=0))) == [1, 2, 3, 4]


def test_a_resume_older_than_the_history_gets_a_gap_first() -> None:
    bus = _bus(history=3)
    for _ in range(6):
        bus.publish("k")
    events = _drain(bus.subscribe(since=1))
    assert _seqs(events) == [(GAP, 2, 3), 4, 5, 6]
    gap = events[0]
    assert gap.seq is None and gap.data == {"from": 2, "to": 3, "reason": "history"}
    assert "seq" not in gap.to_json()
    assert _seqs(_drain(bus.subscribe(since=0))) == [(GAP, 1, 3), 4, 5, 6]
    assert _seqs(_drain(bus.subscribe(since=3))) == [4, 5, 6]  # just in time: no gap


def test_no_history_means_a_gap_for_any_resume_but_live_still_flows() -> None:
    bus = _bus(history=0)
    for _ in range(3):
        bus.publish("k")
    sub = bus.subscribe(since=0)
    bus.publish("k")
    assert _seqs(_drain(sub)) == [(GAP, 1, 3), 4]


def test_an_id_from_an_earlier_daemon_replays_all_retained() -> None:
    bus = _bus(history=2)
    for _ in range(3):
        bus.publish("k")
    events = _drain(bus.subscribe(since=500))
    assert _seqs(events) == [(GAP, 1, 1), 2, 3]
    assert events[0].data["reason"] == "restart"
    fresh = _bus()
    fresh.publish("k")
    assert _seqs(_drain(fresh.subscribe(since=500))) == [1]


def test_filters_by_kind_server_and_uri() -> None:
    bus = _bus()
    subs = {
        "kinds": bus.subscribe(EventFilter.of("message, progress")),
        "server": bus.subscribe(EventFilter.of(server="a")),
        "uri": bus.subscribe(EventFilter.of(uri="/file:///x")),
        "all": bus.subscribe(EventFilter.of("", "", "")),
        "both": bus.subscribe(EventFilter.of(["resource.updated"], "b")),
    }
    bus.publish("message", server="a")
    bus.publish("progress", server="b")
    bus.publish("resource.updated", server="a", uri="file:///x")
    bus.publish("resource.updated", server="b", uri="/file:///x")
    bus.publish("resource.updated", server="b", uri="file:///y")
    bus.publish("server.log")
    got = {name: _seqs(_drain(sub)) for name, sub in subs.items()}
    assert got == {
        "kinds": [1, 2],
        "server": [1, 3],
        "uri": [3, 4],
        "all": [1, 2, 3, 4, 5, 6],
        "both": [4, 5],
    }


def test_filters_apply_to_replay_but_gaps_always_pass() -> None:
    bus = _bus(history=3)
    bus.publish("message")
    for kind in ("message", "server.log", "message", "server.log"):
        bus.publish(kind)
    assert _seqs(_drain(bus.subscribe(EventFilter.of("message"), since=0))) == [(GAP, 1, 2), 4]


def test_a_slow_subscriber_gets_a_gap_for_what_overflowed_and_continues() -> None:
    bus = _bus(buffer=3)
    sub = bus.subscribe()
    for _ in range(10):
        bus.publish("k")
    assert sub.missed == 7
    bus.publish("k")  # the buffer is still full: the same gap grows
    assert _seqs(_drain(sub)) == [1, 2, 3, (GAP, 4, 11)]
    bus.publish("k")
    assert _seqs(_drain(sub)) == [12]


def test_overflow_gap_sits_in_order_between_events() -> None:
    bus = _bus(buffer=2)
    sub = bus.subscribe()
    for _ in range(3):
        bus.publish("k")  # 3 overflows
    assert _seqs([sub.receive_nowait()]) == [1]
    bus.publish("k")  # room again: 4 after the gap
    bus.publish("k")  # full again: a second gap
    events = _drain(sub)
    assert _seqs(events) == [2, (GAP, 3, 3), 4, (GAP, 5, 5)]
    assert events[1].data["reason"] == "overflow"


def test_overflow_counts_only_what_the_filter_wanted() -> None:
    bus = _bus(buffer=1)
    sub = bus.subscribe(EventFilter.of("a"))
    for kind in "abbbba":
        bus.publish(kind)
    assert _seqs(_drain(sub)) == [1, (GAP, 6, 6)]


def test_replay_is_not_bounded_by_the_live_buffer() -> None:
    bus = _bus(history=50, buffer=2)
    for _ in range(20):
        bus.publish("k")
    sub = bus.subscribe(since=0)
    assert _seqs(_drain(sub)) == list(range(1, 21))


def test_close_forgets_the_subscriber() -> None:
    bus = _bus()
    sub = bus.subscribe()
    assert bus.subscribers == 1
    sub.close()
    assert bus.subscribers == 0
    bus.publish("k")
    with pytest.raises(anyio.ClosedResourceError):
        sub.receive_nowait()


def test_bus_close_ends_subscriptions_after_what_they_hold() -> None:
    bus = _bus()
    sub = bus.subscribe()
    bus.publish("k")
    bus.close()
    assert sub.receive_nowait().seq == 1
    with pytest.raises(anyio.EndOfStream):
        sub.receive_nowait()
    late = bus.subscribe(since=0)
    assert late.receive_nowait().seq == 1
    with pytest.raises(anyio.EndOfStream):
        late.receive_nowait()
    assert bus.subscribers == 0


@pytest.mark.anyio
async def test_a_waiting_subscriber_is_woken_by_a_synchronous_publish() -> None:
    bus = _bus()
    sub = bus.subscribe(EventFilter.of("wanted"))
    got: list[int | None] = []

    async def read() -> None:
        async for event in sub:
            got.append(event.seq)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.wait_all_tasks_blocked()
            bus.publish("unwanted")
            bus.publish("wanted")
            await anyio.wait_all_tasks_blocked()
            assert got == [2]
            bus.publish("wanted")
            bus.close()  # the reader's loop ends once it has what was published
    assert got == [2, 3]


@pytest.mark.anyio
async def test_receive_is_cancellable_and_loses_nothing() -> None:
    bus = _bus()
    sub = bus.subscribe()
    with anyio.move_on_after(0.01):
        await sub.receive()
    bus.publish("k")
    with anyio.fail_after(10):
        assert (await sub.receive()).seq == 1
    await sub.aclose()
    assert bus.subscribers == 0


def test_upstream_notifications_as_events() -> None:
    bus = _bus()
    sub = bus.subscribe()
    note = {"level": "info", "data": "x", "_meta": {"k": 1}}
    publish_notification(bus, "a", "notifications/message", note)
    publish_notification(bus, "a", "notifications/progress", {"progressToken": "t", "progress": 1})
    publish_notification(bus, "a", "notifications/tools/list_changed", {})
    publish_notification(bus, "a", "notifications/resources/list_changed", {})
    publish_notification(bus, "a", "notifications/resources/updated", {"uri": "file:///r"})
    assert publish_notification(bus, "a", "notifications/cancelled", {"requestId": 1}) is None
    got = [(e.kind, e.server, e.uri, dict(e.data)) for e in _drain(sub)]
    assert got == [
        ("message", "a", None, {"level": "info", "data": "x"}),
        ("progress", "a", None, {"progressToken": "t", "progress": 1}),
        ("list.changed", "a", None, {"kind": "tools"}),
        ("list.changed", "a", None, {"kind": "resources"}),
        ("resource.updated", "a", "file:///r", {"uri": "file:///r"}),
    ]
