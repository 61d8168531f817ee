"""A request's answer to come (``Pending``), and a request written ahead of its caller
(``SentAhead``), which the caller's ``Connection.request`` takes instead of writing its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol

from mcpx import wire

__all__ = ["SENT_AHEAD", "Pending", "SentAhead"]


class Pending:
    """One request's answer to come. Waited for on an asyncio future of its own, woken by
    the answer or a timer: every upstream call waits here, and an anyio event and
    ``move_on_after`` scope cost several times as much (the daemon runs on asyncio)."""

    __slots__ = ("_waiter", "answered", "method", "outcome", "then")

    def __init__(self, method: str) -> None:
        self.method = method
        self.outcome: dict[str, Any] | Exception | None = None
        self.answered = False
        self._waiter: asyncio.Future[None] | None = None
        # Told the outcome as it arrives, before the waiter wakes (``SentAhead``).
        self.then: Callable[[dict[str, Any] | Exception], None] | None = None

    def settle(self, outcome: dict[str, Any] | Exception) -> None:
        if not self.answered:
            self.answered = True
            self.outcome = outcome
            if self.then is not None:
                self.then(outcome)
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def answer(self, seconds: float | None) -> bool:
        """Until answered, or ``seconds`` have passed (None: no limit); whether it was.
        Cancellable, as any wait."""
        if self.answered:
            return True
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        timer = None if seconds is None else loop.call_later(seconds, self._wake)
        try:
            await self._waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()
        return self.answered


class _Withdraws(Protocol):
    """The connection a request was sent ahead on (``Connection``)."""

    async def withdraw(self, rid: wire.RequestId, pending: Pending, reason: str) -> None: ...

    def forget(self, rid: wire.RequestId) -> None: ...


class SentAhead:
    """A request written before its caller reached the connection (``send_ahead``):
    the caller's ``request`` for the same method and params takes it (``taken``) and
    waits for its answer instead of writing its own. One nobody took is withdrawn.

    ``params`` are the call's, as the layers above compare them (``about``); ``sent``
    the request's as written, which a modern session restates ``_meta`` in and the
    connection compares (``take``).

    It may also be answered without a caller at all (``finish``). What the layers above
    hold for it until then (the instance's count of it, the call's registration) hangs
    on it, so that whichever way it ends, each is let go once: a caller that takes it
    over takes each (``adopt``), ``finish`` and ``withdraw`` let go of what is left."""

    __slots__ = ("conn", "held", "method", "params", "pending", "rid", "sent", "taken")

    def __init__(
        self,
        conn: _Withdraws,
        rid: wire.RequestId,
        method: str,
        params: dict[str, Any],
        sent: dict[str, Any] | None = None,
    ) -> None:
        self.conn = conn
        self.rid = rid
        self.method = method
        self.params = params
        self.sent = params if sent is None else sent
        self.pending = Pending(method)
        self.taken = False
        # What a layer holds for the call until it ends, by the layer's key: each is a
        # callable that lets go of it.
        self.held: dict[str, Callable[[], object]] = {}

    def on_answer(self, then: Callable[[dict[str, Any] | Exception], None]) -> None:
        """Tell ``then`` the outcome as it arrives (in the loop's read callback, before
        whoever waits for it wakes): it must not block."""
        self.pending.then = then

    def about(self, method: str, params: dict[str, Any] | None) -> bool:
        """Whether this is a request for ``method`` with ``params`` not taken yet."""
        return not self.taken and method == self.method and params == self.params

    def take(self, conn: object, method: str, params: dict[str, Any] | None) -> bool:
        """Whether this is the request ``conn`` was about to send (``params`` as it
        would write them); taken if so."""
        if conn is not self.conn or self.taken or method != self.method or params != self.sent:
            return False
        self.taken = True
        return True

    def adopt(self, key: str) -> Callable[[], object] | None:
        """What was held for the call under ``key``, now the caller's to let go of."""
        return self.held.pop(key, None)

    def finish(self) -> None:
        """Answered, and nobody will take it: forgotten by its connection, and what
        was held for it let go of."""
        self.taken = True
        self.conn.forget(self.rid)
        self._let_go()

    async def withdraw(self, reason: str) -> None:
        """Nobody took it (the host withdrew its request first): cancelled upstream, and
        an answer that still comes is dropped."""
        self._let_go()
        if self.taken:
            return
        self.taken = True
        await self.conn.withdraw(self.rid, self.pending, reason)

    def _let_go(self) -> None:
        held, self.held = self.held, {}
        for let_go in held.values():
            let_go()


# The request sent ahead for the call this task runs, if one was (``SentAhead``).
SENT_AHEAD: ContextVar[SentAhead | None] = ContextVar("mcpx_sent_ahead", default=None)
