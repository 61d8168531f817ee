"""Work a request may need later, run by the daemon rather than by each request.

A POST's answer needs a task beside its request only if the request turns out slow (a
keep-alive to send, a client that may have gone away) or has frames to stream. An anyio
task group and a task of its own cost a fast request more than all its JSON-RPC
handling; so each request asks ``Timers`` for a callback after a while instead, which is
a heap push, and starts its helper task here only if it is still running then.

Invariants:

- Callbacks run in ``Timers``'s own task, in the order they fall due, never before and at
  most ``resolution`` after; they are plain functions that must not block (typically:
  decide, and ``spawn``). Due times are rounded up to the resolution, so that the timer
  task wakes a few times a second under any load, not once per request.
- Spawned tasks run in the daemon's task group (the lifespan's), so they end with it.
  They must not raise: nothing but the daemon's end is theirs to stop.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

__all__ = ["Timers"]


class Timers:
    """Delayed callbacks and background tasks, for the life of the daemon (``run``)."""

    def __init__(self, resolution: float = 0.05) -> None:
        self._resolution = resolution
        self._tg: TaskGroup | None = None
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()
        # Set to wake the timer task: it waits for nothing or for a later callback.
        self._wake: anyio.Event | None = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; ready once ``task_status`` says so."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            try:
                await self._timer()
            finally:
                self._tg = None

    def call_later(self, delay: float, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once ``delay`` seconds have passed."""
        step = self._resolution
        due = math.ceil((anyio.current_time() + delay) / step) * step
        earliest = self._due[0][0] if self._due else None
        heapq.heappush(self._due, (due, next(self._order), fn))
        # Only an earlier first deadline changes what the timer task waits for.
        if (earliest is None or due < earliest) and self._wake is not None:
            self._wake.set()

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``fn()`` as a task of the daemon's."""
        if self._tg is None:
            raise RuntimeError("Timers is not running")
        self._tg.start_soon(fn)

    async def _timer(self) -> None:
        while True:
            now = anyio.current_time()
            while self._due and self._due[0][0] <= now:
                heapq.heappop(self._due)[2]()
            self._wake = anyio.Event()
            wait = self._due[0][0] - now if self._due else None
            with anyio.move_on_after(wait):
                await self._wake.wait()
