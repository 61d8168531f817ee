"""2026-07-28 ``subscriptions/listen`` streams on one upstream session.

A listen stream is a request that stays open: the server acknowledges it, then sends
the notifications it agreed to, each carrying the stream's id in
``_meta.io.modelcontextprotocol/subscriptionId``. ``Listeners.route`` hands such a
notification to the stream it belongs to; ``Listeners.open`` holds one stream open,
opening it again after a growing pause when the server ends it.

Invariants:

- A notification is delivered only to a stream still open; one that belongs on a
  request's own stream (progress, log messages: C-SUB-9) is dropped, not credited.
- Delivery never waits: a stream whose reader is behind loses the notification (logged).
- A stream opens only on a modern session; leaving ``open`` ends it (closing the stream
  over HTTP, ``notifications/cancelled`` on stdio) and stops reopening.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from mcpx import wire

from ._errors import UpstreamError
from ._requests import Requester

__all__ = ["Listeners"]

log = logging.getLogger("mcpx.client")

# A listen stream the server ends is reopened after a pause that doubles up to
# the maximum, and starts small again after a stream that lasted a while.
_REOPEN_FIRST: Final = 0.1
_REOPEN_MAX: Final = 30.0
_REOPEN_RESET: Final = 10.0
# These belong on a request's own stream, never on a listen stream.
_REQUEST_SCOPED: Final = frozenset({"notifications/progress", "notifications/message"})


class Listeners:
    """The listen streams open on one session, by the id of their request."""

    def __init__(self, requester: Requester) -> None:
        self.requester = requester
        self.conn = requester.conn
        self.name = requester.name
        self._streams: dict[wire.RequestId, MemoryObjectSendStream[dict[str, Any]]] = {}

    def route(self, method: str, params: dict[str, Any]) -> bool:
        """Deliver a notification to the listen stream it belongs to, if any."""
        sub = (params.get("_meta") or {}).get("io.modelcontextprotocol/subscriptionId")
        stream = self._streams.get(sub) if sub is not None else None
        if stream is None:
            return False
        if method in _REQUEST_SCOPED:
            # These belong on a request's own stream (C-SUB-9): credited to no call.
            log.info("%s sent %s on a listen stream; dropped", self.name, method)
            return True
        try:
            stream.send_nowait({"method": method, "params": params})
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.warning("%s: a listen stream is not being read; dropped %s", self.name, method)
        return True

    @asynccontextmanager
    async def open(
        self, notifications: dict[str, Any], *, reopen: bool = True, buffer: int = 256
    ) -> AsyncIterator[anyio.abc.ObjectReceiveStream[dict[str, Any]]]:
        """A listen stream (see ``Session.listen``).

        Raises:
            UpstreamError: the session is not modern.
        """
        if not self.requester.handshake.modern:
            raise UpstreamError(f"{self.name} is legacy: it has no subscriptions/listen")
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](buffer)

        async def hold() -> None:
            pause = _REOPEN_FIRST
            with send:
                while True:
                    opened = anyio.current_time()
                    await self._listen_once(notifications, send)
                    if not reopen or self.conn.broken is not None:
                        return
                    if anyio.current_time() - opened > _REOPEN_RESET:
                        pause = _REOPEN_FIRST
                    await anyio.sleep(pause)
                    pause = min(pause * 2, _REOPEN_MAX)

        async with anyio.create_task_group() as tg:
            tg.start_soon(hold)
            try:
                async with receive:
                    yield receive
            finally:
                tg.cancel_scope.cancel()

    async def _listen_once(
        self, notifications: dict[str, Any], send: MemoryObjectSendStream[dict[str, Any]]
    ) -> None:
        rid = self.conn.reserve_id()
        self._streams[rid] = send
        params = {"notifications": notifications, "_meta": self.requester.meta(None, None)}
        headers = self.requester.modern_headers("subscriptions/listen", params)
        try:
            await self.conn.request("subscriptions/listen", params, headers=headers, request_id=rid)
            log.info("%s ended a listen stream", self.name)
        except (UpstreamError, wire.McpError) as exc:
            log.info("%s: listen stream ended: %s", self.name, exc)
        finally:
            self._streams.pop(rid, None)
