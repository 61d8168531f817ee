"""A subscription as a ``text/event-stream`` body.

Invariants:

- Each event is ``id: <seq>`` (absent for a ``gap``, so a client resuming from its
  last id asks again for what the gap stands for), ``event: <kind>`` and one ``data:``
  line of JSON; JSON never holds a raw newline, so one line always suffices.
- A comment goes out first (the client knows the stream is open and subscribed) and
  after every ``keepalive`` seconds of silence (proxies keep the connection, and a
  client that went away is noticed at the next write).
- However the stream ends (the bus closed, the client gone, cancelled), the
  subscription is closed and forgotten by the bus.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Final

import anyio

from mcpx import wire

from ._bus import Event, Subscription

__all__ = ["encode", "sse_stream"]

_OPEN: Final = b": mcpx events\n\n"
_KEEPALIVE: Final = b": keepalive\n\n"


def encode(event: Event) -> bytes:
    head = b"" if event.seq is None else b"id: %d\n" % event.seq
    body = wire.dumps(event.to_json())
    return head + b"event: " + event.kind.encode() + b"\ndata: " + body + b"\n\n"


async def sse_stream(sub: Subscription, keepalive: float) -> AsyncGenerator[bytes]:
    try:
        yield _OPEN
        while True:
            event: Event | None = None
            # Never yield inside the cancel scope: the consumer's code would run in it.
            with anyio.move_on_after(keepalive):
                try:
                    event = await sub.receive()
                except anyio.EndOfStream:
                    return
            yield _KEEPALIVE if event is None else encode(event)
    finally:
        sub.close()
