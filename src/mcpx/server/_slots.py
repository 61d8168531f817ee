"""How many requests one client may have running at once: a counter with a queue.

Job: bound a client's requests in flight (``proto.maxConcurrentCalls``). On ``/mcp`` a
request that comes alone takes a slot now or is refused (``take_nowait``): waiting would
hold its connection and a task per request, with no bound on how many wait. The
requests of a batch wait in line for slots (``take``): a batch is one message, and
answering part of it with refusals would split its answer; the batch's own length is
bounded (``proto.maxBatch``), so how many wait is bounded too. A stdio host's requests
wait in line, and its reader waits (``drained``) until nobody does: backpressure.

Invariants:

- At most ``limit`` slots are taken at once.
- A slot given back goes to the longest waiting ``take`` first; ``take_nowait`` never
  jumps ahead of a waiter (it is refused while anyone waits).
- A ``take`` cancelled after its slot was handed over gives it back at once: no slot
  is lost to cancellation.
"""

from __future__ import annotations

from collections import deque

import anyio
from anyio.lowlevel import cancel_shielded_checkpoint, checkpoint_if_cancelled

__all__ = ["Slots"]


class Slots:
    """``limit`` slots, taken and given back by one client's requests."""

    __slots__ = ("_drained", "_limit", "_taken", "_waiters")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._taken = 0
        # Made when someone first waits: most clients never do, and each holds a Slots.
        self._waiters: deque[anyio.Event] | None = None
        self._drained: anyio.Event | None = None  # made by a ``drained`` that waits

    @property
    def taken(self) -> int:
        return self._taken

    @property
    def free(self) -> int:
        return self._limit - self._taken

    @property
    def waiting(self) -> int:
        return len(self._waiters) if self._waiters else 0

    def take_nowait(self) -> bool:
        """Take a slot if one is free and nobody waits for one; whether it was taken."""
        if self._taken >= self._limit or self._waiters:
            return False
        self._taken += 1
        return True

    async def take(self) -> None:
        """Take a slot, waiting in line for one."""
        await checkpoint_if_cancelled()
        if self.take_nowait():
            await cancel_shielded_checkpoint()  # taken: a cancel now would lose it
            return
        handed = anyio.Event()
        if self._waiters is None:
            self._waiters = deque()
        self._waiters.append(handed)
        try:
            await handed.wait()
        except BaseException:
            if handed.is_set():
                self.give()  # handed over as this waiter was cancelled: pass it on
            else:
                self._waiters.remove(handed)
                self._wake_drained()
            raise

    def give(self) -> None:
        """Give a slot back: to the first waiter (it stays taken), else free."""
        if self._waiters:
            self._waiters.popleft().set()
            self._wake_drained()
        else:
            self._taken -= 1

    async def drained(self) -> None:
        """Until nobody waits in line for a slot."""
        while self._waiters:
            self._drained = anyio.Event()
            await self._drained.wait()

    def _wake_drained(self) -> None:
        if not self._waiters and self._drained is not None:
            self._drained.set()
            self._drained = None
