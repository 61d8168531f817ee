"""Workers: every call runs at once, in a task kept from an earlier call when one waits."""

from __future__ import annotations

import asyncio

import anyio
import pytest
from anyio.lowlevel import checkpoint

from mcpx.daemon._workers import Workers

pytestmark = pytest.mark.anyio


def _this_task() -> object:
    # The task itself, held: an id could be reused by a later task once this one is gone.
    task = asyncio.current_task()
    assert task is not None
    return task


async def test_calls_run_concurrently_and_finished_tasks_are_reused() -> None:
    release = anyio.Event()
    running: list[int] = []
    tasks: list[object] = []

    async def call(n: int) -> None:
        tasks.append(_this_task())
        running.append(n)
        await release.wait()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            workers = Workers(tg, spare=8)
            for n in range(3):
                workers.start_soon(call, n)
            await anyio.wait_all_tasks_blocked()
            assert sorted(running) == [0, 1, 2]  # none waited behind another
            release.set()
            await anyio.wait_all_tasks_blocked()
            first = set(tasks)
            for n in range(3, 6):
                workers.start_soon(call, n)
            await anyio.wait_all_tasks_blocked()
            assert sorted(running) == list(range(6))
            assert set(tasks[3:]) <= first  # the three waiting tasks took them
            workers.close()
    assert len(set(tasks)) == 3


async def test_no_more_than_spare_tasks_wait() -> None:
    release = anyio.Event()
    tasks: list[object] = []

    async def call() -> None:
        tasks.append(_this_task())
        await release.wait()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            workers = Workers(tg, spare=2)
            for _ in range(5):
                workers.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            release.set()
            await anyio.wait_all_tasks_blocked()
            for _ in range(5):
                workers.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            workers.close()
    reused = set(tasks[5:]) & set(tasks[:5])
    assert len(reused) == 2  # two waited; the other three ended
    assert len(set(tasks)) == 8


async def test_close_lets_the_task_group_end_and_later_calls_still_run() -> None:
    done: list[str] = []

    async def call(name: str) -> None:
        await checkpoint()
        done.append(name)

    with anyio.fail_after(5):  # a waiting task left behind would hold the group open
        async with anyio.create_task_group() as tg:
            workers = Workers(tg)
            workers.start_soon(call, "before")
            await anyio.wait_all_tasks_blocked()
            workers.close()
            workers.start_soon(call, "after")
    assert done == ["before", "after"]


async def test_a_call_started_while_another_task_is_waking_is_not_queued_behind_it() -> None:
    # Two calls given in the same loop step with one task waiting: the second must not
    # be handed to that task too (it would wait for the first call to finish).
    release = anyio.Event()
    running: list[str] = []

    async def call(name: str) -> None:
        running.append(name)
        if name != "warm":
            await release.wait()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            workers = Workers(tg)
            workers.start_soon(call, "warm")
            await anyio.wait_all_tasks_blocked()  # its task now waits
            workers.start_soon(call, "a")
            workers.start_soon(call, "b")
            await anyio.wait_all_tasks_blocked()
            assert sorted(running) == ["a", "b", "warm"]
            release.set()
            workers.close()
