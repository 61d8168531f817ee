"""Tasks of a task group that are kept to run the next call once theirs is done.

Why: starting a task in anyio 4.16 costs about 30 µs more than handing a call to one
that is waiting (a handle, three events and a cancel scope per task), and a stdio host's
every request is a call of its own. Measured by ``bench/`` row (d). A waiting task waits
on an asyncio future of its own (the daemon runs on asyncio): an anyio memory stream's
receive costs an event, a task lookup and a cancel check more per call.

Invariants:

- Every call given to ``start_soon`` runs, in a task of ``tg``, concurrently with the
  others: it goes to a waiting task if there is one, else to a new task. Nothing waits
  behind a busy task.
- At most ``spare`` tasks wait for work; a task finding that many already waiting ends.
- ``close`` ends the waiting tasks (so the task group can finish); the busy ones end
  after their call. Calls given after ``close`` start tasks of their own.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Final

from anyio.abc import TaskGroup

__all__ = ["Workers"]

_SPARE: Final = 8

Call = tuple[Callable[..., Awaitable[Any]], tuple[Any, ...]]


class Workers:
    def __init__(self, tg: TaskGroup, spare: int = _SPARE) -> None:
        self._tg = tg
        self._spare = spare
        # One future per task waiting for work; a call is handed to one by its result
        # (None: closed). Taken off before it is given, so no task gets two calls.
        self._idle: deque[asyncio.Future[Call | None]] = deque()
        self._closed = False

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        while self._idle and not self._closed:
            waiter = self._idle.pop()  # the task that waited least: its frames are warm
            if not waiter.done():  # (else cancelled while waiting)
                waiter.set_result((fn, args))
                return
        self._tg.start_soon(self._work, fn, args)

    def close(self) -> None:
        self._closed = True
        while self._idle:  # the waiting tasks end
            waiter = self._idle.pop()
            if not waiter.done():
                waiter.set_result(None)

    async def _work(self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        while True:
            await fn(*args)
            if self._closed or len(self._idle) >= self._spare:
                return
            waiter: asyncio.Future[Call | None] = asyncio.get_running_loop().create_future()
            self._idle.append(waiter)
            try:
                call = await waiter
            finally:
                if not waiter.done():  # cancelled while waiting: no call may come now
                    waiter.cancel()
            if call is None:
                return  # closed while waiting
            fn, args = call
