"""The restart back-off's records are bounded: one per failing (server, scope key), the
oldest dropped beyond ``_MOST`` (a server scoped per caller has one per failing caller)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from mcpx.config import resolve
from mcpx.pool._restarts import _MOST, BackingOff, Restarts


def _failed() -> Any:
    # What Restarts reads of an ended instance: it failed just now.
    return SimpleNamespace(
        state="failed", started_at=time.time(), error="exited with 1", failure=None
    )


def test_the_records_are_capped_and_the_oldest_goes() -> None:
    restarts = Restarts(resolve(file=None, env={}, flags={"pool.restartBackoff": "30"}))
    for caller in range(_MOST + 10):
        key = ("flap", f"caller-{caller}")
        restarts.ended(key, _failed())
        restarts.ended(key, _failed())  # twice in a row: a pause
    # The newest caller is still held back; the oldest was forgotten: a fresh start.
    try:
        restarts.check(("flap", f"caller-{_MOST + 9}"))
    except BackingOff as exc:
        assert exc.retry_in > 0
    else:
        raise AssertionError("the newest failing caller was not held back")
    restarts.check(("flap", "caller-0"))
    status = restarts.status("flap")
    assert status is not None and status["failures"] == 2, status
