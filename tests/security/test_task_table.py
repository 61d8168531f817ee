"""The daemon's task table, in-process: at most ``limit`` running (one more is refused),
at most ``limit`` finished kept (the oldest forgotten first), expired ones forgotten."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpx.tasks import Task, Tasks
from mcpx.wire import Throttled

pytestmark = pytest.mark.anyio


async def test_running_tasks_are_capped_and_finished_ones_kept_at_most_limit() -> None:
    gate = anyio.Event()

    async def held(task: Task) -> dict[str, Any]:
        await gate.wait()
        return {"content": []}

    async with anyio.create_task_group() as tg:
        tasks = Tasks(tg, keep=3600, limit=2)
        first, second = tasks.start("s", "a", held), tasks.start("s", "b", held)
        with pytest.raises(Throttled, match=r"proto\.maxTasks"):
            tasks.start("s", "c", held)
        gate.set()
        with anyio.fail_after(5):
            while not (first.done and second.done):
                await first.changed(0.1)
        # Finished, they no longer count as running: two more start, and finish.
        third, fourth = tasks.start("s", "d", held), tasks.start("s", "e", held)
        with anyio.fail_after(5):
            while not (third.done and fourth.done):
                await third.changed(0.1)
    # Four finished, two kept: the two that finished first are forgotten.
    assert tasks.get(first.id) is None and tasks.get(second.id) is None
    assert tasks.get(third.id) is third and tasks.get(fourth.id) is fourth


async def test_finished_tasks_are_forgotten_after_keep() -> None:
    async def quick(task: Task) -> dict[str, Any]:
        return {"content": []}

    async with anyio.create_task_group() as tg:
        tasks = Tasks(tg, keep=0, limit=8)
        done = tasks.start("s", "a", quick)
        with anyio.fail_after(5):
            while not done.done:
                await done.changed(0.1)
    assert tasks.get(done.id) is None
