"""The daemon's event bus: numbered events, a bounded history, filtered subscribers.

Invariants:

- Every published event gets the next ``seq`` (1, 2, …) and a wall-clock ``ts``; the
  last ``history`` events are retained for replay, the oldest dropped first.
- ``publish`` is synchronous and never waits for, or fails because of, a subscriber:
  each has a bounded buffer, and what does not fit becomes one ``gap`` event, delivered
  where the missing events would have been; later events follow it.
- A subscriber sees events in ``seq`` order, each at most once: with ``since``, first
  the retained history after it (a ``gap`` first when ``since`` is older than what is
  retained, or from an earlier daemon's life), then live events.
- A ``gap`` belongs to its subscriber: it has no ``seq`` (resuming from the last event
  seen asks again for what it stands for) and passes every filter.
- Publishing and waking happen on the event loop's thread (the hooks run there); the
  only awaiting is a subscriber's own ``receive``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from anyio.abc import ObjectReceiveStream
from anyio.lowlevel import cancel_shielded_checkpoint, checkpoint, checkpoint_if_cancelled

__all__ = ["GAP", "Event", "EventBus", "EventFilter", "Subscription"]

GAP: Final = "gap"
# Per subscriber: events waiting for it beyond this are counted into a gap instead.
BUFFER: Final = 256


@dataclass(frozen=True, slots=True)
class Event:
    seq: int | None  # None only for a gap
    kind: str
    ts: float
    data: Mapping[str, Any]
    server: str | None = None
    uri: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {} if self.seq is None else {"seq": self.seq}
        out |= {"kind": self.kind, "ts": self.ts}
        if self.server is not None:
            out["server"] = self.server
        if self.uri is not None:
            out["uri"] = self.uri
        out["data"] = dict(self.data)
        return out


def _gap(first: int, last: int, reason: str, ts: float) -> Event:
    return Event(None, GAP, ts, {"from": first, "to": last, "reason": reason})


def same_uri(a: str, b: str) -> bool:
    """URIs compared as given, except that a leading "/" does not count (on either side)."""
    return a.removeprefix("/") == b.removeprefix("/")


@dataclass(frozen=True)
class EventFilter:
    """Which events a subscriber wants; an empty field does not narrow."""

    kinds: frozenset[str] = frozenset()
    server: str | None = None
    uri: str | None = None

    @classmethod
    def of(
        cls,
        kinds: str | Iterable[str] | None = None,
        server: str | None = None,
        uri: str | None = None,
    ) -> EventFilter:
        """From user input: ``kinds`` a comma-separated list or an iterable of kinds."""
        parts = kinds.split(",") if isinstance(kinds, str) else (kinds or ())
        return cls(frozenset(k.strip() for k in parts if k.strip()), server or None, uri or None)

    def matches(self, event: Event) -> bool:
        if event.kind == GAP:
            return True  # what a subscriber missed is news whatever it asked for
        if self.kinds and event.kind not in self.kinds:
            return False
        if self.server is not None and event.server != self.server:
            return False
        return self.uri is None or (event.uri is not None and same_uri(event.uri, self.uri))


@dataclass
class _Missed:
    """A gap still growing at the end of a subscriber's buffer."""

    first: int
    last: int
    ts: float


