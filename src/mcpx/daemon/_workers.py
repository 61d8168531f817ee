"""Tasks of a task group that are kept to run the next call once theirs is done.

Why: starting a task in anyio 4.16 costs about 30 µs more than handing a call to one
that is waiting (a handle, three events and a cancel scope per task), and a stdio host's
every request is a call of its own. Measured by ``bench/`` row (d).

Invariants:

- Every call given to ``start_soon`` runs, in a task of ``tg``, concurrently with the
  others: it goes to a waiting task if there is one, else to a new task. Nothing waits
  behind a busy task.
- At most ``spare`` tasks wait for work; a task finding that many already waiting ends.
- ``close`` ends the waiting tasks (so the task group can finish); the busy ones end
  after their call. Calls given after ``close`` start tasks of their own.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

__all__ = ["Workers"]

_SPARE: Final = 8

Call = tuple[Callable[..., Awaitable[Any]], tuple[Any, ...]]


class Workers:
    def __init__(self, tg: TaskGroup, spare: int = _SPARE) -> None:
        self._tg = tg
        self._spare = spare
        self._send, self._receive = anyio.create_memory_object_stream[Call](math.inf)
        # Tasks waiting in _work that no call has been handed to yet: counted down by
        # the giver, so a task woken but not yet running is never given a second call.
        self._waiting = 0
        self._closed = False

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        if self._waiting and not self._closed:
            self._waiting -= 1
            self._send.send_nowait((fn, args))
        else:
            self._tg.start_soon(self._work, fn, args)

    def close(self) -> None:
        self._closed = True
        self._send.close()  # the waiting tasks see the end of the stream, and end
        self._receive.close()

    async def _work(self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        while True:
            await fn(*args)
            if self._closed or self._waiting >= self._spare:
                return
            self._waiting += 1
            try:
                fn, args = await self._receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return  # closed while waiting
