"""Timers: delayed callbacks in the order they fall due, and tasks in the daemon's group."""

from __future__ import annotations

import anyio
import pytest

from mcpx.daemon._timers import Timers


@pytest.mark.anyio
async def test_callbacks_run_in_due_order_never_early() -> None:
    later = Timers()
    ran: list[tuple[str, float]] = []
    all_ran = anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(later.run)
        start = anyio.current_time()

        def note(name: str) -> None:
            ran.append((name, anyio.current_time() - start))
            if len(ran) == 4:
                all_ran.set()

        later.call_later(0.2, lambda: note("b"))
        later.call_later(0.3, lambda: note("c"))
        later.call_later(0.05, lambda: note("a"))  # earlier than all: wakes the timer
        later.call_later(0, lambda: note("now"))
        with anyio.fail_after(10):
            await all_ran.wait()
        tg.cancel_scope.cancel()
    assert [name for name, _ in ran] == ["now", "a", "b", "c"]
    assert all(at >= due for (_, at), due in zip(ran, (0, 0.05, 0.2, 0.3), strict=True))


@pytest.mark.anyio
async def test_spawned_tasks_run_and_end_with_it() -> None:
    later = Timers()
    started, ended = anyio.Event(), anyio.Event()

    async def forever() -> None:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            ended.set()

    async with anyio.create_task_group() as tg:
        await tg.start(later.run)
        later.spawn(forever)
        with anyio.fail_after(10):
            await started.wait()
        tg.cancel_scope.cancel()
    assert ended.is_set()


def test_spawning_needs_it_running() -> None:
    async def nothing() -> None:
        pass

    with pytest.raises(RuntimeError):
        Timers().spawn(nothing)
