"""JSON-RPC over one transport: ids, waiting callers, and frames routed by shape.

Era-agnostic: the session above decides what to send and how to cancel. This
module keeps three promises:

- Every caller gets an answer: the result, the upstream's JSON-RPC error, or an
  ``UpstreamError`` (broken, timed out, failed exchange). Never a hang: a
  transport that ends fails everything in flight with its reason.
- Frames are routed by shape, concurrently: a server request is answered in its
  own task, so it can arrive while our request is waiting for it.
- A peer that breaks the protocol (a malformed frame, an answer to an id we
  never sent or already had answered) breaks the connection, loudly.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

from mcpx import wire
from mcpx.transport import Inbound, RequestFailed, Transport, TransportClosed, TransportError

from ._errors import UpstreamBroken, UpstreamError, UpstreamTimeout
from ._pending import SENT_AHEAD, Pending, SentAhead

__all__ = ["Connection", "Unanswered", "open_connection"]

log = logging.getLogger("mcpx.client")

OnRequest = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
OnNotification = Callable[[str, dict[str, Any]], None]
# Every frame sent, with the method a result answers: a tap for logs and tests.
OnSent = Callable[[dict[str, Any], str | None], None]


def _nothing(frame: dict[str, Any], answering: str | None) -> None:
    return None


# Answers to requests we gave up on may still arrive; remember that many ids.
_ABANDONED_MEMORY = 1024


class Unanswered(Exception):
    """Raised by a request handler: send no response at all (a 2026-07-28
    server's request, which the client MUST NOT answer)."""


# How often a call whose budget is paused looks whether the pause ended.
_PAUSE_LOOK: Final = 0.25
# The members of a result frame and nothing else.
_RESULT_KEYS: Final = frozenset({"jsonrpc", "id", "result"})


class Connection:
    """Requests out, answers in, for one upstream connection."""

    def __init__(
        self,
        transport: Transport,
        tg: TaskGroup,
        *,
        name: str,
        on_request: OnRequest,
        on_notification: OnNotification,
        on_sent: OnSent = _nothing,
    ) -> None:
        self.transport = transport
        self._on_sent = on_sent
        self.name = name
        self._tg = tg
        self._on_request = on_request
        self._on_notification = on_notification
        self._ids = wire.RequestIds()
        self._pending: dict[wire.RequestId, Pending] = {}
        self._abandoned: deque[wire.RequestId] = deque(maxlen=_ABANDONED_MEMORY)
        self._answering: dict[wire.RequestId, anyio.CancelScope] = {}
        # Questions of the upstream's being answered now, and the time they paused
        # its calls' budgets (pool.callTimeout pauses while one is pending).
        self._asking = 0
        self._paused = 0.0
        self._pause_start = 0.0
        self.broken: str | None = None
        self.broken_event = anyio.Event()  # set once, when the connection is over
        # Whether cancelling closes the response stream (2026-07-28 HTTP) rather
        # than sending notifications/cancelled; the session sets it per era.
        self.cancel_by_closing = False

    def reserve_id(self) -> wire.RequestId:
        """An id for a request sent later, for callers that must know it first."""
        return self._ids.next()

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        cancellable: bool = True,
        request_id: wire.RequestId | None = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its answer (under ``request_id`` if one
        was reserved with ``reserve_id``).

        Raises:
            McpError: the upstream answered with a JSON-RPC error (``remote`` is True).
            UpstreamTimeout: no answer within ``timeout`` seconds (the request is cancelled).
            UpstreamBroken: the connection is over.
            UpstreamError: this one exchange failed (``__cause__`` says how).
        """
        self._check_open()
        ahead = SENT_AHEAD.get()
        if ahead is not None and request_id is None and ahead.take(self, method, params):
            rid, pending = ahead.rid, ahead.pending  # written already: only the wait is left
        else:
            ahead = None
            rid = request_id if request_id is not None else self._ids.next()
            pending = Pending(method)
            self._pending[rid] = pending
        try:
            if ahead is None:
                await self._send(wire.request(rid, method, params), headers)
            await self._wait(pending, timeout)
        except TimeoutError:
            await self._cancel(rid, f"no answer within {timeout:g}s", cancellable)
            raise UpstreamTimeout(
                f"{self.name} did not answer {method} within {timeout:g}s"
            ) from None
        except anyio.get_cancelled_exc_class():
            await self._cancel(rid, "the caller went away", cancellable)
            raise
        except TransportClosed as exc:
            self._break(str(exc))
            raise UpstreamBroken(f"{self.name}: {exc}") from exc
        finally:
            self._pending.pop(rid, None)
        return self._unwrap(pending)

    def send_ahead(
        self, method: str, params: dict[str, Any], sent: dict[str, Any] | None = None
    ) -> SentAhead | None:
        """Write a request now, before its caller gets here, when the transport can take
        it at once (``send_now``); None: nothing was written. The caller's ``request``
        takes it (``SENT_AHEAD``), or it is withdrawn. ``sent``: the params as written,
        when they are not the call's own (a modern request's ``_meta``)."""
        send_now = getattr(self.transport, "send_now", None)
        if send_now is None or self.broken is not None:
            return None
        ahead = SentAhead(self, self._ids.next(), method, params, sent)
        frame = wire.request(ahead.rid, method, ahead.sent)
        if not send_now(frame):
            return None
        self._pending[ahead.rid] = ahead.pending
        self._on_sent(frame, None)
        return ahead

    async def withdraw(self, rid: wire.RequestId, pending: Pending, reason: str) -> None:
        """Give up on request ``rid`` that nobody waits for (``SentAhead``): cancelled
        upstream unless it was answered already; an answer still to come is dropped."""
        self._pending.pop(rid, None)
        if not pending.answered:
            await self._cancel(rid, reason, cancellable=True)

    def forget(self, rid: wire.RequestId) -> None:
        """Request ``rid``, answered and handed over (``SentAhead.finish``), is no
        longer waited for."""
        self._pending.pop(rid, None)

    async def _wait(self, pending: Pending, timeout: float | None) -> None:
        """Until ``pending`` is answered; ``timeout`` seconds of it, not counting the
        time the upstream's questions were pending (someone was being asked: that is
        not the upstream being slow).

        Raises:
            TimeoutError: the budget ran out.
        """
        if timeout is None:
            await pending.answer(None)
            return
        budget = timeout
        while budget > 0 or self._asking:
            started, paused = anyio.current_time(), self.paused()
            # Paused: look again now and then, as the pause may end at any moment.
            if await pending.answer(_PAUSE_LOOK if self._asking else budget):
                return
            budget -= (anyio.current_time() - started) - (self.paused() - paused)
        raise TimeoutError

    def paused(self) -> float:
        """Seconds so far during which a question of the upstream's was pending."""
        ongoing = anyio.current_time() - self._pause_start if self._asking else 0.0
        return self._paused + ongoing

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification.

        Raises:
            UpstreamBroken: the connection is over.
        """
        self._check_open()
        try:
            await self._send(wire.notification(method, params))
        except TransportClosed as exc:
            self._break(str(exc))
            raise UpstreamBroken(f"{self.name}: {exc}") from exc

    async def _send(
        self,
        frame: dict[str, Any],
        headers: Mapping[str, str] | None = None,
        *,
        answering: str | None = None,
    ) -> None:
        self._on_sent(frame, answering)
        await self.transport.send(frame, headers)

    def _check_open(self) -> None:
        if self.broken is not None:
            raise UpstreamBroken(f"{self.name}: {self.broken}")

    def _unwrap(self, pending: Pending) -> dict[str, Any]:
        outcome = pending.outcome
        if isinstance(outcome, dict):
            return outcome
        if isinstance(outcome, wire.McpError | UpstreamError):
            raise outcome
        if isinstance(outcome, TransportError):
            raise UpstreamError(f"{self.name}: {pending.method} failed: {outcome}") from outcome
        raise UpstreamBroken(f"{self.name}: {self.broken or 'connection ended'}")

    async def _cancel(self, rid: wire.RequestId, reason: str, cancellable: bool) -> None:
        self._abandoned.append(rid)
        if not cancellable or self.broken is not None:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            closed = self.cancel_by_closing and await self.transport.abort(rid)
            if not closed:
                # Nothing is left to cancel on a transport that is over.
                with contextlib.suppress(TransportError):
                    await self._send(
                        wire.notification(
                            "notifications/cancelled", {"requestId": rid, "reason": reason}
                        )
                    )

    # -- inbound -------------------------------------------------------------

    async def run(self) -> None:
        """Route frames until the transport ends: as they arrive, in the transport's own
        task (an answer then wakes its caller directly, with no hop through this one)."""
        self.transport.route(self._inbound)
        while True:
            try:
                inbound = await self.transport.receive()  # only the end, once routed
            except TransportClosed as exc:
                self._break(str(exc))
                return
            self._inbound(inbound)

    def _inbound(self, inbound: Inbound) -> None:
        if isinstance(inbound, RequestFailed):
            self._settle(inbound.request_id, inbound.error)
        else:
            self._route(inbound)

    def _route(self, frame: dict[str, Any]) -> None:
        if frame.keys() == _RESULT_KEYS:  # most of what comes: answered at once
            rid, result = frame["id"], frame["result"]
            pending = self._pending.get(rid) if type(rid) is int or type(rid) is str else None
            if pending is not None and frame["jsonrpc"] == "2.0" and type(result) is dict:
                pending.settle(result)  # (as classify and _answered would have it)
                return
        try:
            kind = wire.classify(frame)
        except wire.McpError as exc:
            self._violation(f"sent a malformed frame ({exc.message})")
            return
        if kind is wire.Kind.REQUEST:
            self._tg.start_soon(self._answer, frame)
        elif kind is wire.Kind.NOTIFICATION:
            self._notified(frame["method"], frame.get("params") or {})
        elif kind is wire.Kind.RESULT:
            self._answered(frame["id"], frame["result"])
        else:
            self._answered(frame.get("id"), wire.McpError.from_error(frame["error"]))

    def _answered(self, rid: wire.RequestId | None, outcome: dict[str, Any] | Exception) -> None:
        if rid is None:
            # An error about a frame the server could not read: nothing waits for it.
            log.warning("%s reported an error on no request: %s", self.name, outcome)
        elif rid in self._pending:
            self._settle(rid, outcome)
        elif rid not in self._abandoned:
            self._violation(f"answered request id {rid!r}, which mcpx never sent or had answered")

    def _settle(self, rid: wire.RequestId, outcome: dict[str, Any] | Exception) -> None:
        pending = self._pending.get(rid)
        if pending is not None:
            pending.settle(outcome)

    def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            scope = self._answering.get(params.get("requestId"))  # type: ignore[arg-type]
            if scope is not None:
                log.info("%s withdrew its request: %s", self.name, params.get("reason", ""))
                scope.cancel()
        self._on_notification(method, params)

    async def _answer(self, frame: dict[str, Any]) -> None:
        rid, method = frame["id"], frame["method"]
        reply: dict[str, Any] | None = None
        asking = method != "ping"
        if asking:
            if not self._asking:
                self._pause_start = anyio.current_time()
            self._asking += 1
        with anyio.CancelScope() as scope:
            self._answering[rid] = scope
            try:
                reply = wire.result(rid, await self._on_request(method, frame.get("params") or {}))
            except wire.McpError as exc:
                reply = wire.error(rid, exc)
            except Unanswered:
                reply = None
            except Exception as exc:  # the boundary: a handler bug must not kill the loop
                log.exception("answering %s from %s failed", method, self.name)
                reply = wire.error(rid, wire.InternalError(f"mcpx could not answer: {exc}"))
            finally:
                self._answering.pop(rid, None)
                if asking:
                    self._asking -= 1
                    if not self._asking:
                        self._paused += anyio.current_time() - self._pause_start
        if reply is not None and not scope.cancelled_caught and self.broken is None:
            try:
                await self._send(reply, answering=method)
            except TransportError as exc:
                self._break(str(exc))

    def _violation(self, what: str) -> None:
        log.error("%s %s", self.name, what)
        self._break(f"protocol violation: the server {what}")
        self._tg.start_soon(self._close_transport)

    async def _close_transport(self) -> None:
        aclose = getattr(self.transport, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()

    def _break(self, reason: str) -> None:
        if self.broken is None:
            self.broken = reason
            self.broken_event.set()
        for pending in list(self._pending.values()):
            pending.settle(UpstreamBroken(f"{self.name}: {self.broken}"))


@asynccontextmanager
async def open_connection(
    transport: Transport,
    *,
    name: str,
    on_request: OnRequest,
    on_notification: OnNotification,
    on_sent: OnSent = _nothing,
) -> AsyncIterator[Connection]:
    """A connection whose receive loop runs for the life of the context."""
    async with anyio.create_task_group() as tg:
        conn = Connection(
            transport,
            tg,
            name=name,
            on_request=on_request,
            on_notification=on_notification,
            on_sent=on_sent,
        )
        tg.start_soon(conn.run)
        try:
            yield conn
        finally:
            # Requests still waiting fail now, not when their budgets run out.
            conn._break("the connection was closed")
            tg.cancel_scope.cancel()
