"""The legacy ``/mcp`` sessions of one daemon: a table that is bounded and costs O(1).

Job: keep each session's state by its ``Mcp-Session-Id``, end the ones left idle for
``proto.sessionIdle``, and make room under ``proto.maxSessions``.

Why it is shaped so: pruning used to walk every session on every request, so each
request cost as much as the sessions held (29,000 idle sessions: 30 calls a second).
Here the sessions that are idle sit in an ordered dict, least recently used first:
using one moves it to the end, expiry pops from the front and stops at the first that
is still fresh. Every request costs O(1); each session is popped once (amortised O(1)).

Invariants:

- A session is idle when it has no request in flight and no GET stream open (``hold``
  and ``free`` count both). Only idle sessions are in ``_idle``, ordered by last use;
  a busy one never expires and is never evicted (its host is plainly there).
- ``free`` of the last hold puts the session back at the end of ``_idle`` as used now;
  a session that ended meanwhile is not put back.
- At ``limit`` sessions, a new one ends the least recently used idle session (which,
  like any ended session, is answered 404 from then on, and the spec has its host start
  a new one). When every session is busy, ``room`` says no and the new one is refused
  (503): evicting a busy session would break a host in the middle of its work.
- Ending a session is ``on_end``'s business (its streams, subscriptions, instances);
  the table only forgets it, once, and tells ``telemetry`` how long it lasted.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import anyio

from mcpx import wire
from mcpx.server import Conn, HostSession

if TYPE_CHECKING:
    from mcpx.ops import Telemetry

__all__ = ["Session", "Sessions"]

# Frames waiting for a session's GET stream; beyond this the oldest are dropped (they
# are change hints, and a client that never opens the stream never reads them).
_OUTBOX: Final = 256


@dataclass(eq=False, slots=True)
class Session:
    """One legacy session: the host's session (``server.HostSession``), when it was last
    used, whether it ended, and what waits for its GET stream.

    What only a GET stream needs (the queue of pushed frames, the event that wakes the
    stream) is made when first needed: most sessions never open one, and a table of
    ``proto.maxSessions`` of them should cost little.
    """

    sid: str
    host: HostSession
    used: float = field(default_factory=time.monotonic)
    busy: int = 0  # requests in flight and GET streams open
    streams: int = 0  # GET streams open
    ended: bool = False
    began: float = field(default_factory=time.monotonic)  # for its duration, at its end
    _outbox: deque[wire.Frame] | None = None
    _wake: anyio.Event | None = None

    @property
    def conn(self) -> Conn:
        return self.host.conn

    def deliver(self, frame: dict[str, Any]) -> None:
        """The session's push: queued for its GET stream (sync, never blocks)."""
        if self._outbox is None:
            self._outbox = deque(maxlen=_OUTBOX)
        self._outbox.append(frame)
        self._wakeup()

    def pushed(self) -> list[wire.Frame]:
        """The frames waiting for a GET stream, taken from the queue."""
        if not self._outbox:
            return []
        frames = list(self._outbox)
        self._outbox.clear()
        return frames

    async def wait_pushed(self, timeout: float) -> bool:
        """Until a frame is delivered or the session ends (True), or ``timeout`` (False)."""
        if self._outbox or self.ended:
            return True
        if self._wake is None:
            self._wake = anyio.Event()  # shared by every stream of the session
        wake = self._wake
        with anyio.move_on_after(timeout):
            await wake.wait()
        return wake.is_set()

    def end(self) -> None:
        self.ended = True
        self._wakeup()

    def _wakeup(self) -> None:
        if self._wake is not None:
            self._wake.set()
            self._wake = None


class Sessions:
    """Sessions by id; the idle ones also in order of last use."""

    def __init__(
        self,
        on_end: Callable[[Session], None],
        clock: Callable[[], float] = time.monotonic,
        telemetry: Callable[[], Telemetry | None] = lambda: None,
    ) -> None:
        self._all: dict[str, Session] = {}
        self._idle: OrderedDict[str, Session] = OrderedDict()
        self._on_end = on_end
        self._clock = clock
        self._telemetry = telemetry

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._all))

    def get(self, sid: str) -> Session | None:
        return self._all.get(sid)

    def room(self, limit: int) -> bool:
        """Whether one more session fits, ending the least recently used idle one if
        that makes room; False when ``limit`` are held and all of them are busy."""
        while len(self._all) >= limit:
            if not self._idle:
                return False
            self.end(next(iter(self._idle)))
        return True

    def add(self, session: Session) -> None:
        session.used = self._clock()
        self._all[session.sid] = session
        self._idle[session.sid] = session

    def touch(self, session: Session) -> None:
        """``session`` was used now."""
        session.used = self._clock()
        if session.sid in self._idle:
            self._idle.move_to_end(session.sid)

    def hold(self, session: Session) -> None:
        """A request or a stream of ``session`` began: it is not idle until ``free``."""
        session.busy += 1
        self._idle.pop(session.sid, None)

    def free(self, session: Session) -> None:
        """What ``hold`` began ended; the last one makes the session idle, used now."""
        session.busy -= 1
        session.used = self._clock()
        if not session.busy and self._all.get(session.sid) is session:
            self._idle[session.sid] = session

    def prune(self, idle: float) -> int:
        """End the sessions idle for ``idle`` seconds; how many. Stops at the first
        fresh one: the ones behind it were used later."""
        limit = self._clock() - idle
        ended = 0
        while self._idle:
            sid, oldest = next(iter(self._idle.items()))
            if oldest.used >= limit:
                break
            self.end(sid)
            ended += 1
        return ended

    def end(self, sid: str) -> bool:
        """Forget session ``sid`` and end it (``on_end``); False if there was none."""
        session = self._all.pop(sid, None)
        if session is None:
            return False
        self._idle.pop(sid, None)
        session.end()
        telemetry = self._telemetry()
        if telemetry is not None:
            conn = session.conn
            telemetry.session_ended(conn.transport, conn.revision, time.monotonic() - session.began)
        self._on_end(session)
        return True

    def close(self) -> None:
        """End every session (the daemon is stopping)."""
        for sid in list(self._all):
            self.end(sid)