class Subscription(ObjectReceiveStream[Event]):
    """One subscriber's events: an async iterator, ended by ``close`` or the bus's close."""

    def __init__(self, bus: EventBus, filter: EventFilter, buffer: int) -> None:
        self.filter = filter
        self.missed = 0  # events lost to overflow, in all
        self._bus = bus
        self._bound = max(1, buffer)
        self._replay: deque[Event] = deque()
        self._live: deque[Event | _Missed] = deque()
        self._count = 0  # Events (not gaps) in _live
        self._tail: _Missed | None = None
        self._ended = False  # no more will come: EndOfStream once drained
        self._closed = False  # closed here: nothing more is read
        self._wake: anyio.Event | None = None

    # -- the bus's side ------------------------------------------------------------

    def _offer(self, event: Event) -> None:
        if not self.filter.matches(event):
            return
        assert event.seq is not None
        if self._count < self._bound:
            self._live.append(event)
            self._count += 1
            self._tail = None  # a gap before it is closed: it sits in order
        elif self._tail is None:
            self._tail = _Missed(event.seq, event.seq, event.ts)
            self._live.append(self._tail)
            self.missed += 1
            self._bus.dropped += 1
        else:
            self._tail.last = event.seq
            self.missed += 1
            self._bus.dropped += 1
        self._wakeup()

    def _end(self) -> None:
        self._ended = True
        self._wakeup()

    def _wakeup(self) -> None:
        if self._wake is not None:
            self._wake.set()

    # -- the subscriber's side -----------------------------------------------------

    def receive_nowait(self) -> Event:
        """The next event.

        Raises:
            anyio.WouldBlock: none yet. anyio.EndOfStream: none will come.
            anyio.ClosedResourceError: this subscription was closed.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        if self._replay:
            return self._replay.popleft()
        if self._live:
            item = self._live.popleft()
            if isinstance(item, _Missed):
                if item is self._tail:
                    self._tail = None
                return _gap(item.first, item.last, "overflow", item.ts)
            self._count -= 1
            return item
        if self._ended:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self) -> Event:
        await checkpoint_if_cancelled()
        while True:
            try:
                event = self.receive_nowait()
            except anyio.WouldBlock:
                self._wake = anyio.Event()
                try:
                    await self._wake.wait()
                finally:
                    self._wake = None
                continue
            await cancel_shielded_checkpoint()
            return event

    def close(self) -> None:
        """Stop receiving (synchronous: safe in a ``finally`` being cancelled)."""
        self._closed = True
        self._replay.clear()
        self._live.clear()
        self._bus._forget(self)
        self._wakeup()

    async def aclose(self) -> None:
        self.close()
        await checkpoint()


@dataclass
class EventBus:
    """Numbered events for the daemon's ``/v1/events``; one per daemon."""

    history: int = 1024
    buffer: int = BUFFER
    clock: Callable[[], float] = time.time
    _ring: deque[Event] = field(init=False)
    _next: int = field(init=False, default=1)
    _subs: dict[int, Subscription] = field(init=False, default_factory=dict)
    _closed: bool = field(init=False, default=False)
    # Events not delivered to a subscriber whose buffer was full, all subscribers
    # together (``/metrics``' ``mcpx_events_dropped_total``).
    dropped: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self._ring = deque(maxlen=max(0, self.history))

    @property
    def last_seq(self) -> int:
        """The newest event's seq (0 before the first)."""
        return self._next - 1

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    def retained(self) -> list[Event]:
        return list(self._ring)

    def publish(
        self,
        kind: str,
        data: Mapping[str, Any] | None = None,
        *,
        server: str | None = None,
        uri: str | None = None,
    ) -> Event:
        """Number, retain and hand ``data`` (copied) to every subscriber; never waits."""
        event = Event(self._next, kind, round(self.clock(), 3), dict(data or {}), server, uri)
        self._next += 1
        self._ring.append(event)
        for sub in list(self._subs.values()):
            sub._offer(event)
        return event

    def subscribe(
        self, filter: EventFilter | None = None, since: int | None = None
    ) -> Subscription:
        """Events matching ``filter``: with ``since``, those retained after it first
        (``since=0``: all retained), then live ones; without it, live ones only."""
        sub = Subscription(self, filter or EventFilter(), self.buffer)
        if since is not None:
            sub._replay.extend(self._replay(sub.filter, since))
        if self._closed:
            sub._end()
        else:
            self._subs[id(sub)] = sub
        return sub

    def close(self) -> None:
        """End every subscription (each drains what it holds, then ends); later
        subscriptions end at once. Publishing still numbers and retains."""
        self._closed = True
        for sub in list(self._subs.values()):
            sub._end()
        self._subs.clear()

    def _forget(self, sub: Subscription) -> None:
        self._subs.pop(id(sub), None)

    def _replay(self, filter: EventFilter, since: int) -> list[Event]:
        first = self._ring[0].seq if self._ring else self._next
        assert first is not None
        since, reason = max(0, since), "history"
        if since > self.last_seq:
            # Not an id this daemon gave (it restarted): all that is retained is news.
            since, reason = 0, "restart"
        out = []
        if since < first - 1:
            out.append(_gap(since + 1, first - 1, reason, round(self.clock(), 3)))
        out.extend(e for e in self._ring if e.seq is not None and e.seq > since)
        return [e for e in out if filter.matches(e)]
