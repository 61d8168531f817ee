"""Request ids for one direction of one connection.

Invariants:

- A counter never hands out the same id twice, and never 0.
- ``RequestIds(negative=True)`` hands out -1, -2, ...: mcpx sends its server-side
  requests with negative ids, because several clients key one table by id and must not
  see a server's request collide with one of their own.
- Not thread-safe: one counter belongs to one connection, driven from one task.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["RequestIds"]


class RequestIds(Iterator[int]):
    """Hands out 1, 2, 3, ... (or -1, -2, -3, ... with ``negative=True``)."""

    __slots__ = ("_last", "_step")

    def __init__(self, *, negative: bool = False) -> None:
        self._step = -1 if negative else 1
        self._last = 0

    def __repr__(self) -> str:
        return f"RequestIds(negative={self._step < 0}, last={self._last})"

    def __next__(self) -> int:
        return self.next()

    def next(self) -> int:
        """The next unused id."""
        self._last += self._step
        return self._last

    def issued(self, value: object) -> bool:
        """``value`` is an id this counter has handed out (so a response to it is ours)."""
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        return value != 0 and 0 <= value * self._step <= self._last * self._step
