"""One host's session, whatever carries its frames: a stdio host's lines, or the POSTs of
a legacy ``/mcp`` session. The transports read and write bytes; what a frame means to the
session is decided here, once.

Invariants:

- Frames are routed by kind here only. A result or an error answers a question mcpx put
  to the host (``questions``). ``notifications/cancelled`` withdraws the request it names
  (``in_flight``), and every notification is then recorded by ``dispatch``. A request is
  answered by ``dispatch`` under the session's ``Conn``, inside a scope registered by its
  id, in one of the session's slots (``proto.maxConcurrentCalls``); but for a call sent
  ahead (``send_ahead``) whose plain result came at once, which holds its slot and scope
  until then and is answered as ``dispatch`` would answer it, with no task.
- A request the host withdrew is answered nothing.
- Batches exist only in the revisions that have them (``spec.BATCHED``). A batch is
  refused whole, before any element of it is acted on (``batch_refusal``); otherwise its
  answers and notifications are taken in order, then its requests run at once, each in
  line for a slot and each cancellable, and their answers come back as one list in the
  order sent. An element that is no message is answered with an error, traced as sent
  before any revision was judged (as outside a batch: it may have no id).
- A question is put to the host through the transport's ``send`` (its pipe, the POST's
  stream) and traced like every frame mcpx sends.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from mcpx import wire
from mcpx.client import SENT_AHEAD, SentAhead
from mcpx.ops import HostSide
from mcpx.spec import BATCHED
from mcpx.wire import Kind, McpError

from ._conn import Conn
from ._dispatch import dispatch
from ._host_questions import HostQuestions
from ._in_flight import InFlight
from ._send_ahead import Lane, reply_ahead, send_ahead
from ._session_bounds import batch_refusal
from ._slots import Slots

if TYPE_CHECKING:
    from mcpx.config import Settings
    from mcpx.ops import OpContext

__all__ = ["Ask", "HostSession", "Notify"]

log = logging.getLogger("mcpx.server")

_NONE: tuple[None, float] = (None, 0.0)

JSON = dict[str, Any]
# Puts a question (method, params) to the host; its result.
Ask = Callable[[str, JSON], Awaitable[JSON]]
# Sends the host a frame now, ahead of the answer it belongs to.
Notify = Callable[[JSON], None]


@dataclass(eq=False, slots=True)
class HostSession:
    """What one host's session holds beyond its ``Conn``: its requests in flight, the
    questions put to it, its slots, and its batched requests waiting or running."""

    conn: Conn
    slots: Slots
    questions: HostQuestions = field(default_factory=HostQuestions)
    in_flight: InFlight = field(default_factory=InFlight)
    batched: int = 0
    asking: int = 0  # questions put to the host and not answered yet
    # The answers written ahead (``send_ahead``), until ``serve`` compares its own.
    _replied: dict[SentAhead, wire.Frame] = field(default_factory=dict)
    # The requests sent ahead that no task serves yet, by id: each one's way to its task,
    # and when it was sent; the timer that gives the slow ones theirs (``_sweep``).
    _waiting: dict[wire.RequestId, tuple[Callable[[], None], float]] = field(default_factory=dict)
    _sweeper: asyncio.TimerHandle | None = None
    _wait: float = 0.0  # transport.stdioAnswerWait, as the sweeper was last armed
    # What the calls sent ahead are served under and routed by, kept (``_send_ahead``).
    _lane: Lane = field(default_factory=Lane)

    @classmethod
    def open(cls, conn: Conn, settings: Settings) -> HostSession:
        return cls(conn, Slots(int(settings["proto.maxConcurrentCalls"])))

    @property
    def batches(self) -> bool:
        """Whether a JSON-RPC batch is a message here (the session's revision has them)."""
        return self.conn.revision in BATCHED

    def asker(
        self, ctx: OpContext, send: Notify, *, on_ask: Callable[[], None] | None = None
    ) -> Ask:
        """How a request of this session puts an upstream's question to the host: ``send``
        writes the question where the host reads; ``on_ask`` hears of each question."""
        timeout = float(ctx.settings["proto.askTimeout"])

        def traced(frame: JSON) -> None:
            if ctx.trace is not None:
                ctx.trace(self.conn.revision, frame, None)
            send(frame)

        async def ask(method: str, params: JSON) -> JSON:
            self.asking += 1
            if on_ask is not None:
                on_ask()
            try:
                return await self.questions.ask(traced, method, params, timeout)
            finally:
                self.asking -= 1

        return ask

    async def take(self, kind: Kind, frame: wire.Frame, ctx: OpContext) -> None:
        """A frame that is no request: the host's answer to a question, or a notification."""
        if kind in (Kind.RESULT, Kind.ERROR):
            self.questions.answered(frame)
            return
        if frame.get("method") == "notifications/cancelled":
            params = frame.get("params")
            self.in_flight.cancel(params)
            named = params.get("requestId") if isinstance(params, Mapping) else None
            if self._waiting and isinstance(named, str | int):
                waiting = self._waiting.get(named)
                if waiting is not None:  # sent ahead, no task yet: its task withdraws it
                    waiting[0]()
        await dispatch(frame, self.conn, ctx, settings=ctx.settings)

    async def serve(
        self,
        frame: wire.Frame,
        ctx: OpContext,
        *,
        notify: Notify | None = None,
        ask: Ask | None = None,
        headers: Mapping[str, str] | None = None,
        scope: anyio.CancelScope | None = None,
        slotted: bool = True,
        ahead: SentAhead | None = None,
    ) -> wire.Frame | None:
        """The answer to the request ``frame``; None when the host withdrew it, or
        when its answer went to the host ahead (``send_ahead``).

        ``scope``: one ``in_flight.register`` gave already, so that a cancel read before
        this runs finds it. ``slotted``: wait in line for a slot; False when the caller
        holds one already, or the request needs none (``initialize``). ``ahead``: what
        ``send_ahead`` sent for it (its slot is given back here).
        """
        early: wire.Frame | None = None
        with self.in_flight.serving(frame.get("id"), scope) as scope:
            if ahead is not None:
                slotted = True  # taken by send_ahead
            elif slotted and not self.slots.take_nowait():
                await self.slots.take()  # in line; a cancel here withdraws it
            sent = SENT_AHEAD.set(ahead) if ahead is not None else None
            try:
                reply = await dispatch(
                    frame,
                    self.conn,
                    ctx,
                    settings=ctx.settings,
                    headers=headers,
                    notify=notify,
                    ask=ask,
                )
            finally:
                if slotted:
                    self.slots.give()
                if sent is not None and ahead is not None:
                    SENT_AHEAD.reset(sent)
                    await ahead.withdraw("the caller went away")  # unless it was taken
                    early = self._replied.pop(ahead, None)
        if early is not None:
            if early != reply:  # a defect: the host has the first
                log.error("the answer made ahead for %r differs from dispatch's", frame["id"])
            return None
        return None if scope.cancel_called else reply

    def send_ahead(
        self,
        frame: wire.Frame,
        ctx: OpContext,
        send: Notify,
        start: Callable[[anyio.CancelScope, SentAhead], None],
        *,
        notify: Notify | None = None,
        ask: Ask | None = None,
    ) -> bool:
        """The request ``frame`` written upstream now, when it is a ``tools/call`` that
        can be (``_send_ahead``), holding a slot for it; False: nothing was sent (nor a
        slot taken), and the caller serves it as any request.

        Sent, it is answered without a task of its own when the upstream's answer is a
        plain result within ``transport.stdioAnswerWait``: the answer goes to ``send``
        as it arrives, and the call is let go of and recorded as ``dispatch`` would have.
        A call that takes longer gets a task (its timeout, its instance's end, its
        cancellation).
        Anything else needs the request's task: ``start`` is called with the request's
        scope (registered in ``in_flight`` once it is sent) and what was sent, for the
        caller to ``serve`` it with (an error, a withdrawn request, a slow answer, the
        session ending: ``start_waiting``); a plain result that arrives after still goes
        to ``send`` first.
        """
        if not self.slots.free or self.slots.waiting:
            return False
        sent = send_ahead(ctx, self.conn, frame, notify, ask, self._lane)
        if sent is None:
            return False
        call, shape = sent
        ahead = call.sent
        self.slots.take_nowait()  # free, and nobody waits: taken
        request_id = frame["id"]
        # Registered now, before the next line is read: a cancel there finds it.
        scope = self.in_flight.register(request_id)
        waiting = self._waiting

        def fall_back() -> None:
            # The request's task from here on (once).
            if waiting.get(request_id, _NONE)[0] is fall_back:
                del waiting[request_id]
                start(scope, ahead)

        def answered(outcome: JSON | Exception) -> None:
            unstarted = waiting.get(request_id, _NONE)[0] is fall_back
            if scope.cancel_called:
                fall_back()  # withdrawn: answered nothing, by its task
                return
            try:
                made = reply_ahead(ctx, self.conn, request_id, outcome, shape)
            except Exception:  # a defect; in the upstream's read callback, which must go on
                log.exception("the answer to %r could not be made ahead", request_id)
                made = None
            if made is None:
                fall_back()  # dispatch answers it
                return
            reply, result = made
            if unstarted:
                # (Said before the host can read the answer: a test may look then.)
                log.debug("request %r answered ahead, without a task", request_id)
                if ctx.trace is not None:
                    ctx.trace(self.conn.revision, reply, "tools/call")
            send(reply)
            if not unstarted:
                self._replied[ahead] = reply  # its task, running, compares its own
                return
            del waiting[request_id]
            self.slots.give()
            self.in_flight.forget(request_id, scope)
            conn = self.conn
            call.answered(
                result, frame, reply, HostSide(conn.transport, conn.revision, conn.session_id)
            )

        waiting[request_id] = (fall_back, time.monotonic())
        if self._sweeper is None:
            self._wait = float(ctx.settings["transport.stdioAnswerWait"])
            self._sweeper = asyncio.get_running_loop().call_later(self._wait, self._sweep)
        ahead.on_answer(answered)
        return True

    def _sweep(self) -> None:
        """The requests sent ahead ``_wait`` seconds ago or more and not answered yet go
        on in their tasks. One timer a session, not one a call (a timer costs more than
        the rest of a call's wait); it looks again while any wait."""
        self._sweeper = None
        now = time.monotonic()
        for fall_back, sent_at in list(self._waiting.values()):
            if now - sent_at >= self._wait:
                fall_back()
        if self._waiting:
            oldest = min(sent_at for _, sent_at in self._waiting.values())
            wait = max(oldest + self._wait - now, 0.001)
            self._sweeper = asyncio.get_running_loop().call_later(wait, self._sweep)

    def start_waiting(self) -> None:
        """Every request sent ahead and not answered yet goes on in its task now (the
        session ends: its tasks are drained)."""
        for fall_back, _ in list(self._waiting.values()):
            fall_back()

    def batch_refusal(self, decoded: wire.Decoded, settings: Settings) -> McpError | None:
        """Why ``decoded`` is refused whole, or None (``_session_bounds``)."""
        return batch_refusal(decoded, settings, self.batched)

    async def batch(
        self,
        decoded: wire.Decoded,
        ctx: OpContext,
        *,
        notify: Notify | None = None,
        ask: Ask | None = None,
    ) -> list[wire.Frame]:
        """A batch's answers, in order: first the errors of elements that were no message,
        then its requests' answers. Call ``batch_refusal`` first."""
        replies: list[wire.Frame] = [wire.error(i, exc) for i, exc in decoded.errors]
        if ctx.trace is not None:
            for reply in replies:
                # No message, so no revision judged it: traced as the same refusal is
                # outside a batch (stdio, /mcp), as sent before any was. Without an id
                # it is no frame of 2025-03-26, which requires one.
                ctx.trace(None, reply, None)
        for kind, frame in decoded.messages:
            if kind is not Kind.REQUEST:
                await self.take(kind, frame, ctx)
        requests = [frame for kind, frame in decoded.messages if kind is Kind.REQUEST]
        answers: dict[int, wire.Frame] = {}

        async def one(i: int, frame: wire.Frame) -> None:
            reply = await self.serve(frame, ctx, notify=notify, ask=ask)
            if reply is not None:
                answers[i] = reply

        self.batched += len(requests)
        try:
            async with anyio.create_task_group() as tg:
                for i, frame in enumerate(requests):
                    tg.start_soon(one, i, frame)
        finally:
            self.batched -= len(requests)
        return replies + [answers[i] for i in sorted(answers)]
