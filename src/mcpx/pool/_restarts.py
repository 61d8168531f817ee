"""Back-off between restarts of an upstream that keeps failing.

An instance that fails to start, or breaks within ``_STEADY`` seconds of its start, is
a quick failure. After two quick failures in a row of one (server, scope key) no new
instance is started for a pause: 500 ms, doubling with each further quick failure up to
``pool.restartBackoff`` (0: no pause). Meanwhile whoever wants an instance (a call, the
catalogue, the guard of subscriptions) is refused at once with ``BackingOff``, which
names the last error and when the next start may be; nothing spawns in a loop.

Invariants:
- A first failure costs no pause: a crash once in a while is restarted at once.
- An instance stopped by the pool (idle, retired, shutdown) or that broke after running
  steadily forgets the quick failures before it.
- The pause is bounded by ``pool.restartBackoff``; the records kept, by ``_MOST``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Final

from mcpx.client import UpstreamError
from mcpx.config import Settings

from ._instance import Instance

__all__ = ["BackingOff", "Restarts"]

Key = tuple[str, str]

_FIRST: Final = 0.5
# An instance that broke after running this long was steady: its end is not flapping.
_STEADY: Final = 60.0
# Records kept at most: a server scoped per caller has one per failing caller, and callers
# come and go. Beyond it the oldest goes (its next start is then a fresh one).
_MOST: Final = 4096


class BackingOff(UpstreamError):
    """No instance is started now: the last ones kept failing. ``retry_in``: seconds."""

    def __init__(self, message: str, retry_in: float) -> None:
        super().__init__(message)
        self.retry_in = retry_in


@dataclass
class _Failing:
    failures: int
    error: str
    at: float  # wall clock of the last failure
    next_start: float  # monotonic
    cause: Exception | None = None  # the last failure (a login needed is found behind it)


class Restarts:
    """The quick failures per (server, scope key), and the pause they impose."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._failing: dict[Key, _Failing] = {}

    def ended(self, key: Key, inst: Instance) -> None:
        """``inst`` has ended: count it if it failed quickly, forget the key if not."""
        lived = time.time() - inst.started_at
        if inst.state not in ("failed", "broken") or lived >= _STEADY:
            self._failing.pop(key, None)
        if inst.state not in ("failed", "broken"):
            return
        before = self._failing.get(key)
        failures = before.failures + 1 if before else 1
        cap = float(self._settings["pool.restartBackoff"])
        pause = 0.0 if failures < 2 else min(_FIRST * 2 ** (failures - 2), cap)
        error = inst.error or inst.state
        self._failing.pop(key, None)  # re-inserted: the dict's order is the age of records
        self._failing[key] = _Failing(
            failures, error, time.time(), time.monotonic() + pause, inst.failure
        )
        while len(self._failing) > _MOST:
            del self._failing[next(iter(self._failing))]

    def check(self, key: Key) -> None:
        """Raises ``BackingOff`` while ``key``'s pause lasts."""
        failing = self._failing.get(key)
        if failing is None:
            return
        left = failing.next_start - time.monotonic()
        if left > 0:
            raise BackingOff(
                f"{key[0]}: not started again for {left:.1f}s after {failing.failures} "
                f"failures in a row; last error: {failing.error}",
                left,
            ) from failing.cause

    def forget(self, name: str) -> None:
        """``name``'s entry changed or went: its next start is a fresh one."""
        for key in [k for k in self._failing if k[0] == name]:
            del self._failing[key]

    def status(self, name: str) -> dict[str, Any] | None:
        """The latest quick failures of ``name`` (any scope key), or None."""
        mine = [f for (n, _), f in self._failing.items() if n == name]
        if not mine:
            return None
        last = max(mine, key=lambda f: f.at)
        left = max(0.0, last.next_start - time.monotonic())
        return {
            "state": "backoff" if left > 0 else "failing",
            "failures": last.failures,
            "lastError": last.error,
            "lastFailureAt": round(last.at, 3),
            "nextStartIn": round(left, 3),
        }
