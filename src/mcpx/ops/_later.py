"""Bookkeeping after the answer: ``later(fn, *args)`` runs ``fn(*args)`` once the task
that calls it next waits.

A call's metrics, its call-log record and its ``call.finished`` event are made where the
call ends, but nobody waits for them: a host sent its answer waits for nothing else. Run
later, they are done while the host reads the answer (or the upstream works on the
request) instead of before it.

Invariants:

- ``fn`` runs on the event loop, before anything that arrives after the call's answer
  was written is read: a ``GET /metrics``, ``/v1/calls`` or ``/v1/events`` sent after the
  answer sees what it did (the loop runs callbacks in order, and a later request only
  reaches a task through the loop).
- Callbacks run in the order given; one that raises is logged and the others still run.
- Outside an event loop (a synchronous caller), ``fn`` runs at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["later"]

log = logging.getLogger("mcpx.ops")


def later(fn: Callable[..., object], *args: Any) -> None:
    """``fn(*args)`` once the calling task next waits (at once without a loop)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        fn(*args)
        return
    loop.call_soon(_logged, fn, args)


def _logged(fn: Callable[..., object], args: tuple[Any, ...]) -> None:
    try:
        fn(*args)
    except Exception:
        log.exception("bookkeeping after a call failed: %r", fn)
