"""The inbound queue every transport hands to ``receive()``: frames in order, then the reason.

Invariants:

- Items come out in the order they were put, from any number of producer tasks.
- ``close(reason)`` ends the inbox once: the first reason wins, later ones are ignored. Items
  already queued are still delivered; after them every ``get()`` raises the reason.
- The buffer is bounded, so a consumer that falls behind slows its producers (a pipe or a
  socket then pushes back on the peer) instead of growing memory without limit.
- Routed (``route_to``), items go to the route in the order they are put, none queued:
  the route's own work is what slows the producer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._base import Inbound, TransportClosed

__all__ = ["Inbox"]

# Enough to ride out a burst of notifications without stalling a reader on every frame.
_BUFFER = 256


class Inbox:
    """A bounded, closable queue of ``Inbound`` items with a closing reason."""

    def __init__(self, buffer: int = _BUFFER) -> None:
        self._send: MemoryObjectSendStream[Inbound]
        self._receive: MemoryObjectReceiveStream[Inbound]
        self._send, self._receive = anyio.create_memory_object_stream[Inbound](buffer)
        self._reason: TransportClosed | None = None
        self._closed = anyio.Event()
        self._route: Callable[[Inbound], None] | None = None

    def route_to(self, route: Callable[[Inbound], None]) -> None:
        """Hand each item to ``route`` as it is put, in the putter's task, instead of
        queueing it; what is queued already goes first. ``get`` then only raises the
        closing reason."""
        with contextlib.suppress(anyio.WouldBlock, anyio.EndOfStream):
            while True:
                route(self._receive.receive_nowait())
        self._route = route

    @property
    def reason(self) -> TransportClosed | None:
        """Why the inbox was closed, or None while it is open."""
        return self._reason

    def put_now(self, item: Inbound) -> bool:
        """Routed only: hand ``item`` to the route at once; False when closed."""
        assert self._route is not None
        if self._reason is not None:
            return False
        self._route(item)
        return True

    async def put(self, item: Inbound) -> bool:
        """Queue ``item``, waiting for room; False when the inbox is (or becomes) closed."""
        if self._route is not None:
            if self._reason is not None:
                return False
            self._route(item)
            return True
        try:
            try:
                # With room, no trip through the event loop (send() always takes one).
                self._send.send_nowait(item)
            except anyio.WouldBlock:
                await self._send.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    async def get(self) -> Inbound:
        """The next item.

        Raises:
            TransportClosed: the inbox is closed and drained; the closing reason.
        """
        try:
            try:
                # Queued already: no trip through the event loop (receive() always takes one).
                return self._receive.receive_nowait()
            except anyio.WouldBlock:
                return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise self.closed_error() from None

    def close(self, reason: TransportClosed) -> None:
        """End the inbox with ``reason`` unless it already ended."""
        if self._reason is not None:
            return
        self._reason = reason
        self._send.close()
        self._closed.set()

    async def wait_closed(self) -> None:
        """Return once ``close`` has been called."""
        await self._closed.wait()

    def closed_error(self) -> TransportClosed:
        """A fresh exception carrying the closing reason (or a generic one while open).

        A new instance each time: re-raising one object from many places would chain
        their tracebacks together.
        """
        reason = self._reason
        if reason is None:
            return TransportClosed("transport closed")
        fresh = TransportClosed(*reason.args)
        fresh.__cause__ = reason.__cause__
        return fresh

    def discard(self) -> None:
        """Drop everything still queued and release both ends; for when the owner is done."""
        self.close(TransportClosed("transport closed"))
        self._receive.close()
