"""The calls running for hosts, credited with what their upstream says during them.

Invariants:

- A host's ``progressToken`` never goes upstream: the call carries one of mcpx's own
  (``mcpx-<n>``, unique in the daemon, so on every upstream connection), and each
  ``notifications/progress`` for it reaches the host with the host's token restored.
- Progress is relayed only while the call is in flight, only when it moves forward,
  never after it reached its total, and at most once per ``PROGRESS_INTERVAL`` per call,
  except the report that reaches the total.
- ``notifications/message`` names no request: it goes to a call only when that call is
  the only one in flight on the instance that sent it (server and pool scope key, as
  questions are attributed), and only when it meets the level the call's host asked
  for; a host that set no level gets none (S-LOG-4). A line no call can be credited
  with reaches no host (S-HTTP-12, S-HTTP-13), only the daemon's log and events. At
  most ``LOG_LINES_PER_SECOND`` lines a second reach a call's host: a flooding upstream
  is not relayed line for line (C-LOG-5).
- Relaying never blocks the upstream's reader: ``notify`` is synchronous, and the
  transport behind it queues or drops.
- A script's run (``mcpx_exec``) is one caller making many calls: each call it makes is
  registered as a member of the run and is asked through the run's asker. When the run
  ends its membership is removed everywhere: a straggling call of it is nobody's.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from mcpx.config import LEVEL_RANK, LOG_LEVELS, more_verbose

__all__ = ["LEVELS", "CallsInFlight", "HostAsker", "Notify", "more_verbose"]

# Sends one notification (method, params) to the host, spelled for its revision.
Notify = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class HostAsker:
    """How a question reaches the host that made a call: whether it declared what the
    question needs (``can``), and asking it in its own era (``ask``). ``brokered`` is
    told of every question the broker holds for the call's server while the call runs
    (a caller that cannot be asked in-band returns with it)."""

    can: Callable[[str, Mapping[str, Any]], bool]
    ask: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
    brokered: Callable[[Any], None] | None = None


LEVELS: Final = LOG_LEVELS
PROGRESS_INTERVAL: Final = 0.02
LOG_LINES_PER_SECOND: Final = 100
_RANK: Final = LEVEL_RANK


@dataclass
class _Call:
    server: str
    scope: str
    notify: Notify
    level: str | None
    host_token: str | int | None
    asker: HostAsker | None = None
    last: float = -math.inf
    finished: bool = False
    sent_at: float = -math.inf
    dropped: int = field(default=0)
    # Log lines relayed in the current one-second window, and when it began.
    lines: int = 0
    lines_since: float = -math.inf
    # The script run this call is part of (None: a call of its own).
    run: str | None = None


class CallsInFlight:
    """The calls in flight whose upstream notifications go back to a host."""

    def __init__(self) -> None:
        self._calls: dict[int, _Call] = {}
        self._by_token: dict[str, _Call] = {}
        self._ids = itertools.count(1)
        # Script runs in progress, each with how its starter can be asked.
        self._runs: dict[str, HostAsker | None] = {}

    @contextmanager
    def run(self, run_id: str, asker: HostAsker | None) -> Iterator[None]:
        """Register a script run for its duration: calls naming it join it."""
        self._runs[run_id] = asker
        try:
            yield
        finally:
            del self._runs[run_id]
            for entry in self._calls.values():
                if entry.run == run_id:
                    entry.run, entry.asker = None, None

    def runs(self) -> int:
        """How many script runs are live."""
        return len(self._runs)

    def run_asker(self, run_id: str) -> HostAsker | None:
        """How the starter of the live run ``run_id`` can be asked.

        Raises:
            KeyError: no such run is live.
        """
        return self._runs[run_id]

    def call(
        self,
        server: str,
        notify: Notify | None,
        meta: Mapping[str, Any] | None,
        level: str | None,
        asker: HostAsker | None = None,
        scope: str = "",
        run: str | None = None,
    ) -> _Registered:
        """Register one call for its duration (a context manager), on the instance of
        ``server`` for the pool's ``scope`` key (a member of script ``run`` when one is
        named, and live); it gives the upstream progress token (None when the host asked
        for no progress or cannot be told)."""
        n = next(self._ids)
        host_token = meta.get("progressToken") if meta is not None else None
        if run is not None and run not in self._runs:
            run = None  # ended meanwhile: nobody's
        entry = _Call(server, scope, notify or _nobody, level, host_token, asker, run=run)
        if notify is None:
            host_token = None  # nobody to tell: no progress asked for upstream
        token = f"mcpx-{n}" if isinstance(host_token, str | int) else None
        return _Registered(self, n, entry, token)

    def calls_on(self, server: str, scope: str = "") -> list[HostAsker | None]:
        """The calls in flight on ``server``'s instance for ``scope`` (each with how its
        host can be asked)."""
        return [c.asker for c in self._calls.values() if c.server == server and c.scope == scope]

    def owner(self, server: str, scope: str, in_flight: int | None) -> HostAsker | None:
        """Whose the question ``server``'s instance for ``scope`` asks now is: the one
        call there, or the one run all the calls there belong to, when nobody else has a
        request in flight on it (``in_flight``: the pool's count; None: no pool)."""
        on = [c for c in self._calls.values() if c.server == server and c.scope == scope]
        if not on:
            return None
        counted = len(on) if in_flight is None else in_flight
        if len(on) == 1 and counted <= 1:
            return on[0].asker
        run = on[0].run
        if run is not None and all(c.run == run for c in on) and counted <= len(on):
            return self._runs.get(run)
        return None

    def upstream_notified(
        self, server: str, method: str, params: Mapping[str, Any], scope: str = ""
    ) -> int:
        """Relay one upstream notification from ``server``'s instance for ``scope``; how
        many hosts were told."""
        if method == "notifications/progress":
            return self._progress(params)
        if method == "notifications/message":
            return self._message(server, scope, params)
        return 0

    def _progress(self, params: Mapping[str, Any]) -> int:
        entry = self._by_token.get(str(params.get("progressToken")))
        progress = params.get("progress")
        if entry is None or entry.finished or not isinstance(progress, int | float):
            return 0
        if progress <= entry.last:
            return 0  # only forward movement is news
        total = params.get("total")
        final = isinstance(total, int | float) and progress >= total
        now = time.monotonic()
        if not final and now - entry.sent_at < PROGRESS_INTERVAL:
            entry.dropped += 1
            return 0
        entry.last, entry.sent_at, entry.finished = progress, now, final
        entry.notify("notifications/progress", {**params, "progressToken": entry.host_token})
        return 1

    def _message(self, server: str, scope: str, params: Mapping[str, Any]) -> int:
        level = params.get("level")
        if level not in _RANK:
            return 0
        on = [c for c in self._calls.values() if c.server == server and c.scope == scope]
        if len(on) != 1 or on[0].level not in _RANK:
            return 0
        entry = on[0]
        if _RANK[str(level)] < _RANK[str(entry.level)]:
            return 0
        now = time.monotonic()
        if now - entry.lines_since >= 1.0:
            entry.lines, entry.lines_since = 0, now
        if entry.lines >= LOG_LINES_PER_SECOND:
            entry.dropped += 1
            return 0
        entry.lines += 1
        entry.notify("notifications/message", dict(params))
        return 1


def _nobody(method: str, params: dict[str, Any]) -> None:
    """The notify of a call whose host cannot be told anything now."""


class _Registered:
    """One call registered while inside (a class, not a generator: every upstream call
    enters one, and a generator's context costs several times as much)."""

    __slots__ = ("_calls", "_entry", "_n", "_token")

    def __init__(self, calls: CallsInFlight, n: int, entry: _Call, token: str | None) -> None:
        self._calls, self._n, self._entry, self._token = calls, n, entry, token

    def __enter__(self) -> str | None:
        calls, token = self._calls, self._token
        calls._calls[self._n] = self._entry
        if token is not None:
            calls._by_token[token] = self._entry
        return token

    def __exit__(self, *exc: object) -> None:
        calls = self._calls
        calls._calls.pop(self._n, None)
        if self._token is not None:
            calls._by_token.pop(self._token, None)
