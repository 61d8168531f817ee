"""The session table and a client's slots, in-process: the order things end in, and cost.

``daemon/_sessions.py`` keeps idle sessions least recently used first, so expiry and
eviction look only at the front; ``daemon/_slots.py`` bounds a client's requests in
flight, handing a freed slot to the longest waiter.
"""

from __future__ import annotations

import time

import anyio
import pytest

from mcpx.daemon._sessions import Session, Sessions
from mcpx.server import Conn, HostSession, Slots


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _table(clock: _Clock) -> tuple[Sessions, list[str]]:
    ended: list[str] = []
    return Sessions(lambda s: ended.append(s.sid), clock), ended


def _session(sid: str) -> Session:
    return Session(sid, HostSession(Conn(transport="http"), Slots(4)))


def test_expiry_ends_the_idle_sessions_in_the_order_they_were_last_used() -> None:
    clock = _Clock()
    table, ended = _table(clock)
    a, b, c = _session("a"), _session("b"), _session("c")
    for s in (a, b, c):
        table.add(s)
        clock.now += 1
    table.touch(a)  # b, c, a
    clock.now += 10
    assert table.prune(idle=10.5) == 2
    assert ended == ["b", "c"]
    assert table.get("a") is a and len(table) == 1


def test_a_busy_session_neither_expires_nor_is_evicted() -> None:
    clock = _Clock()
    table, ended = _table(clock)
    a, b = _session("a"), _session("b")
    table.add(a)
    table.add(b)
    table.hold(a)
    table.hold(b)
    clock.now += 100
    assert table.prune(idle=1) == 0
    assert not table.room(limit=2)  # full, and nobody idle: refuse, end nothing
    assert ended == []
    table.free(b)  # idle from now
    assert table.room(limit=2)
    assert ended == ["b"]
    table.free(a)
    clock.now += 2
    assert table.prune(idle=1) == 1 and ended == ["b", "a"]


def test_a_session_ended_while_busy_is_not_put_back() -> None:
    clock = _Clock()
    table, ended = _table(clock)
    a = _session("a")
    table.add(a)
    table.hold(a)
    assert table.end("a") and a.ended
    table.free(a)
    assert table.get("a") is None and len(table) == 0
    assert not table.end("a")
    assert ended == ["a"]


def test_expiry_costs_the_sessions_that_expire_not_the_sessions_held() -> None:
    # 50,000 fresh sessions and 2,000 requests: walking the table on each request (the
    # defect) would be 10^8 steps; looking at the front only is 2,000.
    clock = _Clock()
    table, _ = _table(clock)
    sessions = [_session(str(i)) for i in range(50_000)]
    for s in sessions:
        table.add(s)
    started = time.perf_counter()
    for i in range(2_000):
        table.prune(idle=60)
        table.touch(sessions[i])
    assert time.perf_counter() - started < 2.0
    assert len(table) == 50_000


def test_slots_refuse_at_the_limit_and_never_jump_the_line() -> None:
    slots = Slots(2)
    assert slots.take_nowait() and slots.take_nowait()
    assert not slots.take_nowait()
    slots.give()
    assert slots.take_nowait()
    assert slots.taken == 2


@pytest.mark.anyio
async def test_a_freed_slot_goes_to_the_longest_waiter() -> None:
    slots = Slots(1)
    assert slots.take_nowait()
    order: list[str] = []

    async def waiter(name: str) -> None:
        await slots.take()
        order.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter, "first")
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(waiter, "second")
        await anyio.wait_all_tasks_blocked()
        assert slots.waiting == 2
        assert not slots.take_nowait()  # someone waits: no jumping ahead
        slots.give()
        await anyio.wait_all_tasks_blocked()
        assert order == ["first"] and slots.taken == 1
        slots.give()
    assert order == ["first", "second"]
    slots.give()
    assert slots.taken == 0


@pytest.mark.anyio
async def test_a_cancelled_waiter_loses_no_slot() -> None:
    slots = Slots(1)
    assert slots.take_nowait()

    async def user() -> None:
        await slots.take()
        try:
            await anyio.sleep_forever()
        finally:
            slots.give()

    async with anyio.create_task_group() as tg:
        tg.start_soon(user)
        await anyio.wait_all_tasks_blocked()
        slots.give()  # handed to the waiter...
        tg.cancel_scope.cancel()  # ...which is cancelled before it runs
    # Cancelled in take or after it, the slot it was handed is back: it is free.
    assert (slots.waiting, slots.taken) == (0, 0)
    assert slots.take_nowait()


@pytest.mark.anyio
async def test_drained_waits_until_nobody_waits_in_line() -> None:
    slots = Slots(1)
    assert slots.take_nowait()
    drained = anyio.Event()

    async def reader() -> None:
        await slots.drained()
        drained.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(slots.take)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(reader)
        await anyio.wait_all_tasks_blocked()
        assert not drained.is_set()  # a request waits in line: reading waits too
        slots.give()
        with anyio.fail_after(5):
            await drained.wait()
    assert slots.taken == 1  # the waiter holds it now
